import type { EntityManager } from 'typeorm';
import type { Topic } from '#libs/contracts';
import type { CloudEvent, DomainEvent } from '#libs/events';

/** Where a projection writes: its own table names, or a rebuild's new versions of them. */
export type TableNames = Readonly<Record<string, string>>;

/** A read model built from one topic. `apply` runs inside the transaction that also records the
 * event as processed, so a redelivered event changes nothing. */
export interface Projection {
  readonly name: string;
  readonly topic: Topic;
  /** The tables it owns: a rebuild writes new versions of them and swaps them in. */
  readonly tables: readonly string[];
  /** Whether a rebuild can read its events from the event store (`events`) instead of Kafka
   * (then `rebuild` says how). */
  readonly fromEventStore: boolean;
  /** A rebuild from the event store (libs/read-models/src/rebuild.ts): one row per stream. */
  readonly rebuild?: EventStoreRebuild;
  /** Whether an event of its topic concerns this read model (by its stream or type): the others
   * are passed over without a transaction or a processed-event row. */
  accepts(event: CloudEvent<Record<string, unknown>>): boolean;
  apply(tx: EntityManager, event: CloudEvent<Record<string, unknown>>, tables?: TableNames): Promise<void>;
}

/** How a projection of one row per stream is rebuilt from the event store in bulk. */
export interface EventStoreRebuild {
  /** Its table. */
  readonly table: string;
  /** The prefix of the ids of the streams it reads. */
  readonly streamPrefix: string;
  /** The rows past the read model's retention, as SQL on the table: a rebuild reads only the
   * streams with an event in the last `windowDays` and drops these rows before its swap. */
  readonly expired: string;
  readonly windowDays: number;
  /** The row of one stream (column names as keys) from its events in version order; undefined for none. */
  row(events: readonly DomainEvent[]): Record<string, unknown> | undefined;
}

/** The name `table` has in `tables` (itself when no rebuild renames it). */
export const tableName = (tables: TableNames | undefined, table: string): string => tables?.[table] ?? table;
