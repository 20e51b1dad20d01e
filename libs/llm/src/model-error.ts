/** Why a model call failed: the provider refused it, could not answer, or answered nonsense. */
export type ModelErrorKind = 'rejected' | 'unavailable' | 'invalid_response';

/** The one error `callModel` throws; `retryable` tells the activity's retry policy what to do. */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly kind: ModelErrorKind;
  readonly retryable: boolean;
  /** The provider's HTTP status, when it answered with one. */
  readonly status?: number;

  constructor(
    message: string,
    options: { kind: ModelErrorKind; status?: number; retryable?: boolean; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = options.kind;
    // Only an unavailable provider may answer differently on a second try.
    this.retryable = options.retryable ?? options.kind === 'unavailable';
    if (options.status !== undefined) this.status = options.status;
  }
}
