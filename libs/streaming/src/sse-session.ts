import type { Response } from 'express';
import type { StreamEvent } from '#libs/contracts';
import type { StreamHub } from './stream-hub.js';
import type { StreamSignal, StreamSignals } from './stream-signals.js';
import type { StreamStore } from './stream-store.js';

/** How often an idle stream gets a comment, so proxies do not cut it. */
export const KEEP_ALIVE_MS = 15_000;
/** Without the process's listener (StreamSignals, or while its connection is down), a stream with no
 * live event for this long checks the store. */
const POLL_MS = 1000;
/** How long a stream told that events were stored gives the live path (Kafka) to bring them before
 * it reads them from the store. */
const LIVE_GRACE_MS = 200;
/** A run's end seen in its read model but not in the store is written after this, if the store
 * still lacks it: a streamed run stores its end a few milliseconds after its stop is recorded. */
const END_GRACE_MS = 1000;
/** Live events held for a slow client before it is switched to catching up from PostgreSQL. */
const MAX_QUEUED = 500;

export interface SseOptions {
  readonly requestId: string;
  readonly projectId: string;
  /** The last event the client has (Last-Event-ID); 0 for all. */
  readonly afterSeq: number;
  /** Adds what the stored payload lacks, e.g. `docs` on error events. */
  readonly decorate?: (event: StreamEvent) => Record<string, unknown>;
  /** The run's end event when the run has finished (from its read model), else undefined: ends a
   * stream whose store holds no end (a request that was not streamed, or whose events expired). */
  readonly endOf?: () => Promise<Omit<StreamEvent, 'seq'> | undefined>;
}

/**
 * One SSE connection: live events from the hub, gaps and replays from the store, each event
 * written once in seq order; ends after `done` or `error`. The agent run does not depend on it:
 * a client that goes away cancels nothing.
 */
export class SseSession {
  private lastSent: number;
  private finished = false;
  private chain: Promise<void> = Promise.resolve();
  private queued = 0;
  private lagging = false;
  private lastWriteAt = Date.now();
  /** The highest seq the listener said is stored. */
  private storedSeq = 0;
  private graceTimer: NodeJS.Timeout | undefined;
  private endTimer: NodeJS.Timeout | undefined;
  private resolveEnd!: () => void;
  readonly ended = new Promise<void>((resolve) => (this.resolveEnd = resolve));

  constructor(
    private readonly res: Response,
    private readonly hub: StreamHub,
    private readonly store: StreamStore,
    private readonly options: SseOptions,
    /** The process's listener: the stream waits on it instead of polling the store (issue 28). */
    private readonly signals?: StreamSignals,
  ) {
    this.lastSent = options.afterSeq;
  }

  /** Sends the headers (already set by the caller) and streams until the run ends or the client leaves. */
  async run(): Promise<void> {
    const { res } = this;
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    const unsubscribe = this.hub.subscribe(this.options.requestId, (events) => this.onLive(events));
    const unlisten = this.signals?.subscribe(this.options.requestId, (signal) => this.onSignal(signal));
    const keepAlive = setInterval(() => {
      if (!this.finished) res.write(': keep-alive\n\n');
    }, KEEP_ALIVE_MS);
    // Polls only while no listener tells this stream what changed.
    const poll = setInterval(() => {
      if (!this.signals?.listening && Date.now() - this.lastWriteAt >= POLL_MS) this.enqueue(() => this.catchUpOrEnd());
    }, POLL_MS);
    res.on('close', () => this.finish());
    // A client that left before this listener was attached (while the api authenticated, admitted
    // or started the run) closed the connection unseen: end at once, or the session would poll
    // the store until the run ended (issue 28).
    if (res.destroyed || res.socket?.destroyed !== false) this.finish();
    res.on('drain', () => {
      if (this.lagging) {
        this.lagging = false;
        this.enqueue(() => this.catchUpOrEnd());
      }
    });
    this.enqueue(() => this.catchUpOrEnd());
    try {
      await this.ended;
    } finally {
      clearInterval(keepAlive);
      clearInterval(poll);
      clearTimeout(this.graceTimer);
      clearTimeout(this.endTimer);
      unsubscribe();
      unlisten?.();
    }
  }

  /** Writes an event that exists only here (e.g. an error before the run could start). */
  fail(type: 'error', data: Record<string, unknown>): void {
    this.enqueue(async () => this.write([{ seq: this.lastSent + 1, type, data }]));
  }

