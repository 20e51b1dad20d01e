/**
 * Every error code of the contract (section 7) and of DESIGN.md section 7, with its HTTP status.
 * Nothing here imports Nest, TypeORM or kafkajs: workflows and activities share it.
 */
export const ERROR_STATUS = {
  invalid_api_key: 401,
  invalid_body: 400,
  missing_message: 400,
  message_too_long: 400,
  invalid_capabilities: 400,
  invalid_tools: 400,
  invalid_files: 400,
  invalid_tool_outputs: 400,
  tool_output_too_large: 400,
  stream_not_supported: 400,
  insufficient_credits: 402,
  capability_not_enabled: 403,
  plan_restricted: 403,
  context_expired: 404,
  session_not_found: 404,
  request_not_found: 404,
  file_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_conflict: 409,
  request_not_cancellable: 409,
  request_cancelled: 409,
  session_busy: 409,
  session_expired: 410,
  session_ended: 410,
  payload_too_large: 413,
  rate_limited: 429,
  quota_exceeded: 429,
  session_limit_reached: 429,
  internal_error: 500,
  compute_error: 502,
  compute_unavailable: 502,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** `{ error: { code, message, docs } }`, contract section 2.11. */
export interface ErrorBody {
  readonly error: { readonly code: ErrorCode; readonly message: string; readonly docs: string };
}

/** A failure with a stable contract code; the api's exception filter renders it as ErrorBody. */
export class ServiceError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers, e.g. Retry-After on 429. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_STATUS, value);
}

/** `{base_url}/docs/errors#<code>` (DESIGN.md section 7). */
export function errorDocsUrl(baseUrl: string, code: ErrorCode): string {
  return `${baseUrl}/docs/errors#${code}`;
}

/** What each code means and what the caller can do; served at /docs/errors. */
export const ERROR_DESCRIPTIONS: Readonly<Record<ErrorCode, string>> = {
  invalid_api_key:
    'The Authorization header is missing, is not `Bearer <key>`, or the key is malformed, unknown or revoked. Ask the project operator for a valid key.',
  invalid_body:
    'The body is not valid JSON, is not a JSON object, or a field has the wrong type (for example `stream` or `background` that is not a boolean), or `background: true` comes with `stream: true` (follow a background request with GET /v1/agent/{id}/events instead).',
  missing_message: '`message` is missing, is not a string, or is empty or only white space.',
  message_too_long: '`message` is longer than 100,000 characters.',
  invalid_capabilities:
    '`capabilities` is not a non-empty array, or holds an unknown name. Valid names: chat, research, documents, code, data, files.',
  invalid_tools:
    "A tool definition is malformed or over the limits: name `^[a-zA-Z0-9_]+$` of at most 64 characters, description of at most 1024 characters, `parameters` a JSON Schema whose `type` is `object`, at most 20 tools. One tool's `parameters` is at most 16 KB of JSON, nests arrays and objects at most 32 levels deep and holds at most 256 JSON objects (each subschema and each `properties` counts); all tools' `parameters` together at most 64 KB. These limits are checked before the schema is compiled.",
  invalid_files:
    '`files` is not an array, an item lacks a string `name` or `content`, there are more than 20 files, or a file is larger than 1 MB (1,048,576 bytes of UTF-8).',
  invalid_tool_outputs:
    '`tool_outputs` is malformed (each item needs a string `tool_call_id` and a string `output`), `_compute_instance` is missing, or the outputs do not answer exactly the pending tool calls.',
  tool_output_too_large: 'A single tool output is larger than 100 KB (102,400 bytes of UTF-8).',
  stream_not_supported: '`stream: true` cannot be combined with `tools`: custom tool calls are returned as JSON.',
  insufficient_credits:
    'The project has too few credits left to cover the most this request can cost. Nothing was run. Add credits and retry.',
  capability_not_enabled:
    'A requested capability is not enabled on the project. The message names them; an operator can enable them.',
  plan_restricted:
    "The project's plan does not allow a requested capability or feature (sessions need a project that has purchased credits).",
  context_expired:
    'The tool execution context is gone: it expired 5 minutes after the tool calls were returned, the request finished, the request id is unknown, or `_compute_instance` does not match.',
  session_not_found: 'No session with this id exists in this project.',
  request_not_found: 'No request with this id exists in this project.',
  file_not_found: 'No file with this id exists in this project, or it has passed its retention.',
  not_found: 'No such route.',
  method_not_allowed:
    'The path exists but not with this method (for example TRACE, or PUT on /v1/agent). The `Allow` header lists the methods it takes; the API reference at /docs has them all.',
  idempotency_conflict: 'The Idempotency-Key was used in the last 24 hours with a different body.',
  request_not_cancellable:
    'The request has finished (completed, failed, expired or cancelled already): only a request that is running or waiting for tool outputs can be cancelled.',
  request_cancelled:
    'The request was cancelled with POST /v1/agent/{id}/cancel. Sent as the `code` of the `error` event that ends its stream.',
  session_busy:
    "The session's previous message is still running or waiting for tool outputs: submit its tool outputs, cancel it (POST /v1/agent/{id}/cancel) or wait for its answer, then send the next message. Nothing was recorded.",
  session_expired: 'The session expired after 30 minutes without a message. Start a new session.',
  session_ended: 'The session was ended with DELETE /v1/sessions/{id}. Start a new session.',
  payload_too_large:
    "The request body is larger than 10 MB (a request with a valid API key), or larger than 64 KB on a request nobody has authenticated (any route outside /v1 but the codec endpoint with its token, and an unknown route): such a body is refused before it is read. Also a request whose input files alone are more than the project's plan allows in a day (its input-bytes cap): nothing is stored or run.",
  rate_limited:
    "More than 60 requests in the last 60 seconds for this project, or one of the project's caps reached (its plan's runs in flight, open streams on one server, or input bytes a day; the message says which): nothing was stored or run. Retry after the number of seconds in the Retry-After header.",
  quota_exceeded: "The plan's monthly request quota is used up; it resets at X-RateLimit-Reset.",
  session_limit_reached:
    'The project already has 10 active sessions. End one (DELETE /v1/sessions/{id}) or let one expire.',
  internal_error: 'An unexpected error in the service. It has been logged; retrying may help.',
  compute_error:
    "The language model (the compute service) returned an error, for example a rejected model key. The message carries the provider's reason.",
  compute_unavailable: 'The language model could not be reached after retries.',
  service_unavailable:
    'No language model is configured for the project, or the service cannot reach a component it needs.',
};
