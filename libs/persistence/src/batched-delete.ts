import type { DataSource } from 'typeorm';

/** Rows a retention statement deletes at most (docs/api-usage.md, "Retention"). */
export const DELETE_BATCH_ROWS = 5000;

/**
 * Deletes the rows of `table` matching `where` (parameters `$1`... in `params`) in statements of at
 * most `batch` rows, each its own transaction, until none is left; the number deleted. A backlog
 * (retention that did not run for days) is then many short statements, each holding its locks and
 * writing its WAL for a bounded time, instead of one that runs for seconds with hundreds of MB of
 * WAL in one transaction. The rows of each batch are picked through the index on `where`'s column
 * and deleted by their ctid (a TID scan).
 */
export async function deleteInBatches(
  db: DataSource,
  table: string,
  where: string,
  params: readonly unknown[] = [],
  batch = DELETE_BATCH_ROWS,
): Promise<number> {
  const limit = `$${params.length + 1}`;
  let total = 0;
  for (;;) {
    const [, count] = (await db.query(
      `delete from ${table} where ctid = any(array(select ctid from ${table} where ${where} limit ${limit}::int))`,
      [...params, batch],
    )) as [unknown, number];
    total += count;
    if (count < batch) return total;
  }
}
