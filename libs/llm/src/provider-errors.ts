import type { APICallError } from 'ai';
import type { ModelProvider } from '#libs/contracts';
import { redactSecret } from '#libs/observability';
import { isRecord } from './json.js';
import { ModelError } from './model-error.js';

const MAX_DETAIL = 500;
/** Error types (Anthropic's, Bedrock's) that blame the request when they arrive inside a stream. */
const REQUEST_ERROR_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'validationException',
  'accessDeniedException',
]);

/** The base URL without its trailing slash; a malformed one is the request's fault, not the network's. */
export function baseUrlOf(provider: ModelProvider, configured: string | null, fallback: string): string {
  const baseUrl = (configured ?? fallback).replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ModelError(`${provider} base URL is not a valid URL`, { kind: 'rejected' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ModelError(`${provider} base URL must use http or https`, { kind: 'rejected' });
  return baseUrl;
}

/** A response that does not have the shape the protocol promises. */
export function invalidResponse(provider: ModelProvider, what: string): ModelError {
  return new ModelError(`${provider} returned an invalid response: ${what}`, { kind: 'invalid_response' });
}

/**
 * Classifies an HTTP failure: 429, 408 and 5xx may pass (retryable, `unavailable`); any other 4xx
 * is the request's fault (`rejected`), with the provider's own message, which is what a customer
 * needs to fix a bad key or model name. The secrets are redacted from it.
 */
export function errorForStatus(
  provider: ModelProvider,
  status: number,
  body: string,
  secrets: readonly (string | null | undefined)[],
): ModelError {
  const detail = providerMessage(body, secrets);
  const suffix = detail ? `: ${detail}` : '';
  if (status === 429)
    return new ModelError(`${provider} rate-limited the request (429)${suffix}`, { kind: 'unavailable', status });
  if (status >= 500 || status === 408)
    return new ModelError(`${provider} is unavailable (${status})${suffix}`, { kind: 'unavailable', status });
  if (status >= 400)
    return new ModelError(`${provider} rejected the request (${status})${suffix}`, { kind: 'rejected', status });
  return new ModelError(`${provider} answered with unexpected status ${status}`, { kind: 'invalid_response', status });
}

/** The message of an error body (`error.message`, a compatible server's `error` string, or a top-level `message`), redacted and bounded. */
export function providerMessage(body: string, secrets: readonly (string | null | undefined)[]): string {
  let message = '';
  try {
    const parsed: unknown = JSON.parse(body);
    if (isRecord(parsed)) message = messageOf(parsed);
  } catch {
    // Proxies answer with HTML pages; they say nothing the status does not.
    if (!body.trimStart().startsWith('<')) message = body;
  }
  return bounded(redactAll(message.replace(/\s+/g, ' ').trim(), secrets));
}

function messageOf(parsed: Record<string, unknown>): string {
  const error = parsed['error'];
  if (isRecord(error) && typeof error['message'] === 'string') return error['message'];
  if (typeof error === 'string') return error;
  if (typeof parsed['message'] === 'string') return parsed['message'];
  // Bedrock's documented error body spells it with a capital M.
  if (typeof parsed['Message'] === 'string') return parsed['Message'];
  return '';
}

/**
 * What to throw for any failure of an SDK call. The caller's own abort is passed through untouched
 * (it is a cancellation, not a provider failure), except a timeout signal, which is the provider
 * not answering in time. HTTP errors are classified by status; an error object that arrived inside
 * a stream (the provider failed after accepting the request) is retryable unless it blames the
 * request; a failed connection is retryable and names its code.
 */
export function sdkFailure(
  provider: ModelProvider,
  error: unknown,
  signal: AbortSignal | undefined,
  secrets: readonly (string | null | undefined)[],
): unknown {
  if (error instanceof ModelError) return error;
  if (signal?.aborted) {
    const reason: unknown = signal.reason;
    // DOMException is an Error only in some realms: compare the name.
    if (isRecordLike(reason) && reason['name'] === 'TimeoutError') {
      return new ModelError(`${provider} did not answer in time`, { kind: 'unavailable', cause: reason });
    }
    return reason;
  }
  if (isApiCallError(error)) {
    if (error.statusCode !== undefined && error.statusCode >= 400)
      return errorForStatus(provider, error.statusCode, error.responseBody ?? '', secrets);
    // A 2xx whose body broke off: the SDK reports a stream cut with the response's status.
    if (error.statusCode !== undefined)
      return new ModelError(`${provider} stream broke off (${errorCode(error) ?? 'connection closed'})`, {
        kind: 'unavailable',
        cause: error,
      });
    return unreachable(provider, error, secrets);
  }
  if (isRecord(error) && !isError(error)) return streamedError(provider, error, secrets);
  if (isError(error) && (error.name === 'AI_TypeValidationError' || error.name === 'AI_JSONParseError')) {
    return invalidResponse(provider, 'the body does not have the documented shape');
  }
  return unreachable(provider, error, secrets);
}

// An error object inside a stream or a 200 body: OpenAI's `{message, type}`, Anthropic's `{type, message}`, Bedrock's exceptions.
function streamedError(
  provider: ModelProvider,
  error: Record<string, unknown>,
  secrets: readonly (string | null | undefined)[],
): ModelError {
  const inner = isRecord(error['error']) ? error['error'] : error;
  const detail = providerMessage(JSON.stringify({ error: inner }), secrets);
  const type = String(inner['type'] ?? Object.keys(error)[0] ?? '');
  return REQUEST_ERROR_TYPES.has(type)
    ? new ModelError(`${provider} rejected the request${detail ? `: ${detail}` : ''}`, { kind: 'rejected' })
    : new ModelError(`${provider} failed while answering${detail ? `: ${detail}` : ''}`, { kind: 'unavailable' });
}

function unreachable(
  provider: ModelProvider,
  error: unknown,
  secrets: readonly (string | null | undefined)[],
): ModelError {
  const code = errorCode(error);
  const detail = code ?? (isError(error) ? bounded(redactAll(error.message, secrets)) : 'unknown error');
  return new ModelError(`${provider} could not be reached (${detail})`, { kind: 'unavailable', cause: error });
}

// fetch wraps socket errors (`TypeError: fetch failed`), and the SDK wraps fetch's; the useful code sits in the cause chain.
function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && isRecordLike(current); depth++) {
    if (typeof current['code'] === 'string') return current['code'];
    current = current['cause'];
  }
  return undefined;
}

function redactAll(text: string, secrets: readonly (string | null | undefined)[]): string {
  let clean = redactSecret(text, null);
  for (const secret of secrets) if (secret) clean = redactSecret(clean, secret);
  return clean;
}

function bounded(text: string): string {
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text;
}

// The SDK's own check (APICallError.isInstance) would load the whole SDK into every app that
// validates settings; its errors carry their name.
function isApiCallError(error: unknown): error is APICallError {
  return isRecordLike(error) && error['name'] === 'AI_APICallError';
}

// Errors thrown by fetch come from Node's own realm, which is not the caller's under a VM sandbox
// (Jest): `instanceof Error` says no there, the tag does not.
function isError(value: unknown): value is Error {
  return Object.prototype.toString.call(value) === '[object Error]' || value instanceof Error;
}

function isRecordLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
