import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { SessionView } from '#libs/contracts';

/** Ends a session of the principal's project (DELETE /v1/sessions/{id}). */
export class EndSessionCommand extends Command<SessionView> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
  ) {
    super();
  }
}
