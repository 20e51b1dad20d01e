import type { ProducerRecord } from 'kafkajs';
import { TOPICS, type StreamEvent } from '#libs/contracts';
import { requestAttributes, SpanKind, traceHeaders, withSpan } from '#libs/observability';
import type { StreamStore } from './stream-store.js';

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
  constructor(
    private readonly store: StreamStore,
    private readonly live: LiveChannel,
  ) {}

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
    if (events.length === 0) return;
    await this.store.save(requestId, projectId, events);
    const batch: StreamBatch = { requestId, events };
    // A PRODUCER span when tracing is on, its context in the message's headers for consumers.
    await withSpan(
      `${TOPICS.stream} publish`,
      SpanKind.PRODUCER,
      {
        ...requestAttributes({ requestId, projectId }),
        'messaging.system': 'kafka',
        'messaging.destination.name': TOPICS.stream,
      },
      () =>
        this.live.send({
          topic: TOPICS.stream,
          acks: 1,
          messages: [{ key: requestId, value: JSON.stringify(batch), headers: traceHeaders() }],
        }),
    );
  }

  /** A writer that batches token events: the first goes out at once (time to first token), the
   * rest in batches at least `intervalMs` apart, one at a time (TokenWriter). */
  tokenWriter(requestId: string, projectId: string, firstSeq: number, intervalMs = TOKEN_BATCH_MS): TokenWriter {
    return new TokenWriter(this, requestId, projectId, firstSeq, intervalMs);
  }
}

/** The least time between two batches of one stream's tokens. 50 ms is 20 updates a second, under
 * what a reader can tell from a token at a time; each batch is a PostgreSQL insert (and its WAL
 * flush), a NOTIFY and a Kafka message, so with the provider's pace of a token every 10-30 ms
 * this is 2-3 times fewer of each than the 15 ms it was (docs/streaming.md). */
export const TOKEN_BATCH_MS = 50;

/**
 * One model call's token events on their way out: the first at once, then a batch of what came
 * since, at least `intervalMs` after the batch before it began and never while that one is still
 * being sent. So a slow store (a loaded database) makes fewer, larger batches instead of a queue
 * of small ones behind it, and the events leave in order.
 */
export class TokenWriter {
  private pending: StreamEvent[] = [];
  private nextSeq: number;
  private timer: NodeJS.Timeout | undefined;
  /** The batch being sent, when one is. */
  private sending: Promise<void> | undefined;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private failure: unknown;
  private closing = false;

  constructor(
    private readonly publisher: StreamPublisher,
    private readonly requestId: string,
    private readonly projectId: string,
    firstSeq: number,
    private readonly intervalMs: number,
  ) {
    this.nextSeq = firstSeq;
  }

  /** The seq the next event will get. */
  get seq(): number {
    return this.nextSeq;
  }

  push(content: string): void {
    if (!content) return;
    this.pending.push({ seq: this.nextSeq++, type: 'token', data: { content } });
    this.schedule();
  }

  /** Sends what is pending and waits for everything sent so far; rethrows a send failure. */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.sending || this.pending.length) {
      if (!this.sending) this.send();
      await this.sending;
    }
    if (this.failure) throw this.failure;
  }

  /** The next batch's send, once the one out has returned and the interval since it began passed. */
  private schedule(): void {
    if (this.closing || this.sending || this.timer || this.pending.length === 0) return;
    const wait = this.lastSentAt + this.intervalMs - performance.now();
    if (wait <= 0) this.send();
    else this.timer = setTimeout(() => this.send(), wait);
  }

  private send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    this.lastSentAt = performance.now();
    this.sending = this.publisher
      .publish(this.requestId, this.projectId, batch)
      .catch((e: unknown) => {
        this.failure ??= e;
      })
      .then(() => {
        this.sending = undefined;
        this.schedule();
      });
  }
}
