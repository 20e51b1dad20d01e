import type { Command } from 'commander';
import type { ApiKeyEntity } from '#libs/persistence';
import type { CliContext } from './cli.js';

const keyView = (k: ApiKeyEntity) => ({
  id: k.id,
  project_id: k.projectId,
  prefix: k.prefix,
  label: k.label,
  created_at: k.createdAt.toISOString(),
  revoked_at: k.revokedAt?.toISOString() ?? null,
});

/** `key create|list|revoke`: a project's API keys. */
export function addKeyCommands(program: Command, { accounts, print, jsonOption }: CliContext): void {
  const key = program.command('key').description('issue, list and revoke API keys');
  key
    .command('create')
    .description('issue an API key; the full key is printed once and never stored')
    .argument('<project>', 'project id or name')
    .option('--label <label>', 'a note to tell keys apart')
    .addOption(jsonOption)
    .action(async (ref: string, o: { label?: string; json?: boolean }) => {
      const { key: secret, record } = await (await accounts()).createApiKey(ref, o.label);
      print(
        !!o.json,
        { ...keyView(record), key: secret },
        `${secret}\n(key id ${record.id}; shown once: store it now)`,
      );
    });
  key
    .command('list')
    .description("list a project's keys (prefixes only)")
    .argument('<project>', 'project id or name')
    .addOption(jsonOption)
    .action(async (ref: string, o: { json?: boolean }) => {
      const keys = await (await accounts()).listApiKeys(ref);
      print(
        !!o.json,
        keys.map(keyView),
        keys
          .map(
            (k) =>
              `${k.id}  ${k.prefix}…  ${k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active'}${k.label ? `  ${k.label}` : ''}`,
          )
          .join('\n') || 'no keys',
      );
    });
  key
    .command('revoke')
    .description('revoke a key at once, on every api replica')
    .argument('<key-id>', 'the key id (from key list)')
    .addOption(jsonOption)
    .action(async (id: string, o: { json?: boolean }) => {
      const k = await (await accounts()).revokeApiKey(id);
      print(!!o.json, keyView(k), `revoked ${k.prefix}… (${k.id})`);
    });
}
