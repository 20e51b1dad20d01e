import type { DataSource } from 'typeorm';
import type { AppConfig } from '#libs/config';
import type { PlanName } from '#libs/contracts';
import {
  evolveRequest,
  evolveSession,
  fromStored,
  type DomainEvent,
  type EventStore,
  type RequestStream,
} from '#libs/events';
import type { FileStore } from '#libs/persistence';
import type { WebhookResources } from '#libs/webhooks';
// The api's renderers (libs/resources), so a webhook carries exactly what GET /v1/agent/{id} and
// GET /v1/sessions/{id} show (one renderer per resource).
import { RequestReadModel } from '#libs/read-models';
import { renderAgentResponse, renderRecord } from '#libs/resources';

/**
 * The resource of a webhook event as it stood at that event (its stream folded up to the event's
 * version): a later stop of the same request does not change what an earlier event's webhook
 * carries, however late it is dispatched.
 */
export class WebhookResourceRenderer implements WebhookResources {
  private readonly requests: RequestReadModel;

  constructor(
    private readonly db: DataSource,
    private readonly events: EventStore,
    requestStream: RequestStream,
    private readonly files: FileStore,
    private readonly config: Pick<AppConfig, 'publicBaseUrl' | 'temporal'>,
  ) {
    this.requests = new RequestReadModel(db, requestStream);
  }

  async render(event: DomainEvent): Promise<unknown> {
    const history = (await this.events.readStream(this.db.manager, event.streamId))
      .filter((e) => e.version <= event.version)
      .map(fromStored);
    if (event.streamId.startsWith('agent-request-')) {
      const state = history.reduce(evolveRequest, undefined);
      if (!state) return undefined;
      const stop = await this.requests.stopOf(state);
      const [project] = (await this.db.query(`select plan from projects where id = $1`, [stop.projectId])) as {
        plan: PlanName;
      }[];
      if (!project) return undefined;
      return renderAgentResponse(stop, {
        files: this.files,
        config: this.config,
        plan: project.plan,
        startedAt: performance.now(),
      });
    }
    if (event.streamId.startsWith('session-')) {
      const s = history.reduce(evolveSession, undefined);
      if (!s) return undefined;
      return renderRecord({
        id: s.sessionId,
        projectId: s.projectId,
        status: s.status,
        messageCount: s.messageCount,
        createdAt: new Date(s.createdAt),
        lastActivityAt: new Date(s.lastActivityAt),
        expiresAt: new Date(s.expiresAt),
      });
    }
    return undefined;
  }
}
