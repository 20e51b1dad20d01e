import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer: text and/or tool calls, or an error status; `delayMs` before answering. */
export interface ScriptedReply {
  content?: string;
  /** `id`: the call's id as the provider gives it (default: a fresh one per call); some providers
   * number the calls of each turn from 0, so ids repeat across turns. */
  toolCalls?: { id?: string; name: string; arguments: Record<string, unknown> }[];
  /** An HTTP error status (4xx/5xx) answered with the protocol's error body. */
  status?: number;
  errorMessage?: string;
  delayMs?: number;
  usage?: { input: number; output: number };
  /** Streaming only: cut the connection after this many events, as a provider failing mid-stream. */
  failAfterEvents?: number;
  /** Streaming only: after this many events, send nothing more for `stallMs` (unset: until the
   * client goes away), as a model still "thinking" in the middle of its answer. */
  stallAfterEvents?: number;
  stallMs?: number;
}

/** A request the server received. */
export interface RecordedRequest {
  path: string;
  headers: Record<string, string | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON paths
  body: any;
}

/** A scripted language-model server on loopback speaking the OpenAI and Anthropic protocols. */
export interface ModelServer {
  /** Base URL for the openai adapter (`${origin}/v1`). */
  url: string;
  /** Base URL for the anthropic adapter. */
  origin: string;
  requests: RecordedRequest[];
  /** Queues replies; when the queue is empty the server echoes the last user message. */
  reply(...replies: ScriptedReply[]): void;
  /** Forgets the queued replies (e.g. of a request that was refused before it called the model). */
  clearReplies(): void;
  /** Answers 401 (in the protocol's error shape) to any other key. */
  requireKey(key: string | undefined): void;
  close(): Promise<void>;
}

type Protocol = 'openai' | 'anthropic';

/** Starts a model server on 127.0.0.1 with an ephemeral port. */
export async function startModelServer(): Promise<ModelServer> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let requiredKey: string | undefined;
  let callCounter = 0;

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const protocol: Protocol | undefined =
      req.method === 'POST' && (path === '/v1/chat/completions' || path === '/chat/completions')
        ? 'openai'
        : req.method === 'POST' && path === '/v1/messages'
          ? 'anthropic'
          : undefined;
    const raw = await readBody(req);
    let body: unknown;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      body = raw;
    }
    requests.push({ path, headers: flatHeaders(req), body });
    if (!protocol)
      return sendJson(res, 404, { error: { message: `no route for ${req.method} ${path}`, type: 'not_found' } });
    if (!isObject(body)) return sendError(res, protocol, 400, 'the body must be a JSON object');
    // Anthropic's Messages API refuses a conversation that does not open with the user's message.
    const first = Array.isArray(body['messages']) ? (body['messages'] as unknown[])[0] : undefined;
    if (protocol === 'anthropic' && isObject(first) && first['role'] !== 'user')
      return sendError(res, protocol, 400, 'messages: first message must use the "user" role');

    if (requiredKey !== undefined) {
      const given =
        protocol === 'openai'
          ? /^Bearer (.*)$/i.exec(req.headers.authorization ?? '')?.[1]
          : headerValue(req.headers['x-api-key']);
      if (given !== requiredKey) {
        // Real providers echo (part of) the key they got: the adapters must redact it.
        const message =
          protocol === 'openai'
            ? `Incorrect API key provided: ${given ?? ''}. You can find your API key in your dashboard.`
            : `invalid x-api-key ${given ?? ''}`.trim();
        return sendError(res, protocol, 401, message);
      }
    }

    const reply = queue.shift() ?? { content: `You said: "${lastUserText(protocol, body)}"` };
    if (reply.delayMs) await sleep(reply.delayMs);
    if (reply.status !== undefined && reply.status >= 400)
      return sendError(res, protocol, reply.status, reply.errorMessage ?? `scripted error ${reply.status}`);

    const model = typeof body['model'] === 'string' ? body['model'] : 'scripted-server';
    const content = reply.content ?? '';
    const calls = (reply.toolCalls ?? []).map((c) => ({
      ...c,
      id: c.id ?? `${protocol === 'openai' ? 'call' : 'toolu'}_srv_${++callCounter}`,
    }));
    const usage = reply.usage ?? {
      input: wordCount(JSON.stringify(body['messages'] ?? '')),
      output: wordCount(content) + calls.length,
    };
    const answer: Answer = { model, content, calls, usage };
    if (body['stream'] === true) {
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      res.flushHeaders();
      const events =
        protocol === 'openai'
          ? openAiEvents(answer, isObject(body['stream_options']) && body['stream_options']['include_usage'] === true)
          : anthropicEvents(answer);
      for (const [i, event] of events.entries()) {
        if (res.destroyed) return;
        if (reply.failAfterEvents !== undefined && i >= reply.failAfterEvents) {
          res.destroy();
          return;
        }
        if (reply.stallAfterEvents !== undefined && i === reply.stallAfterEvents) {
          if (reply.stallMs === undefined) {
            await new Promise((resolve) => res.once('close', resolve));
            return;
          }
          await sleep(reply.stallMs);
        }
        res.write(event);
        // A macrotask between writes sends each event in its own TCP segment: a real stream.
        await new Promise((resolve) => setImmediate(resolve));
      }
      res.end();
      return;
    }
    sendJson(res, 200, protocol === 'openai' ? openAiBody(answer) : anthropicBody(answer));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, {
          error: { message: e instanceof Error ? e.message : 'model server failed', type: 'server_error' },
        });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: `${origin}/v1`,
    origin,
    requests,
    reply: (...replies) => void queue.push(...replies),
    clearReplies: () => void queue.splice(0),
    requireKey: (key) => {
      requiredKey = key;
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
    },
  };
}

