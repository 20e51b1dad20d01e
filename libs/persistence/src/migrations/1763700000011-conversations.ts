import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Conversations1763700000011 implements MigrationInterface {
  name = 'Conversations1763700000011';

  async up(q: QueryRunner): Promise<void> {
    // Conversations with the model, stored by reference (DESIGN.md section 9, conversation size):
    // a workflow carries only a conversation's id and length; its activities load what they need.
    // A request's conversation is keyed by the request id, a session's by the session id. Each
    // write moves the expiry on, so a conversation lives as long as it is used, plus a day.
    await q.query(`
      create table conversations (
        id uuid primary key,
        project_id uuid not null,
        tools json not null default '[]',
        expires_at timestamptz not null
      )`);
    await q.query(`create index conversations_expiry_idx on conversations (expires_at)`);
    // json, not jsonb: a message may hold any text a model or a tool produced, NUL included
    // (jsonb refuses \u0000). attempt: the activity attempt that wrote the message; a retried
    // attempt overwrites an earlier one's message, never the reverse (the stored message is the
    // one the workflow saw).
    await q.query(`
      create table conversation_messages (
        conversation_id uuid not null references conversations (id) on delete cascade,
        seq integer not null,
        message json not null,
        attempt integer not null default 0,
        primary key (conversation_id, seq)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table conversation_messages`);
    await q.query(`drop table conversations`);
  }
}
