export { StreamHub } from './stream-hub.js';
export { STREAM_CHANNEL, StreamSignals, type StreamSignal } from './stream-signals.js';
export { StreamPublisher, TokenWriter, type LiveChannel, type StreamBatch } from './stream-publisher.js';
export { KEEP_ALIVE_MS, SseSession, type SseOptions } from './sse-session.js';
export { STREAM_RETENTION_SECONDS, StreamStore } from './stream-store.js';
export {
  StreamHubModule,
  StreamHubService,
  StreamPublisherModule,
  StreamPublisherService,
} from './streaming.module.js';