  /** Ends the stream with `end` (`done` or `error`) after what the store holds: the end of a run
   * that did not store its own. */
  end(end: Omit<StreamEvent, 'seq'>): void {
    this.enqueue(async () => {
      await this.catchUp();
      this.write([{ ...end, seq: this.lastSent + 1 }]);
    });
  }

  private onLive(events: readonly StreamEvent[]): void {
    if (this.lagging) return; // caught up from the store once the client drains
    if (this.queued > MAX_QUEUED) {
      // The store has everything: drop the live copies and catch up from it instead.
      this.lagging = true;
      this.enqueue(async () => {
        this.lagging = false;
        await this.catchUp();
      });
      return;
    }
    this.queued += events.length;
    this.enqueue(async () => {
      this.queued -= events.length;
      // The batch's events that follow on from what was sent leave together; a gap is filled from
      // the store first.
      const next: StreamEvent[] = [];
      for (const event of events) {
        const expected = (next.at(-1)?.seq ?? this.lastSent) + 1;
        if (event.seq < expected) continue;
        if (event.seq > expected) {
          this.write(next.splice(0));
          await this.catchUp();
          if (event.seq !== this.lastSent + 1) continue;
        }
        next.push(event);
      }
      this.write(next);
    });
  }

  private onSignal(signal: StreamSignal): void {
    if (this.finished) return;
    if (signal.kind === 'stored') {
      // Kafka brings stored events in a few milliseconds; the store is read only for what it did not.
      this.storedSeq = Math.max(this.storedSeq, signal.seq);
      if (this.storedSeq <= this.lastSent || this.graceTimer) return;
      this.graceTimer = setTimeout(() => {
        this.graceTimer = undefined;
        if (this.storedSeq > this.lastSent) this.enqueue(() => this.catchUp());
      }, LIVE_GRACE_MS);
    } else if (signal.kind === 'request') {
      if (this.options.endOf) this.enqueue(() => this.catchUpOrEnd());
    } else if (signal.kind === 'up') {
      // Back after a drop: what was stored or recorded meanwhile was not told; read it once.
      this.enqueue(() => this.catchUpOrEnd());
    }
  }

  /** Writes everything the store has after the last event sent. */
  private async catchUp(): Promise<void> {
    for (;;) {
      if (this.finished || this.lagging) return;
      const events = await this.store.after(this.options.requestId, this.options.projectId, this.lastSent, 200);
      this.write(events);
      if (events.length < 200) return;
    }
  }

  /** What the store has, then, if the run has finished without its end stored, that end. A
   * streamed run stores its end event a few milliseconds after its stop is recorded, so the end is
   * written only if the store still lacks it a moment later. Run at the start, on each notification
   * that the request moved (a stop recorded), after the listener came back, and by idle polls
   * while there is no listener. */
  private async catchUpOrEnd(): Promise<void> {
    await this.catchUp();
    if (this.finished || this.lagging || !this.options.endOf || this.endTimer) return;
    const end = await this.options.endOf();
    if (!end || this.finished) return;
    this.endTimer = setTimeout(() => {
      this.enqueue(async () => {
        await this.catchUp();
        if (!this.lagging) this.write([{ ...end, seq: this.lastSent + 1 }]);
        else this.endTimer = undefined; // a slow client: the next read decides again
      });
    }, END_GRACE_MS);
  }

  /** Writes `events` in one write to the connection, up to an end (`done`, `error`), which ends
   * the stream. One write a batch: beside ten streams held open, a write (and a system call) a token
   * event was 0.7 s of the api's CPU in 40 s (issue 28, the noisy-neighbour phase). */
  private write(events: readonly StreamEvent[]): void {
    if (this.finished || events.length === 0) return;
    let text = '';
    let ends = false;
    for (const event of events) {
      const payload = { type: event.type, ...event.data, ...this.options.decorate?.(event) };
      text += `event: ${event.type}\nid: ${event.seq}\ndata: ${JSON.stringify(payload)}\n\n`;
      this.lastSent = Math.max(this.lastSent, event.seq);
      ends = event.type === 'done' || event.type === 'error';
      if (ends) break;
    }
    const ok = this.res.write(text);
    this.lastWriteAt = Date.now();
    if (ends) this.finish();
    else if (!ok) this.lagging = true;
  }

  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(step).catch(() => this.finish());
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    if (!this.res.writableEnded) this.res.end();
    this.resolveEnd();
  }
}
