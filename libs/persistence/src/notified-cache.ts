import type { PgListener } from './pg-listener.js';

export interface NotifiedCacheOptions<V> {
  /** The channel whose notifications name what changed (a payload is compared with `tagOf`). */
  readonly channel: string;
  /** At most this many entries; the least recently used goes first. */
  readonly maxEntries: number;
  /** An entry is read again after this long whatever was heard (a belt: the notifications are
   * what keeps the cache right). */
  readonly ttlMs: number;
  /** The notification payload that invalidates a value (the row id its trigger sends). */
  readonly tagOf: (value: V) => string;
}

interface Entry<V> {
  readonly value: V;
  readonly tag: string;
  readonly expiresAt: number;
}

/**
 * Values read from PostgreSQL, kept only while the process's listener hears the channel their
 * writes notify on (DESIGN.md section 10): an entry goes when a notification names it, the whole
 * cache goes when the listening connection drops, and nothing is kept until it listens again
 * (meanwhile every read goes to PostgreSQL). Nothing is answered from memory either while the
 * listener cannot vouch that it heard what was notified up to a second ago (`PgListener.current`: a
 * connection gone silent, before its heartbeat drops it). Misses are never kept, so a row written after one is
 * found by the next read. A read that overlapped a notification or a drop is not kept either: it
 * may hold what the notification invalidated.
 */
export class NotifiedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly byTag = new Map<string, Set<string>>();
  private usable = false;
  /** Moves on every notification, drop and reconnect: a read that saw it move is not kept. */
  private epoch = 0;
  private readonly unsubscribe: () => void;
  /** Reads answered from memory and from PostgreSQL (for tests and measurements). */
  readonly stats = { hits: 0, misses: 0 };

  constructor(
    private readonly listener: PgListener,
    private readonly options: NotifiedCacheOptions<V>,
    private readonly now: () => number = Date.now,
  ) {
    this.unsubscribe = listener.subscribe(options.channel, {
      notify: (tag) => this.invalidate(tag),
      down: () => this.reset(false),
      up: () => this.reset(true),
    });
  }

  /** Whether values are kept now (the channel is listened on). */
  get active(): boolean {
    return this.usable;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value under `key`, from memory or else from `load` (kept when found and nothing was heard meanwhile). */
  async get(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const entry = this.entries.get(key);
    if (entry && this.usable && entry.expiresAt > this.now() && this.listener.current()) {
      // Most recently used last: Map keeps insertion order.
      this.entries.delete(key);
      this.entries.set(key, entry);
      this.stats.hits++;
      return entry.value;
    }
    if (entry) this.remove(key, entry.tag);
    this.stats.misses++;
    const epoch = this.epoch;
    const value = await load();
    if (value !== null && this.usable && this.epoch === epoch) this.put(key, value);
    return value;
  }

  /** Stops hearing the channel and empties the cache. */
  close(): void {
    this.unsubscribe();
    this.reset(false);
  }

  private put(key: string, value: V): void {
    const tag = this.options.tagOf(value);
    const old = this.entries.get(key);
    if (old) this.remove(key, old.tag);
    this.entries.set(key, { value, tag, expiresAt: this.now() + this.options.ttlMs });
    const keys = this.byTag.get(tag) ?? new Set<string>();
    keys.add(key);
    this.byTag.set(tag, keys);
    while (this.entries.size > this.options.maxEntries) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, Entry<V>];
      this.remove(oldestKey, oldest.tag);
    }
  }

  private remove(key: string, tag: string): void {
    this.entries.delete(key);
    const keys = this.byTag.get(tag);
    keys?.delete(key);
    if (keys?.size === 0) this.byTag.delete(tag);
  }

  private invalidate(tag: string): void {
    this.epoch++;
    for (const key of this.byTag.get(tag) ?? []) this.entries.delete(key);
    this.byTag.delete(tag);
  }

  private reset(usable: boolean): void {
    this.epoch++;
    this.usable = usable;
    this.entries.clear();
    this.byTag.clear();
  }
}
