import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop } from '#libs/contracts';
import type { ToolOutputsBody } from '../agent-request.validation.js';

/** Delivers tool outputs to a paused request and waits for its next stop. */
export class SubmitToolOutputsCommand extends Command<AgentStop> {
  constructor(
    readonly principal: Principal,
    readonly requestId: string,
    readonly body: ToolOutputsBody,
  ) {
    super();
  }
}
