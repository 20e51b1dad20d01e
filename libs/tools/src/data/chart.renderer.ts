import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Limits of one rendering. */
export interface ChartRenderLimits {
  readonly timeoutMs: number;
  readonly memoryMb: number;
  readonly maxSvgBytes: number;
}

/** What the renderer reports. */
export type ChartRenderResult =
  | { readonly ok: true; readonly svg: string; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly error: string };

// Runs in a separate Node process: a spec can make Vega compute without bound (sequences,
// flatten, huge transforms), and only a child process can be killed, or run out of memory,
// without taking the worker down. Every loader method refuses, so no spec reaches a network or file.
const RENDER_SCRIPT = `
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const refused = [];
const refuse = async (uri) => { refused.push(String(uri)); throw new Error('external resources are not allowed'); };
const loader = { load: refuse, sanitize: refuse, http: refuse, file: refuse };
const warnings = [];
let level = 2;
const logger = {
  level(value) { if (value === undefined) return level; level = value; return logger; },
  error(...args) { warnings.push('error: ' + args.map(String).join(' ')); return logger; },
  warn(...args) { warnings.push(args.map(String).join(' ')); return logger; },
  info() { return logger; },
  debug() { return logger; },
};
const reply = (result) => new Promise((resolve) => process.stdout.write(JSON.stringify(result), () => resolve()));
try {
  const vega = await import(input.vegaUrl);
  const vegaLite = await import(input.vegaLiteUrl);
  let compiled;
  try {
    compiled = vegaLite.compile(input.spec, { logger }).spec;
  } catch (error) {
    throw new Error('Vega-Lite could not compile the spec: ' + String((error && error.message) || error));
  }
  const view = new vega.View(vega.parse(compiled), { renderer: 'none', loader, logger, logLevel: vega.Warn });
  const svg = await view.toSVG();
  view.finalize();
  await reply(refused.length > 0 ? { ok: false, refused } : { ok: true, svg, warnings: warnings.slice(0, 20) });
} catch (error) {
  await reply({ ok: false, error: String((error && error.message) || error), refused });
}
`;

let modules: { vegaUrl: string; vegaLiteUrl: string; readRoot: string } | undefined;

function vegaModules(): { vegaUrl: string; vegaLiteUrl: string; readRoot: string } {
  if (!modules) {
    const require = createRequire(import.meta.url);
    const vega = require.resolve('vega');
    const vegaLite = require.resolve('vega-lite');
    const marker = `${path.sep}node_modules${path.sep}`;
    const root = vega.slice(0, vega.lastIndexOf(marker) + marker.length - 1);
    modules = { vegaUrl: pathToFileURL(vega).href, vegaLiteUrl: pathToFileURL(vegaLite).href, readRoot: root };
  }
  return modules;
}

function permissionFlag(): string {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 13) ? '--permission' : '--experimental-permission';
}

/** Renders a Vega-Lite spec to SVG in a child process with a memory cap, a time limit and read access to node_modules only. */
export function renderChartSvg(
  spec: unknown,
  limits: ChartRenderLimits,
  signal?: AbortSignal,
): Promise<ChartRenderResult> {
  const { vegaUrl, vegaLiteUrl, readRoot } = vegaModules();
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        `--max-old-space-size=${limits.memoryMb}`,
        permissionFlag(),
        `--allow-fs-read=${readRoot}${path.sep}*`,
        '--no-warnings',
        '--input-type=module',
        '-e',
        RENDER_SCRIPT,
      ],
      // No inherited environment: nothing secret reaches the child, and no NODE_OPTIONS changes it.
      { cwd: tmpdir(), env: {}, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let settled = false;
    let stdout = '';
    let stderr = '';
    let killedFor: string | undefined;
    const finish = (result: ChartRenderResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCancel);
      resolve(result);
    };
    const kill = (reason: string): void => {
      killedFor ??= reason;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(
      () => kill(`rendering took longer than the ${limits.timeoutMs} ms limit`),
      limits.timeoutMs,
    );
    const onCancel = (): void => kill('rendering was cancelled');
    signal?.addEventListener('abort', onCancel, { once: true });

    const maxStdout = limits.maxSvgBytes * 2 + 64 * 1024;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.length > maxStdout) kill(`the SVG is larger than the ${limits.maxSvgBytes}-byte limit`);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    child.on('error', (error) => finish({ ok: false, error: `the chart renderer could not start: ${error.message}` }));
    child.on('close', (code, exitSignal) => {
      if (killedFor) return finish({ ok: false, error: killedFor });
      if (code !== 0) {
        const oom = /heap out of memory|Allocation failed/i.test(stderr);
        return finish({
          ok: false,
          error: oom
            ? `rendering needed more than the ${limits.memoryMb} MB memory limit`
            : `the chart renderer stopped (${exitSignal ?? `exit code ${code}`})`,
        });
      }
      finish(parseReply(stdout, limits.maxSvgBytes));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(JSON.stringify({ spec, vegaUrl, vegaLiteUrl }));
  });
}

function parseReply(stdout: string, maxSvgBytes: number): ChartRenderResult {
  let reply: { ok?: unknown; svg?: unknown; warnings?: unknown; error?: unknown; refused?: unknown };
  try {
    reply = JSON.parse(stdout) as typeof reply;
  } catch {
    return { ok: false, error: 'the chart renderer gave no usable answer' };
  }
  const refused = Array.isArray(reply.refused) ? reply.refused.map(String) : [];
  if (refused.length > 0) {
    return {
      ok: false,
      error: `the chart tried to load ${refused
        .slice(0, 3)
        .map((u) => `"${u.slice(0, 200)}"`)
        .join(', ')}; images, remote data and links are not allowed`,
    };
  }
  if (reply.ok === true && typeof reply.svg === 'string') {
    if (Buffer.byteLength(reply.svg, 'utf8') > maxSvgBytes)
      return { ok: false, error: `the SVG is larger than the ${maxSvgBytes}-byte limit` };
    const warnings = Array.isArray(reply.warnings) ? reply.warnings.map(String) : [];
    return { ok: true, svg: reply.svg, warnings };
  }
  return { ok: false, error: typeof reply.error === 'string' ? reply.error : 'rendering failed' };
}
