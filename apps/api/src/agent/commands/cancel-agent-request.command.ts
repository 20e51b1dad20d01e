import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop } from '#libs/contracts';

/** Cancels a running or paused request (a one-shot request or a session's message) and waits for
 * its cancelled stop. */
export class CancelAgentRequestCommand extends Command<AgentStop> {
  constructor(
    readonly principal: Principal,
    readonly requestId: string,
  ) {
    super();
  }
}
