import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop } from '#libs/contracts';
import type { AgentRequestBody } from '../../runs/agent-request.validation.js';
import type { IdempotencyClaim, StoredAnswer } from '../../runs/idempotency.js';
import type { IdempotencyRequest } from './create-session.command.js';

/** A session message the session has accepted (or, for a retry, the one an earlier attempt sent):
 * its request id, the key's claim if any, and its first stop when it comes. */
export interface AcceptedSessionMessage {
  readonly kind: 'accepted';
  readonly requestId: string;
  readonly claim?: IdempotencyClaim;
  /** A duplicate: its answer belongs to the attempt that claimed the key. */
  readonly duplicate: boolean;
  /** Admitted by the api before it was sent to the session (a refusal was answered then). */
  readonly admitted: boolean;
  firstStop(): Promise<AgentStop>;
}

/** The saved answer of an earlier attempt with the same Idempotency-Key. */
export interface ReplayedSessionMessage {
  readonly kind: 'replay';
  readonly answer: StoredAnswer;
}

/** Sends a message to a session; returns once the session has accepted it. */
export class SendSessionMessageCommand extends Command<AcceptedSessionMessage | ReplayedSessionMessage> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly body: AgentRequestBody,
    readonly idempotency?: IdempotencyRequest,
  ) {
    super();
  }
}
