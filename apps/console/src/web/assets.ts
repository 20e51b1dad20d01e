// The console's stylesheet and its one small script, served from memory at /static/ (same origin,
// so the Content-Security-Policy allows no inline script or style at all).

export const CONSOLE_CSS = `
:root { color-scheme: light; --fg: #1b1f24; --muted: #4d5661; --line: #d0d7de; --accent: #0b5cad; --bad: #a4141b; --good: #116329; --bg: #ffffff; --soft: #f4f6f8; --on-accent: #ffffff; --field: #8c959f; }
@media (prefers-color-scheme: dark) {
  :root { color-scheme: dark; --fg: #e6edf3; --muted: #a5afba; --line: #3d444d; --accent: #79b8ff; --bad: #ff8e8a; --good: #6bdc7b; --bg: #0d1117; --soft: #161b22; --on-accent: #0d1117; --field: #7d8590; }
  .chart svg { background: #ffffff; border-radius: 4px; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
header.top { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; padding: .6rem 1rem; border-bottom: 1px solid var(--line); background: var(--soft); }
header.top .brand { font-weight: 700; color: var(--fg); text-decoration: none; }
header.top form { margin: 0 0 0 auto; }
nav.project { display: flex; flex-wrap: wrap; gap: .25rem .9rem; padding: .5rem 1rem; border-bottom: 1px solid var(--line); }
nav.project a[aria-current="page"] { font-weight: 700; color: var(--fg); }
main { padding: 1rem; max-width: 72rem; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: .2rem 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: .75rem; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .75rem; }
.card .figure { font-size: 1.6rem; font-weight: 700; }
.table-wrap { overflow-x: auto; position: relative; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; word-break: break-all; }
form.stack { display: grid; gap: .6rem; max-width: 32rem; }
form.inline { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
label { display: grid; gap: .2rem; font-weight: 600; }
input, select, textarea { font: inherit; padding: .45rem .5rem; border: 1px solid var(--field); border-radius: 4px; min-width: 0; color: var(--fg); background: var(--bg); }
button, .button { font: inherit; padding: .45rem .9rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: var(--on-accent); cursor: pointer; text-decoration: none; display: inline-block; }
button.secondary { background: var(--bg); color: var(--accent); }
button.danger, .button.danger { background: var(--bad); border-color: var(--bad); color: var(--on-accent); }
.notice { border-left: 4px solid var(--accent); background: var(--soft); padding: .6rem .8rem; margin: 0 0 1rem; }
.error { border-left-color: var(--bad); }
.secret { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.status-completed { color: var(--good); }
.status-failed, .status-expired, .status-cancelled { color: var(--bad); }
.muted { color: var(--muted); }
.chart svg { max-width: 100%; height: auto; }
ol.timeline { padding-left: 1.2rem; }
ol.attempts { margin: 0; padding-left: 1.1rem; }
ol.conversation { list-style: none; padding: 0; display: grid; gap: .5rem; }
ol.conversation li { border-left: 4px solid var(--line); padding-left: .6rem; }
ol.conversation li.message-user { border-left-color: var(--accent); }
ol.conversation pre { margin: .2rem 0 0; }
fieldset { border: 1px solid var(--line); border-radius: 4px; display: grid; gap: .2rem; min-width: 0; }
fieldset label { font-weight: 400; }
legend { font-weight: 600; }
ol.timeline li { margin-bottom: .6rem; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--soft); padding: .6rem; border-radius: 4px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
@media (max-width: 40rem) { main { padding: .75rem; } th, td { padding: .35rem .3rem; } }
`;

export const CONSOLE_JS = `
// Times in the reader's own zone: the page says UTC (what a browser without JavaScript keeps);
// each <time datetime> is rewritten to the browser's local time, its UTC text kept as a tooltip.
const localTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
  hourCycle: 'h23', timeZoneName: 'short',
});
function showLocalTimes() {
  for (const el of document.querySelectorAll('time[datetime]')) {
    const at = new Date(el.getAttribute('datetime'));
    if (Number.isNaN(at.getTime()) || el.dataset.local) continue;
    el.title = el.textContent;
    el.textContent = localTime.format(at);
    el.dataset.local = 'yes';
  }
}
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', showLocalTimes);
else showLocalTimes();
document.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-copy]');
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = 'Copied';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    button.textContent = 'Selected: press Ctrl-C';
  }
});
`;
