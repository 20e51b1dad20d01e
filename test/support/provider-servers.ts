import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';
import { halves, openAiBody, openAiEvents, readBody, words, type Answer, type ScriptedReply } from './model-server.js';

/**
 * Scripted servers on loopback speaking the wire formats of the providers that
 * test/support/model-server.ts does not (it speaks OpenAI Chat Completions and Anthropic Messages),
 * written from each provider's documented API: the Gemini API (generateContent and
 * streamGenerateContent over SSE), Mistral's chat completions, Azure OpenAI (the v1 API and
 * deployment URLs with `api-version`), and the Bedrock Converse API (converse-stream in AWS's binary
 * event-stream encoding). Replies are scripted as for the model server.
 */
export type WireProtocol = 'google' | 'mistral' | 'azure-openai' | 'bedrock';

export interface ProviderRequest {
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON paths
  body: any;
}

export interface ProviderServer {
  protocol: WireProtocol;
  /** What `project set-model --base-url` takes for this provider. */
  baseUrl: string;
  origin: string;
  requests: ProviderRequest[];
  /** Requests whose connection the client closed before the answer was complete. */
  readonly abortedRequests: number;
  reply(...replies: ScriptedReply[]): void;
  /** Answers 401 (403 for bedrock, as AWS does) in the protocol's error shape to any other key
   * (bedrock: any other Bedrock API key or AWS access key id). */
  requireKey(key: string | undefined): void;
  close(): Promise<void>;
}

interface Route {
  model: string;
  stream: boolean;
}

