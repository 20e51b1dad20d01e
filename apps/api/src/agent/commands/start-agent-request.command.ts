import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop } from '#libs/contracts';
import type { AgentRequestBody } from '../agent-request.validation.js';

/** Starts the agent request of this id, or joins it when it exists (an Idempotency-Key retry),
 * and waits for its first stop. A closed request answers with its first stop; it never runs twice. */
export class StartAgentRequestCommand extends Command<AgentStop> {
  constructor(
    readonly principal: Principal,
    readonly body: AgentRequestBody,
    readonly requestId: string,
  ) {
    super();
  }
}

/** A started request: its id, and its first stop when it comes. */
export interface StartedAgentRequest {
  readonly requestId: string;
  firstStop(): Promise<AgentStop>;
}

/** Starts (or joins) a streamed or background agent request (its events are recorded); returns as
 * soon as a worker has taken it up. */
export class StreamAgentRequestCommand extends Command<StartedAgentRequest> {
  constructor(
    readonly principal: Principal,
    readonly body: AgentRequestBody,
    readonly requestId: string,
  ) {
    super();
  }
}
