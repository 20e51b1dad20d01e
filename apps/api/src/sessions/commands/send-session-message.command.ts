import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop } from '#libs/contracts';
import type { AgentRequestBody } from '../../agent/agent-request.validation.js';

/** A session message the session has accepted: its request id, and its first stop when it comes
 * (it waits behind earlier messages of the session). */
export interface AcceptedSessionMessage {
  readonly requestId: string;
  firstStop(): Promise<AgentStop>;
}

/** Sends a message to a session; returns once the session has accepted it. */
export class SendSessionMessageCommand extends Command<AcceptedSessionMessage> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly body: AgentRequestBody,
    readonly requestId: string,
  ) {
    super();
  }
}