export async function startProviderServer(protocol: WireProtocol): Promise<ProviderServer> {
  const queue: ScriptedReply[] = [];
  const requests: ProviderRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let requiredKey: string | undefined;
  let callCounter = 0;
  let aborted = 0;

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let finished = false;
    res.once('finish', () => (finished = true));
    res.once('close', () => {
      if (!finished) aborted++;
    });
    const raw = await readBody(req);
    let body: unknown;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      body = raw;
    }
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]),
    );
    requests.push({ path: url.pathname, query: url.searchParams, headers, body });
    const route = req.method === 'POST' ? routeOf(protocol, url) : undefined;
    if (!route) return sendError(res, protocol, 404, `no route for ${req.method} ${url.pathname}${url.search}`);
    if (!isObject(body)) return sendError(res, protocol, 400, 'the body must be a JSON object');

    if (requiredKey !== undefined) {
      const given = presentedKey(protocol, req, url);
      // Providers echo (part of) the credential they got: the adapters must redact it.
      if (given !== requiredKey)
        return sendError(
          res,
          protocol,
          protocol === 'bedrock' ? 403 : 401,
          `The key ${given ?? '(none)'} is not valid for this resource.`,
        );
    }

    const reply = queue.shift() ?? { content: `You said: "${lastUserText(protocol, body)}"` };
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return;
    if (reply.status !== undefined && reply.status >= 400)
      return sendError(res, protocol, reply.status, reply.errorMessage ?? `scripted error ${reply.status}`);

    const model = route.model || (typeof body['model'] === 'string' ? body['model'] : 'scripted-server');
    const content = reply.content ?? '';
    const calls = (reply.toolCalls ?? []).map((c) => ({ ...c, id: callId(protocol, ++callCounter) }));
    const usage = reply.usage ?? { input: 10, output: words(content).length + calls.length };
    const answer: Answer = { model, content, calls, usage };
    // Google and Bedrock name the stream in the path; the OpenAI-like protocols in the body.
    if (!route.stream && body['stream'] !== true) return sendJson(res, 200, bodyOf(protocol, answer));

    const binary = protocol === 'bedrock';
    res.writeHead(200, {
      'content-type': binary ? 'application/vnd.amazon.eventstream' : 'text/event-stream',
      'cache-control': 'no-cache',
    });
    res.flushHeaders();
    const events = eventsOf(protocol, answer);
    for (const [i, event] of events.entries()) {
      if (res.destroyed) return;
      if (reply.failAfterEvents !== undefined && i >= reply.failAfterEvents) {
        res.destroy();
        return;
      }
      res.write(event);
      // A macrotask between writes sends each event in its own TCP segment: a real stream.
      await new Promise((resolve) => setImmediate(resolve));
    }
    res.end();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendError(res, protocol, 500, e instanceof Error ? e.message : 'provider server failed');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const baseUrl = {
    google: `${origin}/v1beta`,
    mistral: `${origin}/v1`,
    'azure-openai': `${origin}/openai`,
    bedrock: origin,
  }[protocol];
  return {
    protocol,
    baseUrl,
    origin,
    requests,
    get abortedRequests() {
      return aborted;
    },
    reply: (...replies) => void queue.push(...replies),
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

function routeOf(protocol: WireProtocol, url: URL): Route | undefined {
  const path = url.pathname;
  switch (protocol) {
    case 'google': {
      const m = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
      if (!m) return undefined;
      const stream = m[2] === 'streamGenerateContent';
      if (stream && url.searchParams.get('alt') !== 'sse') return undefined;
      return { model: decodeURIComponent(m[1]!), stream };
    }
    case 'mistral':
      return path === '/v1/chat/completions' ? { model: '', stream: false } : undefined;
    case 'azure-openai': {
      // The v1 API, or a deployment's URL, which needs a dated api-version.
      if (path === '/openai/v1/chat/completions') return { model: '', stream: false };
      const m = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(path);
      return m && /^\d{4}-\d{2}-\d{2}/.test(url.searchParams.get('api-version') ?? '')
        ? { model: decodeURIComponent(m[1]!), stream: false }
        : undefined;
    }
    case 'bedrock': {
      const m = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(path);
      return m ? { model: decodeURIComponent(m[1]!), stream: m[2] === 'converse-stream' } : undefined;
    }
  }
}

function presentedKey(protocol: WireProtocol, req: IncomingMessage, url: URL): string | undefined {
  const header = (name: string): string | undefined => {
    const v = req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  switch (protocol) {
    case 'google':
      return header('x-goog-api-key') ?? url.searchParams.get('key') ?? undefined;
    case 'mistral':
      return /^Bearer (.*)$/i.exec(header('authorization') ?? '')?.[1];
    case 'azure-openai':
      return header('api-key');
    case 'bedrock': {
      const auth = header('authorization') ?? '';
      // SigV4: `AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/<service>/aws4_request, ...`
      return /^Bearer (.*)$/i.exec(auth)?.[1] ?? /Credential=([^/]+)\//.exec(auth)?.[1];
    }
  }
}

function callId(protocol: WireProtocol, n: number): string {
  // Mistral's ids are 9 alphanumeric characters; Gemini sends none (the client makes its own).
  if (protocol === 'mistral') return `srv${String(n).padStart(6, '0')}`;
  if (protocol === 'bedrock') return `tooluse_srv_${n}`;
  return `call_srv_${n}`;
}

function bodyOf(protocol: WireProtocol, a: Answer): unknown {
  switch (protocol) {
    case 'google':
      return {
        candidates: [{ content: { role: 'model', parts: geminiParts(a) }, finishReason: 'STOP', index: 0 }],
        usageMetadata: {
          promptTokenCount: a.usage.input,
          candidatesTokenCount: a.usage.output,
          totalTokenCount: a.usage.input + a.usage.output,
        },
        modelVersion: a.model,
      };
    case 'mistral':
    case 'azure-openai':
      return openAiBody(a);
    case 'bedrock':
      return {
        output: {
          message: {
            role: 'assistant',
            content: [
              ...(a.content ? [{ text: a.content }] : []),
              ...a.calls.map((c) => ({ toolUse: { toolUseId: c.id, name: c.name, input: c.arguments } })),
            ],
          },
        },
        stopReason: a.calls.length > 0 ? 'tool_use' : 'end_turn',
        usage: {
          inputTokens: a.usage.input,
          outputTokens: a.usage.output,
          totalTokens: a.usage.input + a.usage.output,
        },
        metrics: { latencyMs: 1 },
      };
  }
}

function geminiParts(a: Answer): unknown[] {
  return [
    ...(a.content ? [{ text: a.content }] : []),
    ...a.calls.map((c) => ({ functionCall: { name: c.name, args: c.arguments } })),
  ];
}

function eventsOf(protocol: WireProtocol, a: Answer): (string | Buffer)[] {
  switch (protocol) {
    case 'google': {
      // Each chunk is a GenerateContentResponse; the last carries finishReason and usageMetadata.
      const sse = (chunk: unknown): string => `data: ${JSON.stringify(chunk)}\r\n\r\n`;
      const pieces: unknown[][] = [
        ...words(a.content).map((w) => [{ text: w }]),
        ...a.calls.map((c) => [{ functionCall: { name: c.name, args: c.arguments } }]),
      ];
      if (pieces.length === 0) pieces.push([{ text: '' }]);
      return pieces.map((parts, i) =>
        sse({
          candidates: [
            {
              content: { role: 'model', parts },
              index: 0,
              ...(i === pieces.length - 1 ? { finishReason: 'STOP' } : {}),
            },
          ],
          ...(i === pieces.length - 1
            ? {
                usageMetadata: {
                  promptTokenCount: a.usage.input,
                  candidatesTokenCount: a.usage.output,
                  totalTokenCount: a.usage.input + a.usage.output,
                },
              }
            : {}),
          modelVersion: a.model,
        }),
      );
    }
    case 'azure-openai':
      return openAiEvents(a, true);
    case 'mistral': {
      // Mistral sends each tool call whole in one delta, and the usage with the finishing chunk.
      const chunk = (
        delta: Record<string, unknown>,
        extra: Record<string, unknown> = {},
        finish: string | null = null,
      ): string =>
        `data: ${JSON.stringify({ id: 'cmpl-scripted', object: 'chat.completion.chunk', created: 0, model: a.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
      const events = [chunk({ role: 'assistant', content: '' })];
      for (const word of words(a.content)) events.push(chunk({ content: word }));
      if (a.calls.length > 0)
        events.push(
          chunk({
            tool_calls: a.calls.map((c, index) => ({
              id: c.id,
              function: { name: c.name, arguments: JSON.stringify(c.arguments) },
              index,
            })),
          }),
        );
      events.push(
        chunk(
          { content: '' },
          {
            usage: {
              prompt_tokens: a.usage.input,
              completion_tokens: a.usage.output,
              total_tokens: a.usage.input + a.usage.output,
            },
          },
          a.calls.length > 0 ? 'tool_calls' : 'stop',
        ),
      );
      events.push('data: [DONE]\n\n');
      return events;
    }
    case 'bedrock': {
      const events = [eventFrame('messageStart', { role: 'assistant' })];
      let index = 0;
      if (a.content) {
        for (const word of words(a.content))
          events.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { text: word } }));
        events.push(eventFrame('contentBlockStop', { contentBlockIndex: index }));
        index++;
      }
      for (const c of a.calls) {
        events.push(
          eventFrame('contentBlockStart', {
            contentBlockIndex: index,
            start: { toolUse: { toolUseId: c.id, name: c.name } },
          }),
        );
        for (const piece of halves(JSON.stringify(c.arguments)))
          events.push(
            eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: piece } } }),
          );
        events.push(eventFrame('contentBlockStop', { contentBlockIndex: index }));
        index++;
      }
      events.push(eventFrame('messageStop', { stopReason: a.calls.length > 0 ? 'tool_use' : 'end_turn' }));
      events.push(
        eventFrame('metadata', {
          usage: {
            inputTokens: a.usage.input,
            outputTokens: a.usage.output,
            totalTokens: a.usage.input + a.usage.output,
          },
          metrics: { latencyMs: 1 },
        }),
      );
      return events;
    }
  }
}

/**
 * One message of AWS's event-stream encoding: total length and headers length (big-endian
 * uint32), the CRC32 of those 8 bytes, the headers (name length uint8, name, type 7 = string,
 * value length uint16, value), the JSON payload, and the CRC32 of everything before it.
 */
export function eventFrame(eventType: string, payload: unknown): Buffer {
  const headers = Buffer.concat(
    Object.entries({ ':event-type': eventType, ':content-type': 'application/json', ':message-type': 'event' }).map(
      ([name, value]) => {
        const n = Buffer.from(name, 'utf8');
        const v = Buffer.from(value, 'utf8');
        const length = Buffer.alloc(2);
        length.writeUInt16BE(v.length);
        return Buffer.concat([Buffer.from([n.length]), n, Buffer.from([7]), length, v]);
      },
    ),
  );
  const body = Buffer.from(JSON.stringify(payload), 'utf8');
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(12 + headers.length + body.length + 4, 0);
  prelude.writeUInt32BE(headers.length, 4);
  const preludeCrc = Buffer.alloc(4);
  preludeCrc.writeUInt32BE(crc32(prelude));
  const message = Buffer.concat([prelude, preludeCrc, headers, body]);
  const messageCrc = Buffer.alloc(4);
  messageCrc.writeUInt32BE(crc32(message));
  return Buffer.concat([message, messageCrc]);
}

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};
const BEDROCK_ERROR: Record<number, string> = {
  400: 'ValidationException',
  403: 'UnrecognizedClientException',
  404: 'ResourceNotFoundException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

function sendError(res: ServerResponse, protocol: WireProtocol, status: number, message: string): void {
  switch (protocol) {
    case 'google':
      return sendJson(res, status, { error: { code: status, message, status: GOOGLE_STATUS[status] ?? 'UNKNOWN' } });
    case 'mistral':
      return sendJson(res, status, {
        object: 'error',
        message,
        type:
          status === 401 ? 'authentication_error' : status >= 500 ? 'internal_server_error' : 'invalid_request_error',
        param: null,
        code: String(status),
      });
    case 'azure-openai':
      return sendJson(res, status, { error: { code: String(status), message } });
    case 'bedrock':
      return sendJson(
        res,
        status,
        { message },
        {
          'x-amzn-errortype': `${BEDROCK_ERROR[status] ?? 'InternalServerException'}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
        },
      );
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// The text of the last user message, in the protocol's own shape (tool results are not user text).
function lastUserText(protocol: WireProtocol, body: Record<string, unknown>): string {
  const list = (protocol === 'google' ? body['contents'] : body['messages']) as unknown;
  const messages = Array.isArray(list) ? (list as unknown[]) : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!isObject(m) || m['role'] !== 'user') continue;
    if (typeof m['content'] === 'string') return m['content'];
    const parts = (protocol === 'google' ? m['parts'] : m['content']) as unknown;
    if (!Array.isArray(parts)) continue;
    const text = (parts as unknown[])
      .filter((p) => isObject(p) && typeof p['text'] === 'string')
      .map((p) => String((p as Record<string, unknown>)['text']));
    if (text.length > 0) return text.join('\n');
  }
  return '';
}
