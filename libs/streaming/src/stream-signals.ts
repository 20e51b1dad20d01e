import type { PgListener } from '#libs/persistence';

/** The channel the writes of stream events and of request streams notify on (migration 1763700000045). */
export const STREAM_CHANNEL = 'mas_stream';

/**
 * What a waiting stream hears:
 * - `stored`: events of its request were stored in PostgreSQL, up to `seq`;
 * - `request`: its request's event stream moved (admitted, a stop recorded, tool outputs taken);
 * - `down`: the listening connection dropped (notifications may be lost until `up`);
 * - `up`: listening again after a drop: whatever happened meanwhile is to be read once.
 */
export type StreamSignal = { kind: 'stored'; seq: number } | { kind: 'request' } | { kind: 'down' } | { kind: 'up' };
type Listener = (signal: StreamSignal) => void;

/**
 * The mas_stream channel of the process's one listener (libs/persistence PgListener), handed to
 * the streams waiting on each request (issue 28, DESIGN.md section 10: no per-stream polling).
 * Open streams cost nothing while they wait: PostgreSQL sees one idle connection whether 1 or 500
 * are open. The connection dropping is told to every waiter (`down`: they poll until it is back)
 * and, once it is back, `up` (they read the store once: what they may have missed).
 */
export class StreamSignals {
  private readonly listeners = new Map<string, Set<Listener>>();
  private unsubscribe: (() => void) | undefined;
  private ready: Promise<void> | undefined;
  private resolveReady: (() => void) | undefined;

  constructor(private readonly listener: PgListener) {}

  /** Whether notifications are being received now. */
  get listening(): boolean {
    return this.listener.listening(STREAM_CHANNEL);
  }

  /** The listening backend's process id (tests terminate it to drop the connection). */
  get backendPid(): number | undefined {
    return this.listener.backendPid;
  }

  /** Subscribes to mas_stream once; resolves when it is listened on. A failed connection is
   * retried by the listener in the background (meanwhile waiters poll). */
  start(): Promise<void> {
    if (!this.unsubscribe) {
      this.ready = new Promise<void>((resolve) => (this.resolveReady = resolve));
      this.unsubscribe = this.listener.subscribe(STREAM_CHANNEL, {
        notify: (payload) => this.onNotification(payload),
        down: () => this.broadcast({ kind: 'down' }),
        up: () => {
          this.resolveReady?.();
          this.broadcast({ kind: 'up' });
        },
      });
    }
    return this.listener.start().then(() => this.ready);
  }

  subscribe(requestId: string, listener: Listener): () => void {
    const set = this.listeners.get(requestId) ?? new Set<Listener>();
    set.add(listener);
    this.listeners.set(requestId, set);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(requestId) === set) this.listeners.delete(requestId);
    };
  }

  /** Stops hearing mas_stream (the listener itself is the process's, stopped with it). */
  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private onNotification(payload: string): void {
    const [kind, requestId, seq] = payload.split(' ');
    const set = requestId ? this.listeners.get(requestId) : undefined;
    if (!set) return;
    const signal: StreamSignal | undefined =
      kind === 'e' ? { kind: 'stored', seq: Number(seq) } : kind === 'r' ? { kind: 'request' } : undefined;
    if (!signal) return;
    for (const listener of [...set]) listener(signal);
  }

  private broadcast(signal: StreamSignal): void {
    for (const set of [...this.listeners.values()]) for (const listener of [...set]) listener(signal);
  }
}
