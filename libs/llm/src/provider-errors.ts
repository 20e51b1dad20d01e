import { isRecord } from './json.js';
import { ModelError } from './model-error.js';
import { redactSecret } from './redact.js';
import { SseParser, type SseEvent } from './sse.parser.js';

/** The providers reached over HTTP. */
export type HttpProvider = 'openai' | 'anthropic';

/** One POST to a provider, with what is needed to turn its failures into ModelErrors. */
export interface ProviderCall {
  readonly provider: HttpProvider;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
  readonly apiKey: string | null;
  readonly signal?: AbortSignal;
}

const MAX_DETAIL = 500;

/** The base URL without its trailing slash; a malformed one is the request's fault, not the network's. */
export function baseUrlOf(provider: HttpProvider, configured: string | null, fallback: string): string {
  const baseUrl = (configured ?? fallback).replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ModelError(`${provider} base URL is not a valid URL`, { kind: 'rejected' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ModelError(`${provider} base URL must use http or https`, { kind: 'rejected' });
  return baseUrl;
}

/** Sends the call; resolves only with a 2xx response, otherwise throws a classified ModelError. */
export async function postToProvider(call: ProviderCall): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(call.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...call.headers },
      body: JSON.stringify(call.body),
      signal: call.signal,
    });
  } catch (e) {
    throw transportFailure(call, e);
  }
  if (res.ok) return res;
  let text = '';
  try {
    text = await res.text();
  } catch (e) {
    // The status alone classifies the failure; a body lost on the way only costs the detail.
    if (call.signal?.aborted) throw transportFailure(call, e);
  }
  throw errorForStatus(call.provider, res.status, text, call.apiKey);
}

/** Reads a whole JSON response body. */
export async function readJson(res: Response, call: ProviderCall): Promise<unknown> {
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    throw transportFailure(call, e);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidResponse(call.provider, 'the body is not JSON');
  }
}

/** Whether the provider answered with an event stream (some compatible servers ignore `stream`). */
export function isEventStream(res: Response): boolean {
  return (res.headers.get('content-type') ?? '').includes('text/event-stream');
}

/** The server-sent events of a streamed response; stopping early cancels the body. */
export async function* readEvents(res: Response, call: ProviderCall): AsyncGenerator<SseEvent> {
  if (!res.body) throw invalidResponse(call.provider, 'the stream has no body');
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  try {
    for (;;) {
      const chunk = await reader.read().catch((e: unknown) => {
        throw transportFailure(call, e);
      });
      if (chunk.done) break;
      yield* parser.push(decoder.decode(chunk.value, { stream: true }));
    }
    yield* parser.push(decoder.decode());
    yield* parser.end();
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** Parses one event's JSON payload. */
export function eventJson(provider: HttpProvider, data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    throw invalidResponse(provider, 'a stream event is not JSON');
  }
}

/** A response that does not have the shape the protocol promises. */
export function invalidResponse(provider: HttpProvider, what: string): ModelError {
  return new ModelError(`${provider} returned an invalid response: ${what}`, { kind: 'invalid_response' });
}

/**
 * Classifies an HTTP failure: 429, 408 and 5xx may pass (retryable, `unavailable`); any other 4xx
 * is the request's fault (`rejected`), with the provider's own message, which is what a customer
 * needs to fix a bad key or model name. The key is redacted from it.
 */
export function errorForStatus(provider: HttpProvider, status: number, body: string, apiKey: string | null): ModelError {
  const detail = providerMessage(body, apiKey);
  const suffix = detail ? `: ${detail}` : '';
  if (status === 429) return new ModelError(`${provider} rate-limited the request (429)${suffix}`, { kind: 'unavailable', status });
  if (status >= 500 || status === 408) return new ModelError(`${provider} is unavailable (${status})${suffix}`, { kind: 'unavailable', status });
  if (status >= 400) return new ModelError(`${provider} rejected the request (${status})${suffix}`, { kind: 'rejected', status });
  return new ModelError(`${provider} answered with unexpected status ${status}`, { kind: 'invalid_response', status });
}

/** The message of an error body (`error.message`, or a compatible server's `error` string), redacted and bounded. */
export function providerMessage(body: string, apiKey: string | null): string {
  let message = '';
  try {
    const parsed: unknown = JSON.parse(body);
    if (isRecord(parsed)) {
      const error = parsed['error'];
      if (isRecord(error) && typeof error['message'] === 'string') message = error['message'];
      else if (typeof error === 'string') message = error;
      else if (typeof parsed['message'] === 'string') message = parsed['message'];
    }
  } catch {
    // Proxies answer with HTML pages; they say nothing the status does not.
    if (!body.trimStart().startsWith('<')) message = body;
  }
  const clean = redactSecret(message.replace(/\s+/g, ' ').trim(), apiKey);
  return clean.length > MAX_DETAIL ? `${clean.slice(0, MAX_DETAIL)}…` : clean;
}

/**
 * What to throw when the request or its body could not be carried. The caller's own abort is
 * passed through untouched (it is a cancellation, not a provider failure), except a timeout signal,
 * which is the provider not answering in time.
 */
export function transportFailure(call: Pick<ProviderCall, 'provider' | 'apiKey' | 'signal'>, error: unknown): unknown {
  if (error instanceof ModelError) return error;
  const signal = call.signal;
  if (signal?.aborted) {
    const reason: unknown = signal.reason;
    // DOMException is an Error only in some realms: compare the name.
    if (isRecordLike(reason) && reason['name'] === 'TimeoutError') {
      return new ModelError(`${call.provider} did not answer in time`, { kind: 'unavailable', cause: reason });
    }
    return reason;
  }
  const code = errorCode(error);
  const detail = code ?? (error instanceof Error ? redactSecret(error.message, call.apiKey) : 'unknown error');
  return new ModelError(`${call.provider} could not be reached (${detail})`, { kind: 'unavailable', cause: error });
}

// fetch wraps socket errors (`TypeError: fetch failed`); the useful code sits in the cause chain.
function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && isRecordLike(current); depth++) {
    if (typeof current['code'] === 'string') return current['code'];
    current = current['cause'];
  }
  return undefined;
}

function isRecordLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
