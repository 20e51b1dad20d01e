import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop } from '#libs/contracts';
import type { ToolOutputsBody } from '../../runs/agent-request.validation.js';

/** Delivers tool outputs to a paused request and waits for its next stop. `bodyHash` (of the parsed
 * body) makes the submission's Update id: the same submission sent again gets the answer it got. */
export class SubmitToolOutputsCommand extends Command<AgentStop> {
  constructor(
    readonly principal: Principal,
    readonly requestId: string,
    readonly body: ToolOutputsBody,
    readonly bodyHash: string,
  ) {
    super();
  }
}
