import { Logger } from '@nestjs/common';
import type { Producer, ProducerRecord } from 'kafkajs';
import type { LiveChannel } from './stream-publisher.js';

/** After a failed live publish, how long the worker leaves Kafka alone (readers poll the store). */
export const LIVE_BACKOFF_MS = 5000;

/**
 * mas.stream.v1 as the live channel. Kafka carries only copies of events already stored in
 * PostgreSQL, so a broker that is down never fails a run: a failed send is logged and swallowed,
 * Kafka is left alone for a few seconds, and the next send connects again (a failed connect is
 * never kept).
 */
export class KafkaLiveChannel implements LiveChannel {
  private readonly logger = new Logger('stream-publisher');
  private connected: Promise<void> | undefined;
  private skipUntil = 0;

  constructor(
    private readonly producer: Pick<Producer, 'connect' | 'send' | 'disconnect'>,
    private readonly now: () => number = Date.now,
  ) {}

  async send(record: ProducerRecord): Promise<void> {
    if (this.now() < this.skipUntil) return;
    try {
      this.connected ??= this.producer.connect();
      await this.connected;
      await this.producer.send(record);
    } catch (e) {
      this.connected = undefined;
      this.skipUntil = this.now() + LIVE_BACKOFF_MS;
      this.logger.warn(
        `live stream events not published (readers catch up from the store): ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  async close(): Promise<void> {
    if (this.connected) await this.producer.disconnect().catch(() => undefined);
  }
}
