import type { EntityManager } from 'typeorm';
import type { Topic } from '#libs/contracts';
import type { CloudEvent } from '#libs/events';

/** A read model built from one topic. `apply` runs inside the transaction that also records the
 * event as processed, so a redelivered event changes nothing. */
export interface Projection {
  readonly name: string;
  readonly topic: Topic;
  /** The tables it owns: emptied when it is rebuilt from offset 0. */
  readonly tables: readonly string[];
  apply(tx: EntityManager, event: CloudEvent<Record<string, unknown>>): Promise<void>;
}