export interface Answer {
  model: string;
  content: string;
  calls: { id: string; name: string; arguments: Record<string, unknown> }[];
  usage: { input: number; output: number };
}

export function openAiBody(a: Answer): unknown {
  return {
    id: 'chatcmpl-scripted',
    object: 'chat.completion',
    created: 0,
    model: a.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: a.calls.length > 0 && a.content === '' ? null : a.content,
          ...(a.calls.length > 0
            ? {
                tool_calls: a.calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: JSON.stringify(c.arguments) },
                })),
              }
            : {}),
        },
        finish_reason: a.calls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: {
      prompt_tokens: a.usage.input,
      completion_tokens: a.usage.output,
      total_tokens: a.usage.input + a.usage.output,
    },
  };
}

export function openAiEvents(a: Answer, includeUsage: boolean): string[] {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created: 0, model: a.model, choices, ...extra })}\n\n`;
  const delta = (d: Record<string, unknown>, finish: string | null = null): string =>
    chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const events = [delta({ role: 'assistant', content: '' })];
  for (const word of words(a.content)) events.push(delta({ content: word }));
  a.calls.forEach((c, index) => {
    events.push(
      delta({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }),
    );
    for (const piece of halves(JSON.stringify(c.arguments)))
      events.push(delta({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  events.push(delta({}, a.calls.length > 0 ? 'tool_calls' : 'stop'));
  if (includeUsage)
    events.push(
      chunk([], {
        usage: {
          prompt_tokens: a.usage.input,
          completion_tokens: a.usage.output,
          total_tokens: a.usage.input + a.usage.output,
        },
      }),
    );
  events.push('data: [DONE]\n\n');
  return events;
}

function anthropicBody(a: Answer): unknown {
  return {
    id: 'msg_scripted',
    type: 'message',
    role: 'assistant',
    model: a.model,
    content: [
      ...(a.content ? [{ type: 'text', text: a.content }] : []),
      ...a.calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments })),
    ],
    stop_reason: a.calls.length > 0 ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: a.usage.input, output_tokens: a.usage.output },
  };
}

function anthropicEvents(a: Answer): string[] {
  const event = (type: string, data: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const events = [
    event('message_start', {
      message: {
        id: 'msg_scripted',
        type: 'message',
        role: 'assistant',
        model: a.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: a.usage.input, output_tokens: 1 },
      },
    }),
    event('ping', {}),
  ];
  let index = 0;
  if (a.content) {
    events.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const word of words(a.content))
      events.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: word } }));
    events.push(event('content_block_stop', { index }));
    index++;
  }
  for (const c of a.calls) {
    events.push(
      event('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }),
    );
    for (const piece of halves(JSON.stringify(c.arguments)))
      events.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }));
    events.push(event('content_block_stop', { index }));
    index++;
  }
  events.push(
    event('message_delta', {
      delta: { stop_reason: a.calls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: a.usage.output },
    }),
  );
  events.push(event('message_stop', {}));
  return events;
}

function sendError(res: ServerResponse, protocol: Protocol, status: number, message: string): void {
  if (protocol === 'openai') {
    const type =
      status === 401
        ? 'invalid_request_error'
        : status === 429
          ? 'requests'
          : status >= 500
            ? 'server_error'
            : 'invalid_request_error';
    sendJson(res, status, { error: { message, type, param: null, code: status === 401 ? 'invalid_api_key' : null } });
    return;
  }
  const type =
    status === 401
      ? 'authentication_error'
      : status === 429
        ? 'rate_limit_error'
        : status === 529
          ? 'overloaded_error'
          : status >= 500
            ? 'api_error'
            : 'invalid_request_error';
  sendJson(res, status, { type: 'error', error: { type, message } });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function flatHeaders(req: IncomingMessage): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, headerValue(value)]));
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// The text of the last user message, whichever protocol's shape it has.
function lastUserText(protocol: Protocol, body: Record<string, unknown>): string {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!isObject(m) || m['role'] !== 'user') continue;
    if (typeof m['content'] === 'string') return m['content'];
    // Anthropic tool results are user turns too; echo only real text.
    if (protocol === 'anthropic' && Array.isArray(m['content'])) {
      const text = (m['content'] as unknown[])
        .filter((b) => isObject(b) && b['type'] === 'text')
        .map((b) => String((b as Record<string, unknown>)['text']));
      if (text.length > 0) return text.join('\n');
    }
  }
  return '';
}

export function words(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

export function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)].filter((p) => p !== '');
}

function wordCount(text: string): number {
  return text.split(/\s+/).filter((w) => w !== '').length;
}
