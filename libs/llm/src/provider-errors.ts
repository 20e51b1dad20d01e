import type { APICallError } from 'ai';
import type { ModelProvider } from '#libs/contracts';
import { DestinationRefused } from '#libs/egress';
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

/** How a tenant reads a provider: its name, in the service's own sentence. */
const providerName = (provider: ModelProvider): string => `model provider ${provider}`;

/** A response that does not have the shape the protocol promises. */
export function invalidResponse(provider: ModelProvider, what: string): ModelError {
  return new ModelError(`${providerName(provider)} returned an invalid response: ${what}`, {
    kind: 'invalid_response',
  });
}

/**
 * Classifies an HTTP failure in the service's own words (DESIGN.md sections 6 and 11): 429, 408
 * and 5xx may pass (retryable, `unavailable`); any other 4xx is the request's fault (`rejected`).
 * The provider's body is never part of it: the base URL is the tenant's to set, so the body may be
 * anyone's text, and a tenant must not be able to read a server through the service.
 */
export function errorForStatus(provider: ModelProvider, status: number): ModelError {
  const who = providerName(provider);
  const http = `(HTTP ${status})`;
  if (status === 429) return new ModelError(`${who} rate-limited the request ${http}`, { kind: 'unavailable', status });
  if (status >= 500 || status === 408)
    return new ModelError(`${who} is unavailable ${http}`, { kind: 'unavailable', status });
  if (status === 401) return new ModelError(`${who} refused the key ${http}`, { kind: 'rejected', status });
  if (status === 403)
    return new ModelError(`${who} denied the key access to the model ${http}`, { kind: 'rejected', status });
  if (status === 404)
    return new ModelError(`${who} did not find the model or the endpoint ${http}`, { kind: 'rejected', status });
  if (status === 413)
    return new ModelError(`${who} refused the request as too large ${http}`, { kind: 'rejected', status });
  if (status >= 400) return new ModelError(`${who} rejected the request ${http}`, { kind: 'rejected', status });
  return new ModelError(`${who} answered with the unexpected status ${status}`, { kind: 'invalid_response', status });
}

/**
 * What to throw for any failure of an SDK call. The caller's own abort is passed through untouched
 * (it is a cancellation, not a provider failure), except a timeout signal, which is the provider
 * not answering in time. A base URL the egress policy refuses is the request's fault; HTTP errors
 * are classified by status; an error object that arrived inside a stream (the provider failed after
 * accepting the request) is retryable unless it blames the request; a failed connection is
 * retryable and names its code. Nothing the provider wrote is repeated.
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
      return new ModelError(`${providerName(provider)} did not answer in time`, { kind: 'unavailable', cause: reason });
    }
    return reason;
  }
  const refused = refusalIn(error);
  if (refused) {
    // The message is libs/egress's: the address and the rule, written by the service.
    return new ModelError(refused.message, { kind: refused.reason === 'policy' ? 'rejected' : 'unavailable' });
  }
  if (isApiCallError(error)) {
    if (error.statusCode !== undefined && error.statusCode >= 400) return errorForStatus(provider, error.statusCode);
    // A 2xx whose body broke off: the SDK reports a stream cut with the response's status.
    if (error.statusCode !== undefined)
      return new ModelError(
        `${providerName(provider)} broke off its answer (${errorCode(error) ?? 'connection closed'})`,
        { kind: 'unavailable', cause: error },
      );
    return unreachable(provider, error, secrets);
  }
  if (isRecord(error) && !isError(error)) return streamedError(provider, error);
  if (isError(error) && INVALID_RESPONSE_ERRORS.has(error.name)) {
    return invalidResponse(provider, 'the body does not have the documented shape');
  }
  return unreachable(provider, error, secrets);
}

/** The AI SDK's errors about a body that is not what the protocol promises (their messages quote it). */
const INVALID_RESPONSE_ERRORS = new Set(['AI_TypeValidationError', 'AI_JSONParseError', 'AI_InvalidResponseDataError']);

// An error object inside a stream or a 200 body: OpenAI's `{message, type}`, Anthropic's `{type, message}`,
// Bedrock's exceptions. Its type decides retryable or not; its message is the provider's, not repeated.
function streamedError(provider: ModelProvider, error: Record<string, unknown>): ModelError {
  const inner = isRecord(error['error']) ? error['error'] : error;
  const type = String(inner['type'] ?? Object.keys(error)[0] ?? '');
  return REQUEST_ERROR_TYPES.has(type)
    ? new ModelError(`${providerName(provider)} rejected the request while answering`, { kind: 'rejected' })
    : new ModelError(`${providerName(provider)} failed while answering`, { kind: 'unavailable' });
}

/** The egress refusal a fetch threw, wherever the SDK wrapped it. */
function refusalIn(error: unknown): DestinationRefused | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && isRecordLike(current); depth++) {
    if (current instanceof DestinationRefused) return current;
    current = current['cause'];
  }
  return undefined;
}

function unreachable(
  provider: ModelProvider,
  error: unknown,
  secrets: readonly (string | null | undefined)[],
): ModelError {
  const code = errorCode(error);
  // Only the code, or the SDK's error name: their messages may quote what came back.
  const detail =
    code ??
    (isError(error) && error.name.startsWith('AI_')
      ? error.name
      : isError(error)
        ? bounded(redactAll(error.message, secrets))
        : 'unknown error');
  return new ModelError(`${providerName(provider)} could not be reached (${detail})`, {
    kind: 'unavailable',
    cause: error,
  });
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
