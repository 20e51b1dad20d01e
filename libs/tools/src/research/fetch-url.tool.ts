import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { type Readable, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import {
  checkedDestination,
  describeNetworkError,
  DestinationRefused,
  HostAllowList,
  pinnedLookup,
  systemResolve,
  type Resolve,
  type ResolvedAddress,
} from '#libs/egress';
import { htmlTitle, htmlToText } from '../text/html-text.util.js';
import { pdfToText } from '../text/pdf-text.util.js';
import { defineTool } from '../tool-definition.js';
import { boundText, errorMessage, toolError, toolOk, type ToolDefinition, type ToolResult } from '../tool.js';

/** Operator settings of fetch_url. */
export interface FetchUrlOptions {
  /** Hostnames (`intranet.example`, `*.example.com`), IP addresses or CIDRs reachable although not public. */
  readonly allowHosts?: readonly string[];
  /** Largest (decompressed) body read, in bytes (default 1 MiB); the rest is cut off. */
  readonly maxBytes?: number;
  /** Wall-clock limit for the whole fetch, redirects included, in ms (default 10,000). */
  readonly timeoutMs?: number;
  /** Redirects followed (default 5). */
  readonly maxRedirects?: number;
  /** Text returned to the model, in characters (default 100,000). */
  readonly maxOutputChars?: number;
  readonly userAgent?: string;
  /** Resolves a hostname to addresses (default: the system resolver, every address). */
  readonly resolve?: Resolve;
}

/** Defaults of fetch_url's limits. */
export const FETCH_URL_DEFAULTS = {
  maxBytes: 1024 * 1024,
  timeoutMs: 10_000,
  maxRedirects: 5,
  maxOutputChars: 100_000,
  userAgent: 'managed-agent-service fetch_url/1.0',
} as const;

const POLICY_NOTE =
  'fetch_url reaches only public internet addresses (not loopback, private, link-local or other special ranges).';
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

interface FetchUrlArgs {
  readonly url: string;
}

interface Limits {
  readonly maxBytes: number;
  readonly timeoutMs: number;
  readonly maxRedirects: number;
  readonly maxOutputChars: number;
  readonly userAgent: string;
}

interface Body {
  readonly bytes: Buffer;
  readonly truncated: boolean;
}

/** `fetch_url` (research): HTTP(S) GET of a public page, as text, with size, time and redirect limits. */
export const fetchUrlTool: ToolDefinition<FetchUrlOptions> = defineTool<FetchUrlArgs, FetchUrlOptions>(
  'research',
  {
    name: 'fetch_url',
    description:
      'Fetch a web page or text resource with HTTP GET and return its readable text (HTML is converted to text, ' +
      'links shown in brackets; PDFs are read as text). Only public http(s) URLs; at most 1 MB, 10 seconds and 5 redirects.',
    parameters: {
      type: 'object',
      properties: {
        url: { type: 'string', minLength: 1, maxLength: 2048, description: 'Absolute http:// or https:// URL.' },
      },
      required: ['url'],
      additionalProperties: false,
    },
  },
  async (args, { options = {}, signal }) => {
    const limits: Limits = {
      maxBytes: options.maxBytes ?? FETCH_URL_DEFAULTS.maxBytes,
      timeoutMs: options.timeoutMs ?? FETCH_URL_DEFAULTS.timeoutMs,
      maxRedirects: options.maxRedirects ?? FETCH_URL_DEFAULTS.maxRedirects,
      maxOutputChars: options.maxOutputChars ?? FETCH_URL_DEFAULTS.maxOutputChars,
      userAgent: options.userAgent ?? FETCH_URL_DEFAULTS.userAgent,
    };
    const allow = HostAllowList.parse(options.allowHosts ?? []);
    if (!(allow instanceof HostAllowList)) return toolError(`fetch_url is misconfigured: ${allow.error}.`);
    let start: URL;
    try {
      start = new URL(args.url);
    } catch {
      return toolError(`"${args.url}" is not an absolute URL; give one such as https://example.com/page.`);
    }
    const resolve = options.resolve ?? systemResolve;

    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), limits.timeoutMs);
    const onCancel = (): void => controller.abort();
    signal?.addEventListener('abort', onCancel, { once: true });
    try {
      return await fetchFollowing(start, allow, resolve, limits, controller.signal);
    } catch (e) {
      if (e instanceof DestinationRefused) return toolError(e.message);
      if (signal?.aborted) return toolError(`Fetching ${args.url} was cancelled.`);
      if (controller.signal.aborted) return toolError(`Fetching ${args.url} timed out after ${limits.timeoutMs} ms.`);
      return toolError(`Fetching ${args.url} failed: ${describeNetworkError(e)}.`);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCancel);
    }
  },
);

