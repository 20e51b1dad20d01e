// A scripted OpenAI-compatible model server for `npm run bench`: answers
// POST {/v1,}/chat/completions after a fixed latency, as JSON or as an SSE stream, with a fixed
// short reply and usage. When the request offers tools and holds no tool message yet, the reply is
// a call to the first tool; otherwise it is text. Loopback only.
//
//   node scripts/bench/model-server.mjs --latency-ms 200 [--port 0] [--port-file FILE]
//
// BENCH_MODEL_KEY, when set, is the only accepted bearer key (401 otherwise): it proves the api
// passes the project's stored key. The server stops on SIGTERM/SIGINT, and by itself after
// --max-lifetime-s (default 3600) so a crashed harness cannot leave it behind for long.
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    'latency-ms': { type: 'string', default: '0' },
    port: { type: 'string', default: '0' },
    'port-file': { type: 'string' },
    'max-lifetime-s': { type: 'string', default: '3600' },
  },
});
const latencyMs = Number(args['latency-ms']);
const maxLifetimeS = Number(args['max-lifetime-s']);
if (!Number.isFinite(latencyMs) || latencyMs < 0)
  throw new Error(`--latency-ms must be >= 0, got ${args['latency-ms']}`);
const requiredKey = process.env.BENCH_MODEL_KEY || undefined;

/** The fixed reply, split into the pieces a stream sends. */
const REPLY_PIECES = ['This is ', 'a fixed ', 'benchmark ', 'reply.'];
const REPLY = REPLY_PIECES.join('');
const COMPLETION_TOKENS = 6;

let served = 0;
let callCounter = 0;

const sleep = (ms) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      // Bounded: the api never sends more than a few KB here.
      if (size > 4 * 1024 * 1024) req.destroy(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** What the model answers: a call to the first offered tool, or the fixed text. */
function answerFor(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const promptTokens = Math.max(1, Math.ceil(JSON.stringify(messages).length / 4));
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: COMPLETION_TOKENS,
    total_tokens: promptTokens + COMPLETION_TOKENS,
  };
  const hasToolMessage = messages.some((m) => m && m.role === 'tool');
  const toolName = tools[0]?.function?.name;
  if (toolName && !hasToolMessage) {
    const call = {
      id: `call_bench_${++callCounter}`,
      type: 'function',
      function: { name: toolName, arguments: '{"query":"bench"}' },
    };
    return { content: null, toolCalls: [call], usage };
  }
  return { content: REPLY, toolCalls: [], usage };
}

function completionBody(model, a) {
  return {
    id: `chatcmpl-bench-${served}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: a.content, ...(a.toolCalls.length ? { tool_calls: a.toolCalls } : {}) },
        finish_reason: a.toolCalls.length ? 'tool_calls' : 'stop',
      },
    ],
    usage: a.usage,
  };
}

function* streamChunks(model, a, includeUsage) {
  const base = {
    id: `chatcmpl-bench-${served}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
  };
  if (a.toolCalls.length) {
    const calls = a.toolCalls.map((c, index) => ({ index, ...c }));
    yield {
      ...base,
      choices: [{ index: 0, delta: { role: 'assistant', content: null, tool_calls: calls }, finish_reason: null }],
    };
    yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] };
  } else {
    for (const [i, piece] of REPLY_PIECES.entries()) {
      yield {
        ...base,
        choices: [
          {
            index: 0,
            delta: i === 0 ? { role: 'assistant', content: piece } : { content: piece },
            finish_reason: null,
          },
        ],
      };
    }
    yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };
  }
  if (includeUsage) yield { ...base, choices: [], usage: a.usage };
}

async function handle(req, res) {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/healthz')
    return sendJson(res, 200, { status: 'ok', served, latency_ms: latencyMs });
  if (req.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/chat/completions')) {
    return sendJson(res, 404, { error: { message: `no route for ${req.method} ${path}`, type: 'not_found' } });
  }
  const raw = await readBody(req);
  if (requiredKey !== undefined && req.headers.authorization !== `Bearer ${requiredKey}`) {
    return sendJson(res, 401, {
      error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
    });
  }
  let body;
  try {
    body = JSON.parse(raw);
  } catch {
    return sendJson(res, 400, { error: { message: 'the body is not JSON', type: 'invalid_request_error' } });
  }
  if (typeof body !== 'object' || body === null)
    return sendJson(res, 400, { error: { message: 'the body must be an object', type: 'invalid_request_error' } });
  served++;
  const model = typeof body.model === 'string' && body.model ? body.model : 'bench';
  const answer = answerFor(body);
  if (body.stream === true) {
    // Headers at once, the first chunk after the latency: a provider's time to first token.
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.flushHeaders();
    await sleep(latencyMs);
    const includeUsage = body.stream_options?.include_usage === true;
    for (const chunk of streamChunks(model, answer, includeUsage)) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      // A macrotask between writes sends each chunk in its own TCP segment, like a real stream.
      await new Promise((resolve) => setImmediate(resolve));
    }
    res.end('data: [DONE]\n\n');
    return;
  }
  await sleep(latencyMs);
  sendJson(res, 200, completionBody(model, answer));
}

const server = createServer((req, res) => {
  handle(req, res).catch((e) => {
    if (!res.headersSent)
      sendJson(res, 500, {
        error: { message: e instanceof Error ? e.message : 'model server failed', type: 'server_error' },
      });
    else res.destroy();
  });
});
// Longer than any client's keep-alive, so the server never closes a socket a client is reusing.
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

function stop() {
  server.closeAllConnections();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setTimeout(stop, maxLifetimeS * 1000).unref();

server.listen(Number(args.port), '127.0.0.1', () => {
  const { port } = server.address();
  if (args['port-file']) writeFileSync(args['port-file'], `${port}\n`);
  process.stdout.write(`model server on http://127.0.0.1:${port}/v1, latency ${latencyMs} ms\n`);
});
