import type { DataSource } from 'typeorm';
import type { SessionActivities } from '#libs/contracts';
import type { SessionStream } from '#libs/events';

/** Records what the session workflow decided as events on its stream (a local activity: one short
 * transaction). The sessions read model is a projection of that stream (apps/projector). */
export class SessionEventsActivities {
  constructor(
    private readonly db: DataSource,
    private readonly sessions: SessionStream,
  ) {}

  /** An answered message, an expiry or an end, once per workflow `revision` (a retried attempt
   * appends nothing twice); an expiry or an end gives the session's slot back. */
  readonly recordSession: SessionActivities['recordSession'] = async (view) => {
    await this.db.transaction((tx) => this.sessions.recorded(tx, view));
  };
}
