// Prints a benchmark result file's table as Markdown (for docs/performance.md):
//   node scripts/bench/to-markdown.mjs bench/results/<timestamp>.json
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node scripts/bench/to-markdown.mjs bench/results/<timestamp>.json\n');
  process.exit(2);
}
const { meta, table } = JSON.parse(readFileSync(file, 'utf8'));
const cols = [
  ['scenario', 'scenario'],
  ['clients', 'clients'],
  ['n', 'n'],
  ['measured', 'measured p50 / p95 / p99'],
  ['baseline', 'baseline p50 / p95 / p99'],
  ['vs', 'vs baseline'],
  ['errors', 'errors'],
  ['others', 'others'],
];
const cell = (s) => String(s ?? '').replace(/\|/g, '\\|');
const lines = [
  `${meta.mode} run of ${meta.date}, commit ${meta.commit}${meta.dirty ? ' + uncommitted changes' : ''}, ${meta.cpus} x ${meta.cpuModel}, Node ${meta.node}, ${meta.durationS} s; ` +
    `other processes used ${Math.round((meta.otherLoad?.otherShare ?? 0) * 100)}% of the CPU during the scenarios.`,
  '',
  `| ${cols.map(([, h]) => h).join(' | ')} |`,
  `|${cols.map(([k]) => (k === 'clients' || k === 'n' ? '---:' : '---')).join('|')}|`,
  ...table.map((row) => `| ${cols.map(([k]) => cell(row[k])).join(' | ')} |`),
];
process.stdout.write(`${lines.join('\n')}\n`);
