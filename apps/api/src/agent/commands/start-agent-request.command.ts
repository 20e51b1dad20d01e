import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop, ChatMessage } from '#libs/contracts';
import type { AgentRequestBody } from '../agent-request.validation.js';

/** Starts an agent request and waits for its first stop; with `attach`, first joins the request
 * of that id if it already exists (an Idempotency-Key replay). */
export class StartAgentRequestCommand extends Command<AgentStop> {
  constructor(
    readonly principal: Principal,
    readonly body: AgentRequestBody,
    readonly requestId: string,
    readonly history: readonly ChatMessage[] = [],
    readonly attach = false,
  ) {
    super();
  }
}

/** A started request: its id, and its first stop when it comes. */
export interface StartedAgentRequest {
  readonly requestId: string;
  firstStop(): Promise<AgentStop>;
}

/** Starts a streamed agent request; returns as soon as a worker has taken it up. */
export class StreamAgentRequestCommand extends Command<StartedAgentRequest> {
  constructor(
    readonly principal: Principal,
    readonly body: AgentRequestBody,
    readonly requestId: string,
    readonly history: readonly ChatMessage[] = [],
  ) {
    super();
  }
}
