import { createRequire } from 'node:module';
import { jest } from '@jest/globals';
import './request-queue-timeout.js';

interface QueueState {
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  pending: unknown[];
  checkPendingRequests: () => void;
  scheduleCheckPendingRequests(): void;
}

const require = createRequire(import.meta.url);
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype: QueueState };

/** A request queue's state with kafkajs's own methods (as patched); no connection. */
function queue(state: Partial<QueueState>): QueueState & { checks: number } {
  const q = Object.assign(
    Object.create(RequestQueue.prototype) as QueueState & { checks: number },
    { throttledUntil: -1, throttleCheckTimeoutId: null, pending: [], checks: 0 },
    state,
  );
  q.checkPendingRequests = () => {
    q.checks++;
    q.scheduleCheckPendingRequests();
  };
  return q;
}

describe("kafkajs's pending-request check (request-queue-timeout.ts)", () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('schedules nothing for an idle queue: no check every millisecond while nothing waits', () => {
    const q = queue({});
    q.scheduleCheckPendingRequests();
    jest.advanceTimersByTime(1000);
    expect(q.checks).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('checks a queue with waiting requests every 10 ms until they are sent', () => {
    const q = queue({ pending: [{}] });
    q.scheduleCheckPendingRequests();
    jest.advanceTimersByTime(35);
    expect(q.checks).toBe(3);
    q.pending.length = 0;
    jest.advanceTimersByTime(1000);
    expect(q.checks).toBe(4);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('checks a throttled queue when the throttle ends', () => {
    const q = queue({ pending: [{}], throttledUntil: Date.now() + 500 });
    q.scheduleCheckPendingRequests();
    jest.advanceTimersByTime(499);
    expect(q.checks).toBe(0);
    jest.advanceTimersByTime(1);
    expect(q.checks).toBe(1);
  });
});
