export { EVENT_SOURCE, toCloudEvent, type CloudEvent } from './cloud-event.js';
export { deterministicUuid } from './deterministic-id.js';
export { ConcurrencyError, EventStore, OUTBOX_CHANNEL, type NewEvent } from './event-store.js';
export { OutboxRelay } from './outbox-relay.js';
export { EventsModule } from './events.module.js';
export { oldestUnsentAgeSeconds, OutboxProbe, OUTBOX_LAG_LIMIT_S } from './outbox.probe.js';
