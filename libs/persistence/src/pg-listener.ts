import { Logger } from '@nestjs/common';
import pg from 'pg';

/** What a channel's subscriber hears from the process's listener. */
export interface ChannelSubscriber {
  /** A notification on the channel, delivered at its writer's commit. */
  notify(payload: string): void;
  /** The listening connection dropped: notifications are lost until `up`. */
  down(): void;
  /** Listening on the channel (again, after a drop): what happened meanwhile is to be read afresh. */
  up(): void;
}

const CHANNEL = /^[a-z_][a-z0-9_]*$/;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;

/**
 * The process's one PostgreSQL connection that LISTENs (DESIGN.md section 10: one listener per
 * process): open streams (libs/streaming StreamSignals) and the caches of API keys and model
 * credentials (libs/accounts) subscribe to its channels. It connects on the first subscription
 * (a process that never needs it holds no connection), LISTENs on every channel subscribed, and
 * tells each subscriber when it drops (`down`) and when it listens again (`up`), reconnecting with
 * a backoff of 0.1 to 5 s.
 */
export class PgListener {
  private readonly logger = new Logger('pg-listener');
  private readonly channels = new Map<string, Set<ChannelSubscriber>>();
  /** The channels LISTENed on the current connection. */
  private readonly live = new Set<string>();
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private stopped = false;
  private dropped = false;
  private reconnectMs = RECONNECT_MIN_MS;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly databaseUrl: string) {}

  /** Whether notifications are being received now (on `channel`, when named). */
  listening(channel?: string): boolean {
    return this.client !== undefined && (channel === undefined || this.live.has(channel));
  }

  /** The listening backend's process id (tests terminate it to drop the connection). */
  get backendPid(): number | undefined {
    return (this.client as unknown as { processID?: number } | undefined)?.processID;
  }

  /** Connects and listens once; later calls wait for the same start. A failed start is retried
   * in the background. */
  start(): Promise<void> {
    this.stopped = false;
    this.connecting ??= this.connect().catch((e: unknown) => {
      this.connecting = undefined;
      this.scheduleReconnect();
      throw e;
    });
    return this.connecting;
  }

  /** Subscribes to a channel (starting the listener if it is not); `up` is called once the
   * channel is listened on, at once if it already is. Returns the unsubscribe. */
  subscribe(channel: string, subscriber: ChannelSubscriber): () => void {
    if (!CHANNEL.test(channel)) throw new Error(`not a channel name: ${channel}`);
    const set = this.channels.get(channel) ?? new Set<ChannelSubscriber>();
    set.add(subscriber);
    this.channels.set(channel, set);
    if (this.live.has(channel)) subscriber.up();
    else if (this.client) this.listenOn(this.client, channel);
    else if (!this.stopped) this.start().catch((e: unknown) => this.logger.warn(`not listening yet: ${message(e)}`));
    return () => {
      set.delete(subscriber);
      if (set.size === 0 && this.channels.get(channel) === set) this.channels.delete(channel);
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    this.live.clear();
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: 'mas-listener' });
    client.on('notification', (n) => this.onNotification(n.channel, n.payload ?? ''));
    client.on('error', (e) => this.onDrop(client, e));
    client.on('end', () => this.onDrop(client));
    const channels = [...this.channels.keys()];
    try {
      await client.connect();
      // Every channel at once: one round trip, and no notification of one channel is lost while another is added.
      if (channels.length) await client.query(channels.map((c) => `listen ${c}`).join('; '));
    } catch (e) {
      await client.end().catch(() => undefined);
      throw e;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.reconnectMs = RECONNECT_MIN_MS;
    if (this.dropped) this.logger.log('listening again');
    this.dropped = false;
    for (const channel of channels) this.listened(channel);
    // Channels subscribed while connecting.
    for (const channel of this.channels.keys()) if (!this.live.has(channel)) this.listenOn(client, channel);
  }

  private listenOn(client: pg.Client, channel: string): void {
    client.query(`listen ${channel}`).then(
      () => {
        if (this.client === client) this.listened(channel);
      },
      // A failed LISTEN is a connection going down: its `error`/`end` reconnects.
      (e: unknown) => this.logger.warn(`listen ${channel} failed: ${message(e)}`),
    );
  }

  private listened(channel: string): void {
    if (this.live.has(channel)) return;
    this.live.add(channel);
    for (const subscriber of [...(this.channels.get(channel) ?? [])]) subscriber.up();
  }

  private onNotification(channel: string, payload: string): void {
    for (const subscriber of [...(this.channels.get(channel) ?? [])]) subscriber.notify(payload);
  }

  private onDrop(client: pg.Client, error?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.connecting = undefined;
    const channels = [...this.live];
    this.live.clear();
    client.end().catch(() => undefined);
    if (this.stopped) return;
    this.dropped = true;
    this.logger.warn(
      `listener dropped (${channels.join(', ') || 'no channel'}): ${error?.message ?? 'connection ended'}`,
    );
    this.reconnectMs = Math.max(this.reconnectMs, RECONNECT_MIN_MS * 2);
    for (const channel of channels) for (const subscriber of [...(this.channels.get(channel) ?? [])]) subscriber.down();
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return;
    const delay = this.reconnectMs;
    this.reconnectMs = Math.min(this.reconnectMs * 2, RECONNECT_MAX_MS);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped && !this.connecting)
        this.start().catch((e: unknown) => this.logger.warn(`not back yet: ${message(e)}`));
    }, delay);
    this.timer.unref();
  }
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));
