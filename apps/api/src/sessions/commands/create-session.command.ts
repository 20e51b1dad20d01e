import { Command } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { SessionRecord } from '../sessions.repository.js';

/** Starts a session for the principal's project, within its limit of active sessions. */
export class CreateSessionCommand extends Command<SessionRecord> {
  constructor(readonly principal: Principal) {
    super();
  }
}
