import { createRequire } from 'node:module';

// kafkajs 2.2.4 (the last release) reschedules its pending-request check after every check, also
// when nothing is pending and nothing is throttled: with `throttledUntil` at -1 the delay is
// negative, Node runs it after 1 ms, and every broker connection of every client checks 1000
// times a second forever (kafkajs issues 1556 and 1704; since Node 24 each also prints a
// TimeoutNegativeWarning). That was 25-30 ms of CPU a second in each idle app with a Kafka client,
// and timers in the worker's event loop beside every request (docs/performance.md, session 6).
// The same method, scheduling only what can need a check: waiting requests (when the throttle
// ends, else in 10 ms, as upstream), or a throttle still running. A request that arrives later
// schedules its own check (kafkajs calls this method from `push`), and a request that completes
// runs the check itself.
const CHECK_PENDING_REQUESTS_INTERVAL = 10;

interface RequestQueueLike {
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  pending: unknown[];
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

const require = createRequire(import.meta.url);
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueueLike };

RequestQueue.prototype.scheduleCheckPendingRequests = function (this: RequestQueueLike) {
  let scheduleAt = this.throttledUntil - Date.now();
  if (!this.throttleCheckTimeoutId) {
    if (this.pending.length > 0) scheduleAt = scheduleAt > 0 ? scheduleAt : CHECK_PENDING_REQUESTS_INTERVAL;
    else if (scheduleAt <= 0) return;
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      Math.max(1, scheduleAt),
    );
  }
};
