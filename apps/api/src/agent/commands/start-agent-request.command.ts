import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentRequestBody } from '../../runs/agent-request.validation.js';
import type { StartedRun } from '../../runs/run-gateway.js';

/** Starts the agent request of this id, or joins it when it exists (an Idempotency-Key retry).
 * A closed request answers with its first stop; it never runs twice. Without `stream` or
 * `background` it returns with the first stop; with either, as soon as a worker has taken it up
 * (its events are recorded). */
export class StartAgentRequestCommand extends Command<StartedRun> {
  constructor(
    readonly principal: Principal,
    readonly body: AgentRequestBody,
    readonly requestId: string,
  ) {
    super();
  }
}
