import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { HostAllowList, ResolvedAddress } from './address.policy.js';
import { checkedDestination, pinnedLookup, type Resolve } from './destination.js';

/** How the holder of a guarded fetch may reach the network. */
export interface GuardedFetchOptions {
  readonly allow: HostAllowList;
  readonly resolve: Resolve;
  /** Largest response body read, in bytes; a longer one fails the request. */
  readonly maxBytes: number;
  /** What a request attempts, in words, for a refusal's message ("reach the MCP server at <origin>"). */
  readonly what: (url: URL) => string;
  /** Why an address is refused, appended to a refusal's message. */
  readonly policyNote: string;
  /** Aborts every request of the holder (its time limit), beside each request's own signal. */
  readonly signal?: AbortSignal;
  readonly userAgent?: string;
  /** Keep connections open for the next request to the same host and the same checked addresses
   * (a model provider's TLS handshake on every call costs round trips and CPU); default false. */
  readonly keepAlive?: boolean;
}

/** The fetch of an SDK (the MCP transport's, the AI SDK providers'): a URL or a string, and an init. */
export type GuardedFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A fetch for an SDK that goes through the SSRF guard: each request's host is resolved once and
 * checked against the address policy, and its socket connects only to the checked addresses (no
 * second lookup, no rebinding gap). Redirects are returned as they are, never followed here (an
 * SDK that follows one calls this fetch again, and the new host is checked).
 */
export function guardedFetch(options: GuardedFetchOptions): GuardedFetch {
  return async (input, init = {}) => {
    if (input instanceof Request) throw new Error('a guarded fetch takes a URL and an init, not a Request');
    const url = new URL(input instanceof URL ? input.href : input);
    const signals = [options.signal, init.signal ?? undefined].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    const addresses = await checkedDestination(
      url,
      options.what(url),
      options.policyNote,
      options.allow,
      options.resolve,
      signal ?? new AbortController().signal,
    );
    const headers: Record<string, string> = options.userAgent ? { 'user-agent': options.userAgent } : {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array))
      throw new Error('unsupported request body');
    const agent = options.keepAlive ? pooledAgent(url, addresses) : false;
    const response = await send(url, addresses, agent, init.method ?? 'GET', headers, body ?? undefined, signal);
    const status = response.statusCode ?? 502;
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value])
        responseHeaders.append(name, item);
    }
    if (NULL_BODY_STATUSES.has(status) || init.method === 'HEAD') {
      response.resume();
      return new Response(null, { status, headers: responseHeaders });
    }
    return new Response(limitedBody(response, options.maxBytes), {
      status,
      statusText: response.statusMessage ?? '',
      headers: responseHeaders,
    });
  };
}

function send(
  url: URL,
  addresses: readonly ResolvedAddress[],
  agent: http.Agent | false,
  method: string,
  headers: Record<string, string>,
  body: string | Uint8Array | undefined,
  signal: AbortSignal | undefined,
): Promise<IncomingMessage> {
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<IncomingMessage>((resolve, reject) => {
    const request = transport.request(
      url,
      { method, agent, lookup: pinnedLookup(addresses), ...(signal ? { signal } : {}), headers },
      resolve,
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** Destinations whose connections are kept; the least recently used beyond it is retired. */
const AGENTS_KEPT = 64;
const agents = new Map<string, http.Agent>();

/**
 * The keep-alive agent of one host and one set of checked addresses: its sockets connect only to
 * those addresses (the agent's own lookup is pinned to them), so a kept connection is reused only
 * by a request whose check gave the same addresses, never by one that resolved elsewhere.
 */
function pooledAgent(url: URL, addresses: readonly ResolvedAddress[]): http.Agent {
  const key = `${url.protocol}//${url.host} ${addresses
    .map((a) => a.address)
    .sort()
    .join(',')}`;
  let agent = agents.get(key);
  if (agent) {
    // Map order is insertion order: re-inserting makes this the most recently used.
    agents.delete(key);
  } else {
    const agentOptions = { keepAlive: true, lookup: pinnedLookup(addresses) };
    agent = url.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    if (agents.size >= AGENTS_KEPT) {
      const [oldest, retired] = agents.entries().next().value as [string, http.Agent];
      agents.delete(oldest);
      retire(retired);
    }
  }
  agents.set(key, agent);
  return agent;
}

/** Closes an agent's idle connections; those still answering close when their request ends. */
function retire(agent: http.Agent): void {
  agent.on('free', (socket: Socket) => socket.destroy());
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

/** The body as a web stream that errors once it passes `maxBytes`. */
function limitedBody(response: IncomingMessage, maxBytes: number): ReadableStream<Uint8Array> {
  const chunks = response[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let size = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) return controller.close();
        size += next.value.length;
        if (size > maxBytes) {
          response.destroy();
          return controller.error(new Error(`the response passed the ${maxBytes}-byte limit`));
        }
        controller.enqueue(new Uint8Array(next.value));
      } catch (e) {
        controller.error(e);
      }
    },
    cancel() {
      response.destroy();
    },
  });
}
