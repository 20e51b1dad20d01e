// The benchmark's minimal HTTP client: node:http with a keep-alive agent, one function for JSON
// calls and SSE streams. The same client measures the api and the baseline calls to the model
// server, so client costs cancel out in the differences.
import { Agent, request as httpRequest } from 'node:http';

/** Milliseconds on a monotonic clock, comparable across the whole run. */
export const now = () => performance.now();
/** Wall-clock milliseconds of a `now()` reading (to compare with Temporal's event times). */
export const wallOf = (t) => performance.timeOrigin + t;

/** A keep-alive agent for `clients` concurrent requests. */
export function keepAliveAgent(clients) {
  return new Agent({ keepAlive: true, maxSockets: clients, maxFreeSockets: clients, keepAliveMsecs: 30_000 });
}

/**
 * One request (`body`: a string or Buffer as it is, anything else as JSON). Never throws: network errors and timeouts come back as `status: 0` with `error`.
 * With `sse`, the body is read as server-sent events and `firstTokenMs` is the time from sending to
 * the first event for which `sse.isToken(event)` holds.
 * With `signal`, an abort ends the request at once (`aborted: true`).
 * @returns {Promise<{ status: number, ms: number, body: string, headers: Record<string, unknown>, firstTokenMs?: number, error?: string, aborted?: boolean, startedAt: number, endedAt: number }>}
 */
export function send({ agent, method = 'POST', url, headers = {}, body, timeoutMs = 30_000, sse, signal }) {
  return new Promise((resolve) => {
    // A string or Buffer is sent as it is (a Buffer costs no encoding per send); anything else as JSON.
    const payload =
      body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const startedAt = now();
    let settled = false;
    let firstTokenMs;
    const onAbort = () => req.destroy(new Error('aborted: the measurement window ended'));
    const finish = (result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      const endedAt = now();
      resolve({ ms: endedAt - startedAt, startedAt, endedAt, firstTokenMs, body: '', headers: {}, ...result });
    };
    const req = httpRequest(
      url,
      {
        method,
        agent,
        headers: {
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks = [];
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          chunks.push(chunk);
          if (!sse || firstTokenMs !== undefined) return;
          pending += chunk;
          let cut;
          while ((cut = pending.search(/\r?\n\r?\n/)) >= 0) {
            const block = pending.slice(0, cut);
            pending = pending.slice(cut).replace(/^\r?\n\r?\n/, '');
            const event = parseSseBlock(block);
            if (event && sse.isToken(event)) {
              firstTokenMs = now() - startedAt;
              break;
            }
          }
        });
        res.on('end', () => finish({ status: res.statusCode ?? 0, body: chunks.join(''), headers: res.headers }));
        res.on('error', (e) => finish({ status: 0, error: e.message }));
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`timeout after ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (e) => finish({ status: 0, error: e.message, aborted: signal?.aborted === true }));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** One SSE block as `{ event, data }` (data parsed as JSON when it is JSON). */
export function parseSseBlock(block) {
  let event = 'message';
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0 && event === 'message') return undefined;
  const text = data.join('\n');
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { event, text, json };
}

/** The JSON body of a response, or undefined. */
export function jsonOf(response) {
  try {
    return JSON.parse(response.body);
  } catch {
    return undefined;
  }
}