async function fetchFollowing(
  start: URL,
  allow: HostAllowList,
  resolve: Resolve,
  limits: Limits,
  signal: AbortSignal,
): Promise<ToolResult> {
  let url = start;
  let previous: URL | undefined;
  for (let redirects = 0; ; redirects++) {
    const addresses = await destinationOf(url, previous, allow, resolve, signal);
    const response = await get(url, addresses, limits.userAgent, signal);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (REDIRECTS.has(status) && location) {
      response.destroy();
      if (redirects >= limits.maxRedirects) {
        throw new DestinationRefused(
          `Fetching ${start.href} stopped: more than ${limits.maxRedirects} redirects (the limit).`,
        );
      }
      previous = url;
      try {
        url = new URL(location, url);
      } catch {
        throw new DestinationRefused(`${url.href} redirected to "${location}", which is not a valid URL.`);
      }
      continue;
    }
    const encoding = String(response.headers['content-encoding'] ?? 'identity')
      .trim()
      .toLowerCase();
    if (!['identity', '', 'gzip', 'x-gzip', 'deflate', 'br'].includes(encoding)) {
      response.destroy();
      throw new DestinationRefused(`${url.href} sent its body with the unsupported content-encoding "${encoding}".`);
    }
    const body = await readBody(response, encoding, limits.maxBytes);
    return describeResponse(url, start, response, body, limits);
  }
}

/** Checks the scheme and every resolved address of `url`; the connection then goes only to those addresses. */
function destinationOf(
  url: URL,
  redirectedFrom: URL | undefined,
  allow: HostAllowList,
  resolve: Resolve,
  signal: AbortSignal,
): Promise<readonly ResolvedAddress[]> {
  const what = redirectedFrom ? `follow the redirect from ${redirectedFrom.href} to ${url.href}` : `fetch ${url.href}`;
  return checkedDestination(url, what, POLICY_NOTE, allow, resolve, signal);
}

/** One GET whose socket connects only to the addresses that were checked: no second DNS lookup, no rebinding gap. */
function get(
  url: URL,
  addresses: readonly ResolvedAddress[],
  userAgent: string,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = transport.request(
      url,
      {
        method: 'GET',
        agent: false,
        lookup: pinnedLookup(addresses),
        signal,
        headers: {
          'user-agent': userAgent,
          accept: 'text/html,application/xhtml+xml,text/plain,application/json,application/pdf;q=0.9,*/*;q=0.5',
          'accept-encoding': 'gzip, deflate, br',
        },
      },
      resolve,
    );
    request.on('error', reject);
    request.end();
  });
}

/** Reads at most `maxBytes` of the decoded body, then hangs up. */
async function readBody(response: IncomingMessage, encoding: string, maxBytes: number): Promise<Body> {
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  const source: Readable = decoder ? pipeline(response, decoder, () => undefined) : response;
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      if (size + chunk.length > maxBytes) {
        chunks.push(chunk.subarray(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } finally {
    response.destroy();
    decoder?.destroy();
  }
  return { bytes: Buffer.concat(chunks, size), truncated };
}

async function describeResponse(
  url: URL,
  start: URL,
  response: IncomingMessage,
  body: Body,
  limits: Limits,
): Promise<ToolResult> {
  const status = response.statusCode ?? 0;
  const contentType = String(response.headers['content-type'] ?? '');
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  const header = [`URL: ${url.href}`];
  if (url.href !== start.href) header.push(`Redirected from: ${start.href}`);
  header.push(
    `Status: ${status} ${response.statusMessage ?? ''}`.trimEnd(),
    `Content-Type: ${contentType || '(none)'}`,
  );

  let text: string;
  if (
    mediaType === 'application/pdf' ||
    (mediaType === '' && body.bytes.subarray(0, 5).toString('latin1') === '%PDF-')
  ) {
    if (body.truncated)
      return toolError(
        `${url.href} is a PDF larger than the ${limits.maxBytes}-byte limit; it cannot be read in part.`,
      );
    try {
      const pdf = await pdfToText(body.bytes);
      header.push(`Pages: ${pdf.pages}`);
      text = pdf.text;
    } catch (e) {
      return toolError(`${url.href} is a PDF that could not be read: ${errorMessage(e)}.`);
    }
  } else {
    const decoded = decode(body.bytes, contentType);
    const isHtml =
      mediaType === 'text/html' ||
      mediaType === 'application/xhtml+xml' ||
      (mediaType === '' && /^\s*<(!doctype html|html)/i.test(decoded));
    if (!isHtml && !isTextual(mediaType, decoded)) {
      return toolError(`${url.href} returned ${mediaType || 'binary content'}, which fetch_url cannot read as text.`);
    }
    if (isHtml) {
      const title = htmlTitle(decoded);
      if (title) header.push(`Title: ${title}`);
      text = htmlToText(decoded);
    } else {
      text = decoded;
    }
  }
  if (body.truncated) header.push(`[the response was cut off at the ${limits.maxBytes}-byte limit]`);
  if (status >= 400) {
    return toolError(
      `${url.href} answered HTTP ${status} ${response.statusMessage ?? ''}`.trimEnd() +
        `. Start of the response:\n${boundText(text, 1000)}`,
    );
  }
  return toolOk(
    `${header.join('\n')}\n\n${boundText(text, limits.maxOutputChars, 'the rest of the page is not shown')}`,
  );
}

function decode(bytes: Buffer, contentType: string): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

function isTextual(mediaType: string, decoded: string): boolean {
  if (mediaType.startsWith('text/') || /\+(json|xml)$/.test(mediaType)) return true;
  if (
    [
      'application/json',
      'application/xml',
      'application/javascript',
      'application/x-ndjson',
      'application/yaml',
      'application/csv',
    ].includes(mediaType)
  )
    return true;
  // eslint-disable-next-line no-control-regex -- NUL bytes are what marks binary content
  return mediaType === '' && !/\u0000/.test(decoded.slice(0, 4096));
}
