import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { Consumer, Kafka } from 'kafkajs';
import { TOPICS, type StreamEvent } from '#libs/contracts';
import type { StreamBatch } from './stream-publisher.js';

type Listener = (events: readonly StreamEvent[]) => void;

/** How long joining the consumer group may take before the hub gives up until the next stream. */
const JOIN_TIMEOUT_MS = 10_000;

/**
 * The api side of the live fan-out: every api replica consumes mas.stream.v1 in a group of its
 * own, from the latest offset, and hands each batch to the connections it holds for that request.
 */
export class StreamHub {
  private readonly logger = new Logger('stream-hub');
  /** This replica's consumer group: its own, so that every replica gets every batch. */
  readonly groupId = `mas-api-stream-${randomUUID()}`;
  private readonly listeners = new Map<string, Set<Listener>>();
  private consumer: Consumer | undefined;
  private ready: Promise<void> | undefined;

  constructor(private readonly kafka: Kafka) {}

  /** Joins the topic once; later calls wait for the same start. */
  start(): Promise<void> {
    this.ready ??= this.join().catch((e: unknown) => {
      this.ready = undefined;
      throw e;
    });
    return this.ready;
  }

  subscribe(requestId: string, listener: Listener): () => void {
    const set = this.listeners.get(requestId) ?? new Set<Listener>();
    set.add(listener);
    this.listeners.set(requestId, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(requestId);
    };
  }

  async stop(): Promise<void> {
    // A consumer stopped in the middle of joining its group crashes later: let the join finish.
    await this.ready?.catch(() => undefined);
    await this.consumer?.stop();
    await this.consumer?.disconnect();
    this.consumer = undefined;
    this.ready = undefined;
  }

  /** Hands one fan-out message (key: its request id) to that request's listeners; a message of a
   * request no stream here waits for is dropped unparsed. */
  private deliver(key: Buffer | null, value: Buffer | null): void {
    if (!value || !key) return;
    const set = this.listeners.get(key.toString());
    if (!set) return;
    const batch = JSON.parse(value.toString('utf8')) as StreamBatch;
    for (const listener of set) listener(batch.events);
  }

  private async join(): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: this.groupId,
      allowAutoTopicCreation: false,
      // The broker answers a fetch as soon as it has a byte (minBytes 1), so a longer wait delays
      // no batch; it only spares an idle api 20 empty fetches a second.
      maxWaitTimeInMs: 1_000,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPICS.stream, fromBeginning: false });
    let joined!: () => void;
    const whenJoined = new Promise<void>((resolve) => (joined = resolve));
    const off = consumer.on(consumer.events.GROUP_JOIN, () => joined());
    await consumer.run({
      // The group is this replica's alone and always starts from the latest offset: an offset it
      // committed would never be read, so committing one after every fetch is a Kafka request
      // for nothing.
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) this.deliver(message.key, message.value);
      },
    });
    // A group join that never comes (a broker that went away mid-join) must not hold the stream:
    // give up, and the next stream tries again (meanwhile SSE sessions poll the store).
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no group join within ${JOIN_TIMEOUT_MS} ms`)), JOIN_TIMEOUT_MS);
    });
    try {
      await Promise.race([whenJoined, timeout]);
    } catch (e) {
      await consumer.disconnect().catch(() => undefined);
      throw e;
    } finally {
      clearTimeout(timer);
      off();
    }
    this.consumer = consumer;
    this.logger.log('consuming mas.stream.v1');
  }
}
