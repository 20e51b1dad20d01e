import { createRequire } from 'node:module';

// kafkajs 2.2.4 (the last release) schedules its throttle check with `throttledUntil - Date.now()`
// while `throttledUntil` is 0, a negative delay. Node clamps it to 1 ms as it always did, but since
// Node 24 also prints a TimeoutNegativeWarning on stderr for it, a line that is not JSON in every
// app's log. The same method with the delay clamped; nothing else changes.
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
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      Math.max(1, scheduleAt),
    );
  }
};
