import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { StoredAnswer } from '../../runs/idempotency.js';
import type { SessionRecord } from '#libs/resources';

/** An Idempotency-Key and the parsed body it is bound to. */
export interface IdempotencyRequest {
  readonly key: string;
  readonly body: unknown;
}

/** The session created (or, for a retry of a creation that succeeded, the same session), with the
 * claim its answer is saved under; or the saved answer of an earlier attempt with the same key. */
export type CreateSessionOutcome =
  | {
      readonly kind: 'created';
      readonly record: SessionRecord;
      readonly save: (answer: StoredAnswer) => Promise<StoredAnswer>;
    }
  | { readonly kind: 'replay'; readonly answer: StoredAnswer };

/** Starts a session for the principal's project, within its limit of active sessions. */
export class CreateSessionCommand extends Command<CreateSessionOutcome> {
  constructor(
    readonly principal: Principal,
    readonly idempotency?: IdempotencyRequest,
  ) {
    super();
  }
}
