import type { ProducerRecord } from 'kafkajs';
import { TOPICS, type StreamEvent } from '#libs/contracts';
import { requestAttributes, SpanKind, traceHeaders, withSpan } from '#libs/observability';
import type { RequestEvents, StreamStore } from './stream-store.js';

/** A Kafka message on mas.stream.v1: a small batch of one request's events. */
export interface StreamBatch {
  readonly requestId: string;
  readonly events: readonly StreamEvent[];
}

/** Where live batches go. It must not throw: the stored copy is the one that counts. */
export interface LiveChannel {
  send(record: ProducerRecord): Promise<unknown>;
}

/**
 * The worker side of streaming: stores each batch for replay, then publishes it for the live
 * fan-out (stored first, so a replica that sees a gap, or a stream while Kafka is down, is always
 * served from PostgreSQL).
 */
export class StreamPublisher {
  private readonly tokens: TokenFlusher;

  constructor(
    private readonly store: StreamStore,
    private readonly live: LiveChannel,
    tokenIntervalMs = TOKEN_BATCH_MS,
  ) {
    this.tokens = new TokenFlusher(this, tokenIntervalMs);
  }

  /** Numbers `events` after the last stored one and publishes them; returns the next free seq.
   * With `fromSeq` (the workflow's next seq), a re-run of the step that wrote these events there
   * already writes them at the same seqs again (the store keeps them once, so a retried step never
   * adds a second `done`). Safe because one workflow at a time writes a request's stream. */
  async append(
    requestId: string,
    projectId: string,
    events: readonly Omit<StreamEvent, 'seq'>[],
    fromSeq?: number,
  ): Promise<number> {
    let seq = await this.store.seqFor(
      requestId,
      events.map((e) => e.type),
      fromSeq,
    );
    await this.publish(
      requestId,
      projectId,
      events.map((e) => ({ ...e, seq: seq++ })),
    );
    return seq;
  }

  /** The seq after the last stored event of a request (1 for none). */
  nextSeq(requestId: string): Promise<number> {
    return this.store.nextSeq(requestId);
  }

  /** The text of the token events stored from `fromSeq` on. */
  streamedText(requestId: string, projectId: string, fromSeq: number): Promise<string> {
    return this.store.tokenText(requestId, projectId, fromSeq);
  }

  async publish(requestId: string, projectId: string, events: readonly StreamEvent[]): Promise<void> {
    await this.publishAll([{ requestId, projectId, events }]);
  }

  /** Stores the events of one request or several in one statement, then sends them live in one
   * Kafka request (a message per request, as the fan-out reads them). */
  async publishAll(batches: readonly RequestEvents[]): Promise<void> {
    const sent = batches.filter((b) => b.events.length > 0);
    if (sent.length === 0) return;
    await this.store.save(sent);
    // A PRODUCER span when tracing is on, its context in the messages' headers for consumers.
    await withSpan(
      `${TOPICS.stream} publish`,
      SpanKind.PRODUCER,
      {
        ...(sent.length === 1 ? requestAttributes(sent[0]!) : {}),
        'messaging.system': 'kafka',
        'messaging.destination.name': TOPICS.stream,
        'messaging.batch.message_count': sent.length,
      },
      () =>
        this.live.send({
          topic: TOPICS.stream,
          acks: 1,
          messages: sent.map(({ requestId, events }) => ({
            key: requestId,
            value: JSON.stringify({ requestId, events } satisfies StreamBatch),
            headers: traceHeaders(),
          })),
        }),
    );
  }

  /** A writer of one model call's token events: the first goes out at once (time to first token),
   * the rest with every other stream's of this process, in batches at least `tokenIntervalMs`
   * apart (TokenFlusher). */
  tokenWriter(requestId: string, projectId: string, firstSeq: number): TokenWriter {
    return new TokenWriter(this.tokens, requestId, projectId, firstSeq);
  }
}

