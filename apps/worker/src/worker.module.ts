import { Module, type DynamicModule } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AccountsModule, AccountsService, McpServersService } from '#libs/accounts';
import { APP_CONFIG, ConfigModule, type AppConfig } from '#libs/config';
import { EventsModule, RequestStream, SessionStream } from '#libs/events';
import { MeteringModule, MeteringService } from '#libs/metering';
import { BlobStore, ConversationStore, FileStore, PersistenceModule } from '#libs/persistence';
import { StreamPublisherModule, StreamPublisherService } from '#libs/streaming';
import { TemporalClientModule, TemporalClientService } from '#libs/temporal';
import { BeginRequestActivity } from './activities/begin-request.activity.js';
import { WebhooksModule, WebhookStore } from '#libs/webhooks';
import { BuiltinToolActivities } from './activities/builtin-tools.activity.js';
import { ConversationActivityHandlers } from './activities/conversation.activity.js';
import { MeteringActivities } from './activities/metering.activity.js';
import { ModelCallActivity } from './activities/model-call.activity.js';
import { ReconcilerActivities } from './activities/reconciler.activity.js';
import { RequestEventsActivities } from './activities/request-events.activity.js';
import { SessionEventsActivities } from './activities/session.activity.js';
import { WebhookDeliveryActivities } from './activities/webhook-delivery.activity.js';
import { SessionEndService } from './session-end.service.js';
import { WebhookDispatchService } from './webhook-dispatch.service.js';

/** The worker's providers; createAgentWorker (and createLongActivityWorker) binds the activities
 * from them. Its background loops come with `forRole`. */
@Module({
  imports: [
    ConfigModule,
    PersistenceModule,
    EventsModule,
    AccountsModule,
    MeteringModule,
    StreamPublisherModule,
    TemporalClientModule,
    WebhooksModule,
  ],
  providers: [
    {
      provide: ModelCallActivity,
      inject: [AccountsService, BlobStore, StreamPublisherService, ConversationStore],
      useFactory: (a: AccountsService, b: BlobStore, s: StreamPublisherService, c: ConversationStore) =>
        new ModelCallActivity(a, b, s.publisher, c),
    },
    { provide: ConversationStore, inject: [DataSource], useFactory: (db: DataSource) => new ConversationStore(db) },
    {
      provide: ConversationActivityHandlers,
      inject: [ConversationStore, BlobStore],
      useFactory: (c: ConversationStore, b: BlobStore) => new ConversationActivityHandlers(c, b),
    },
    {
      provide: MeteringActivities,
      inject: [MeteringService],
      useFactory: (m: MeteringService) => new MeteringActivities(m),
    },
    {
      provide: BeginRequestActivity,
      inject: [MeteringService, BuiltinToolActivities, ConversationActivityHandlers],
      useFactory: (m: MeteringService, t: BuiltinToolActivities, c: ConversationActivityHandlers) =>
        new BeginRequestActivity(m, t, c),
    },
    {
      provide: RequestEventsActivities,
      inject: [DataSource, RequestStream],
      useFactory: (db: DataSource, requests: RequestStream) => new RequestEventsActivities(db, requests),
    },
    {
      provide: ReconcilerActivities,
      inject: [MeteringService, DataSource, SessionStream, TemporalClientService],
      useFactory: (m: MeteringService, db: DataSource, sessions: SessionStream, temporal: TemporalClientService) =>
        new ReconcilerActivities(m, db, sessions, temporal.client!),
    },
    {
      provide: SessionEventsActivities,
      inject: [DataSource, SessionStream],
      useFactory: (db: DataSource, sessions: SessionStream) => new SessionEventsActivities(db, sessions),
    },
    {
      provide: BuiltinToolActivities,
      inject: [BlobStore, FileStore, ConversationStore, APP_CONFIG, McpServersService],
      useFactory: (b: BlobStore, f: FileStore, c: ConversationStore, config: AppConfig, mcp: McpServersService) =>
        // MCP servers are reached like fetch_url: the same allow-list of non-public hosts.
        new BuiltinToolActivities(
          b,
          f,
          c,
          { fetchUrl: { allowHosts: config.fetchUrlAllowHosts } },
          { servers: mcp, options: { allowHosts: config.fetchUrlAllowHosts } },
        ),
    },
    {
      provide: WebhookDeliveryActivities,
      inject: [WebhookStore, APP_CONFIG],
      useFactory: (store: WebhookStore, config: AppConfig) => new WebhookDeliveryActivities(store, config),
    },
  ],
})
export class WorkerModule {
  /** The worker of `role`: the workflows' worker also runs the background loops (the webhook
   * dispatcher's consumer group, the session-end loop); a long-activity worker, the bulkhead, runs
   * its activities and nothing else (its restarts rebalance no consumer group). */
  static forRole(role: AppConfig['temporal']['workerRole']): DynamicModule {
    return { module: WorkerModule, providers: role === 'workflows' ? [WebhookDispatchService, SessionEndService] : [] };
  }
}
