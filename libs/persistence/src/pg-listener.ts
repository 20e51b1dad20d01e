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
/** A `select 1` this often: a connection that went silent without an error or a reset (a partition,
 * a middlebox that forgot it) tells nothing otherwise. */
const HEARTBEAT_MS = 250;
/** A heartbeat unanswered this long drops the connection: with the interval, within about 1 s of
 * the last answer. */
const HEARTBEAT_TIMEOUT_MS = 700;
/** How far back `current()` vouches: DESIGN.md section 10's bound for a revocation to reach every process. */
const CURRENT_MS = 1000;
/** A connection and its LISTENs not done by then are given up (and retried), not waited on forever. */
const CONNECT_TIMEOUT_MS = 5000;
/** The kernel's belt under the heartbeat: TCP keepalive probes after this long idle. */
const KEEPALIVE_IDLE_MS = 10_000;

/**
 * The process's one PostgreSQL connection that LISTENs (DESIGN.md section 10: one listener per
 * process): open streams (libs/streaming StreamSignals) and the caches of API keys and model
 * credentials (libs/accounts) subscribe to its channels. It connects on the first subscription
 * (a process that never needs it holds no connection), LISTENs on every channel subscribed, and
 * tells each subscriber when it drops (`down`) and when it listens again (`up`), reconnecting with
 * a backoff of 0.1 to 5 s. A heartbeat (`select 1` every 250 ms) finds a connection that died
 * silently: one unanswered for 0.7 s is dropped like one that failed, and `current()` tells the
 * caches whether what was notified up to a second ago has been heard.
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
  private heartbeat: NodeJS.Timeout | undefined;
  /** When the last answered heartbeat (or the LISTENs) of the current connection was sent. */
  private confirmedAt = 0;

  constructor(private readonly databaseUrl: string) {}

  /** Whether notifications are being received now (on `channel`, when named). */
  listening(channel?: string): boolean {
    return this.client !== undefined && (channel === undefined || this.live.has(channel));
  }

  /** Whether every notification committed more than a second ago has been heard: listening, and
   * PostgreSQL answered a heartbeat sent within the last second (the backend sends what was
   * notified before its answer). A connection gone silent stops vouching at once, before its
   * heartbeat times out. */
  current(): boolean {
    return this.client !== undefined && Date.now() - this.confirmedAt < CURRENT_MS;
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
    clearInterval(this.heartbeat);
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    this.live.clear();
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      application_name: 'mas-listener',
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    client.on('notification', (n) => this.onNotification(n.channel, n.payload ?? ''));
    client.on('error', (e) => this.onDrop(client, e));
    client.on('end', () => this.onDrop(client));
    const channels = [...this.channels.keys()];
    let sentAt = 0;
    try {
      await client.connect();
      sentAt = Date.now();
      // Every channel at once: one round trip, and no notification of one channel is lost while another is added.
      if (channels.length)
        await within(client, CONNECT_TIMEOUT_MS, client.query(channels.map((c) => `listen ${c}`).join('; ')));
    } catch (e) {
      await client.end().catch(() => undefined);
      throw e;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.confirmedAt = sentAt;
    this.beat(client);
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

  /** Sends a heartbeat every HEARTBEAT_MS while `client` is the listener's, one at a time, and
   * drops the connection when one goes unanswered for HEARTBEAT_TIMEOUT_MS. */
  private beat(client: pg.Client): void {
    let pending: number | undefined;
    const overdue = () => pending !== undefined && Date.now() - pending >= HEARTBEAT_TIMEOUT_MS;
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      if (this.client !== client) return;
      if (pending === undefined) {
        const sentAt = (pending = Date.now());
        client.query('select 1').then(
          () => {
            pending = undefined;
            if (this.client === client) this.confirmedAt = sentAt;
          },
          // A failed heartbeat is a connection going down: its `error`/`end` reconnects.
          () => undefined,
        );
      } else if (overdue()) {
        // After the event loop was held up, the answer may be waiting in the socket: read it first.
        setImmediate(() => {
          if (this.client === client && overdue())
            this.onDrop(client, new Error(`no answer to a heartbeat in ${HEARTBEAT_TIMEOUT_MS} ms`));
        });
      }
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private onNotification(channel: string, payload: string): void {
    for (const subscriber of [...(this.channels.get(channel) ?? [])]) subscriber.notify(payload);
  }

  private onDrop(client: pg.Client, error?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.connecting = undefined;
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    const channels = [...this.live];
    this.live.clear();
    // With a query unanswered (a silent connection's heartbeat), `end` destroys the socket rather than wait on it.
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

/** `work` on `client`, which is ended (its query cut) if `work` takes longer than `ms`. */
async function within<T>(client: pg.Client, ms: number, work: Promise<T>): Promise<T> {
  const timer = setTimeout(() => void client.end().catch(() => undefined), ms);
  try {
    return await work;
  } finally {
    clearTimeout(timer);
  }
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));
