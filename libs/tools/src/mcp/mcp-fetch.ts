import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { checkedDestination, pinnedLookup, type HostAllowList, type Resolve } from '#libs/egress';

/** How one MCP connection may reach the network. */
export interface GuardedFetchOptions {
  readonly allow: HostAllowList;
  readonly resolve: Resolve;
  /** Largest response body read, in bytes; a longer one fails the request. */
  readonly maxBytes: number;
  /** Aborts every request of the connection (its time limit). */
  readonly signal: AbortSignal;
  readonly policyNote: string;
  readonly userAgent: string;
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A fetch for the MCP SDK's transport that goes through fetch_url's SSRF guard: each request's
 * host is resolved and checked, and its socket connects only to the checked addresses. Redirects
 * are returned as they are (the SDK follows same-origin ones, through this fetch again).
 */
export function guardedFetch(options: GuardedFetchOptions): FetchLike {
  return async (input, init = {}) => {
    const url = new URL(input instanceof URL ? input.href : String(input));
    const signal = init.signal ? AbortSignal.any([options.signal, init.signal]) : options.signal;
    const addresses = await checkedDestination(
      url,
      `reach the MCP server at ${url.origin}`,
      options.policyNote,
      options.allow,
      options.resolve,
      signal,
    );
    const headers: Record<string, string> = { 'user-agent': options.userAgent };
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array))
      throw new Error('unsupported request body');
    const transport = url.protocol === 'https:' ? https : http;
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = transport.request(
        url,
        { method: init.method ?? 'GET', agent: false, lookup: pinnedLookup(addresses), signal, headers },
        resolve,
      );
      request.on('error', reject);
      request.end(body ?? undefined);
    });
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
