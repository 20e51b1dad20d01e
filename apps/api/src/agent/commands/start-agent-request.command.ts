import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop, ChatMessage } from '#libs/contracts';
import type { AgentRequestBody } from '../agent-request.validation.js';

/** Starts an agent request and waits for its first stop. */
export class StartAgentRequestCommand extends Command<AgentStop> {
  constructor(
    readonly principal: Principal,
    readonly body: AgentRequestBody,
    readonly requestId: string,
    readonly history: readonly ChatMessage[] = [],
  ) {
    super();
  }
}
