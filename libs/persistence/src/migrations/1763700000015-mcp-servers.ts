import type { MigrationInterface, QueryRunner } from 'typeorm';

export class McpServers1763700000015 implements MigrationInterface {
  name = 'McpServers1763700000015';

  async up(q: QueryRunner): Promise<void> {
    // A project's MCP servers (operator CLI `mcp add`); the header value is stored encrypted like the model key.
    await q.query(`
      create table mcp_servers (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        name text not null,
        url text not null,
        header_name text,
        header_ciphertext bytea,
        tools text[],
        created_at timestamptz not null default now(),
        unique (project_id, name),
        check ((header_name is null) = (header_ciphertext is null))
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table mcp_servers`);
  }
}
