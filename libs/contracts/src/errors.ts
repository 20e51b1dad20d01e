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
  idempotency_conflict: 409,
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
