import type { DataSource } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { decryptSecret, encryptSecret } from './secrets.js';

/** Every column sealed under the master key, with the context each is bound to (the same as the
 * services that write them: AccountsService.setModel, McpServersService, libs/webhooks' store). */
const SEALED = [
  { table: 'model_configs', key: 'project_id', column: 'key_ciphertext', context: (r: Row) => r.project_id! },
  { table: 'mcp_servers', key: 'id', column: 'header_ciphertext', context: (r: Row) => `${r.project_id}/mcp/${r.id}` },
  {
    table: 'webhook_subscriptions',
    key: 'id',
    column: 'secret_ciphertext',
    context: (r: Row) => `webhook-subscription:${r.id}`,
  },
] as const;

interface Row {
  readonly id?: string;
  readonly project_id?: string;
  readonly sealed: Buffer;
}

export interface ReencryptReport {
  /** Per table: secrets moved to the current key, already under it, and opened by no key. */
  readonly tables: Record<string, { reencrypted: number; current: number; unreadable: number }>;
}

/**
 * Seals again, under the current master key, every secret that a key being retired
 * (MAS_MASTER_KEYS_PREVIOUS) sealed: after it, those keys can be removed (`mas secrets reencrypt`,
 * docs/operations.md). Row by row, each update only if the row still holds what was read (a
 * secret changed meanwhile was written under the current key already); safe to run again.
 */
export async function reencryptSecrets(
  db: DataSource,
  config: Pick<AppConfig, 'masterKey' | 'previousMasterKeys'>,
): Promise<ReencryptReport> {
  const tables: ReencryptReport['tables'] = {};
  for (const spec of SEALED) {
    const counts = { reencrypted: 0, current: 0, unreadable: 0 };
    tables[spec.table] = counts;
    const rows: Row[] = await db.query(
      `select ${spec.table === 'model_configs' ? 'project_id' : 'id, project_id'}, ${spec.column} as sealed from ${spec.table} where ${spec.column} is not null`,
    );
    for (const row of rows) {
      const context = spec.context(row);
      try {
        decryptSecret(row.sealed, config.masterKey, context);
        counts.current++;
        continue;
      } catch {
        // not under the current key
      }
      let plaintext: string;
      try {
        plaintext = decryptSecret(row.sealed, config.previousMasterKeys, context);
      } catch {
        counts.unreadable++;
        continue;
      }
      const keyValue = spec.key === 'project_id' ? row.project_id : row.id;
      await db.query(`update ${spec.table} set ${spec.column} = $1 where ${spec.key} = $2 and ${spec.column} = $3`, [
        encryptSecret(plaintext, config.masterKey, context),
        keyValue,
        row.sealed,
      ]);
      counts.reencrypted++;
    }
  }
  return { tables };
}