/** The least time between two sends of token events. 50 ms is 20 updates a second, under what a
 * reader can tell from a token at a time. Each send is one PostgreSQL insert (and its WAL flush)
 * and one Kafka request for every stream of the process together, so the shared engines see 20 a
 * second from a worker however many streams it writes (docs/streaming.md). */
export const TOKEN_BATCH_MS = 50;

/**
 * The token events of every stream a process writes, on their way out together: a send takes what
 * every writer has pending, at least `intervalMs` after the send before it began and never while
 * that one is still out, so a slow store (a loaded database) makes fewer, larger sends instead of
 * a queue behind it, and each request's events leave in order. A stream's first token, and a
 * writer that closes, send at once. A send that fails is tried again request by request, so that
 * one request's events that cannot be stored fail only that request's stream.
 */
class TokenFlusher {
  private pending = new Map<TokenWriter, StreamEvent[]>();
  /** The send that is out, when one is, and the writers whose events it carries. */
  private sending: { done: Promise<void>; writers: ReadonlySet<TokenWriter> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private urgent = false;

  constructor(
    private readonly publisher: StreamPublisher,
    private readonly intervalMs: number,
  ) {}

  add(writer: TokenWriter, event: StreamEvent, urgent: boolean): void {
    const events = this.pending.get(writer);
    if (events) events.push(event);
    else this.pending.set(writer, [event]);
    if (urgent) this.urgent = true;
    this.schedule();
  }

  /** Sends the writer's pending events at once and waits until nothing of it is out. */
  async flush(writer: TokenWriter): Promise<void> {
    while (this.pending.has(writer) || this.sending?.writers.has(writer)) {
      if (this.pending.has(writer)) this.urgent = true;
      this.schedule();
      await this.sending?.done;
    }
  }

  private schedule(): void {
    if (this.sending || this.pending.size === 0) return;
    const wait = this.urgent ? 0 : this.lastSentAt + this.intervalMs - performance.now();
    if (wait <= 0) return this.send();
    this.timer ??= setTimeout(() => this.send(), wait);
  }

  private send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.urgent = false;
    const taken = this.pending;
    this.pending = new Map();
    this.lastSentAt = performance.now();
    const batch = (writers: Iterable<[TokenWriter, StreamEvent[]]>) =>
      [...writers].map(([w, events]) => ({ requestId: w.requestId, projectId: w.projectId, events }));
    const done = this.publisher
      .publishAll(batch(taken))
      .catch(async (e: unknown) => {
        if (taken.size === 1) return [...taken.keys()][0]!.failed(e);
        for (const entry of taken)
          await this.publisher.publishAll(batch([entry])).catch((one: unknown) => entry[0].failed(one));
      })
      .then(() => {
        this.sending = undefined;
        this.schedule();
      });
    this.sending = { done, writers: new Set(taken.keys()) };
  }
}

/** One model call's token events on their way out (TokenFlusher): numbered from `firstSeq`. */
export class TokenWriter {
  private nextSeq: number;
  private failure: unknown;

  constructor(
    private readonly flusher: TokenFlusher,
    readonly requestId: string,
    readonly projectId: string,
    private readonly firstSeq: number,
  ) {
    this.nextSeq = firstSeq;
  }

  /** The seq the next event will get. */
  get seq(): number {
    return this.nextSeq;
  }

  push(content: string): void {
    if (!content) return;
    const first = this.nextSeq === this.firstSeq;
    this.flusher.add(this, { seq: this.nextSeq++, type: 'token', data: { content } }, first);
  }

  /** Sends what is pending and waits for everything sent so far; rethrows a send failure. */
  async close(): Promise<void> {
    await this.flusher.flush(this);
    if (this.failure) throw this.failure;
  }

  /** A send of this writer's events failed (the first failure is the one close reports). */
  failed(e: unknown): void {
    this.failure ??= e;
  }
}
