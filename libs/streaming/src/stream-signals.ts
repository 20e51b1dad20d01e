import { Logger } from '@nestjs/common';
import pg from 'pg';

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

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;

/**
 * One PostgreSQL connection per process that LISTENs on mas_stream and hands each notification to
 * the streams waiting on that request (issue 28, DESIGN.md section 10: no per-stream polling).
 * Open streams cost nothing while they wait: PostgreSQL sees one idle connection whether 1 or 500
 * are open. The connection dropping is told to every waiter (`down`: they poll until it is back)
 * and, once it is back, `up` (they read the store once: what they may have missed).
 */
export class StreamSignals {
  private readonly logger = new Logger('stream-signals');
  private readonly listeners = new Map<string, Set<Listener>>();
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private stopped = false;
  private dropped = false;
  private reconnectMs = RECONNECT_MIN_MS;
  private timer: NodeJS.Timeout | undefined;
  /** Whether notifications are being received now. */
  listening = false;

  constructor(private readonly databaseUrl: string) {}

  /** Connects and listens once; later calls wait for the same start. A failed start is retried
   * in the background (meanwhile waiters poll). */
  start(): Promise<void> {
    this.stopped = false;
    this.connecting ??= this.connect().catch((e: unknown) => {
      this.connecting = undefined;
      this.scheduleReconnect();
      throw e;
    });
    return this.connecting;
  }

  /** The listening backend's process id (tests terminate it to drop the connection). */
  get backendPid(): number | undefined {
    return (this.client as unknown as { processID?: number } | undefined)?.processID;
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

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: 'mas-stream-signals' });
    client.on('notification', (message) => this.onNotification(message.payload ?? ''));
    client.on('error', (e) => this.onDrop(client, e));
    client.on('end', () => this.onDrop(client));
    try {
      await client.connect();
      await client.query(`listen ${STREAM_CHANNEL}`);
    } catch (e) {
      await client.end().catch(() => undefined);
      throw e;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.listening = true;
    this.reconnectMs = RECONNECT_MIN_MS;
    if (this.dropped) this.logger.log(`listening on ${STREAM_CHANNEL} again`);
    this.dropped = false;
    this.broadcast({ kind: 'up' });
  }

  private onNotification(payload: string): void {
    const [kind, requestId, seq] = payload.split(' ');
    const set = requestId ? this.listeners.get(requestId) : undefined;
    if (!set) return;
    const signal: StreamSignal | undefined = kind === 'e' ? { kind: 'stored', seq: Number(seq) } : kind === 'r' ? { kind: 'request' } : undefined;
    if (!signal) return;
    for (const listener of [...set]) listener(signal);
  }

  private onDrop(client: pg.Client, error?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.connecting = undefined;
    this.listening = false;
    client.end().catch(() => undefined);
    if (this.stopped) return;
    this.dropped = true;
    this.logger.warn(`${STREAM_CHANNEL} listener dropped (streams poll until it is back): ${error?.message ?? 'connection ended'}`);
    this.reconnectMs = Math.max(this.reconnectMs, RECONNECT_MIN_MS * 2);
    this.broadcast({ kind: 'down' });
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return;
    const delay = this.reconnectMs;
    this.reconnectMs = Math.min(this.reconnectMs * 2, RECONNECT_MAX_MS);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped && !this.connecting) this.start().catch((e: unknown) => this.logger.warn(`${STREAM_CHANNEL} listener not back yet: ${e instanceof Error ? e.message : String(e)}`));
    }, delay);
    this.timer.unref();
  }

  private broadcast(signal: StreamSignal): void {
    for (const set of [...this.listeners.values()]) for (const listener of [...set]) listener(signal);
  }
}
