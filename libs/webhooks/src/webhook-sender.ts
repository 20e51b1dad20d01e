import http from 'node:http';
import https from 'node:https';
import type { WebhookSignatureHeaders } from './signature.js';
import {
  checkResolvedHost,
  HostAllowList,
  addressesOf,
  pinnedLookup,
  systemResolve,
  type ResolvedAddress,
} from '#libs/egress';

/** What one POST came to: the receiver's status, or why there was none. */
export type SendOutcome =
  | { readonly kind: 'answered'; readonly statusCode: number }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'unreachable'; readonly reason: string };

export interface SendOptions {
  readonly allow: HostAllowList;
  readonly timeoutMs: number;
  readonly resolve?: (hostname: string) => Promise<readonly ResolvedAddress[]>;
}

const USER_AGENT = 'managed-agent-service-webhooks/1.0';

/**
 * POSTs a webhook the way fetch_url GETs a page: the host is resolved once, every address must be
 * public (or allowed by WEBHOOK_ALLOW_HOSTS), and the socket connects only to those addresses.
 * Redirects are not followed (a 3xx is a failed attempt, as Standard Webhooks advises); the
 * answer's body is not read beyond what closing the connection needs.
 */
export async function sendWebhook(
  target: URL,
  body: string,
  headers: WebhookSignatureHeaders,
  options: SendOptions,
): Promise<SendOutcome> {
  let destination: { hostname: string; addresses: readonly ResolvedAddress[] };
  try {
    destination = await addressesOf(target, options.resolve ?? systemResolve);
  } catch (e) {
    return { kind: 'unreachable', reason: `${target.hostname} did not resolve (${describe(e)})` };
  }
  const verdict = checkResolvedHost(destination.hostname, destination.addresses, options.allow);
  if (!verdict.ok)
    return {
      kind: 'refused',
      reason: `${verdict.reason}; webhooks go to public addresses only unless WEBHOOK_ALLOW_HOSTS allows more`,
    };
  const transport = target.protocol === 'https:' ? https : http;
  return new Promise<SendOutcome>((resolve) => {
    const request = transport.request(
      target,
      {
        method: 'POST',
        agent: false,
        lookup: pinnedLookup(destination.addresses),
        timeout: options.timeoutMs,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': USER_AGENT,
          ...headers,
        },
      },
      (response) => {
        resolve({ kind: 'answered', statusCode: response.statusCode ?? 0 });
        response.resume();
        response.on('error', () => undefined);
      },
    );
    const timer = setTimeout(
      () => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    request.on('close', () => clearTimeout(timer));
    request.on('timeout', () => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    request.on('error', (e) => resolve({ kind: 'unreachable', reason: describe(e) }));
    request.end(body);
  });
}

function describe(e: unknown): string {
  const code = (e as { code?: unknown }).code;
  const message = e instanceof Error ? e.message : String(e);
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}
