export { EVENT_SOURCE, toCloudEvent, type CloudEvent } from './cloud-event.js';
export { deterministicUuid } from './deterministic-id.js';
export { ConcurrencyError, EventStore, OUTBOX_CHANNEL, type NewEvent } from './event-store.js';
export { OutboxRelay } from './outbox-relay.js';
export { EventsModule } from './events.module.js';
export { oldestUnsentAgeSeconds, OutboxProbe, OUTBOX_LAG_LIMIT_S } from './outbox.probe.js';
export {
  fromCloudEvent,
  fromStored,
  pastRetention,
  READ_MODEL_EXPIRED,
  READ_MODEL_RETENTION_MS,
  type DomainEvent,
} from './streams/domain-event.js';
export {
  evolveRequest,
  isRequestEvent,
  requestStateFromRow,
  type RequestRow,
  type RequestState,
} from './streams/request-state.js';
export {
  evolveSession,
  isSessionEvent,
  sessionStateFromRow,
  type SessionRow,
  type SessionState,
} from './streams/session-state.js';
export { RequestStream } from './streams/request-stream.js';
export { SessionStream } from './streams/session-stream.js';
