import type { DataSource } from 'typeorm';
import type { ChatMessage, OfferedTool } from '#libs/contracts';
import { deleteInBatches } from './batched-delete.js';

/** How long a conversation is kept after its last write (a request lives at most 24 hours). */
export const CONVERSATION_RETENTION_HOURS = 24;

/**
 * Conversations with the model, by reference (DESIGN.md section 9): messages keyed by conversation
 * id and seq, and the tools offered in it. A workflow carries only a conversation's id and length;
 * its activities load what they need and store what they produce. The only writer of
 * `conversations` and `conversation_messages`. Every read and write is scoped to the project.
 */
/** The insert that stores a JSON array of messages into the conversation of the statement's `c`
 * CTE from seq `at` onwards (the placeholders given), replacing a message stored at a seq only by
 * a write of the same or a later `attempt`. One text for `open` and `put`. */
const storeMessages = (p: { at: string; messages: string; attempt: string; modelStep?: string }): string =>
  `insert into conversation_messages (conversation_id, seq, message, attempt, model_step)
   select c.id, ${p.at} + m.ord - 1, m.message, ${p.attempt}, ${p.modelStep ?? 'null'}::jsonb from c, json_array_elements(${p.messages}::json) with ordinality as m (message, ord)
   on conflict (conversation_id, seq) do update set message = excluded.message, attempt = excluded.attempt, model_step = excluded.model_step
     where conversation_messages.attempt <= excluded.attempt`;

/** A model's answer as stored with its message: its tokens, and for a streamed call the seq after
 * the last token event it wrote. */
export interface StoredModelStep {
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number };
  readonly streamedTo?: number;
}

export class ConversationStore {
  constructor(private readonly db: DataSource) {}

  /** Creates the conversation, or keeps it for another day, with `messages` stored from seq 0 (as
   * `put` stores them), in one statement; idempotent. */
  async open(
    id: string,
    projectId: string,
    tools: readonly OfferedTool[] = [],
    messages: readonly ChatMessage[] = [],
  ): Promise<void> {
    await this.db.query(
      `with c as (
         insert into conversations (id, project_id, tools, expires_at) values ($1, $2, $3::json, now() + make_interval(hours => $4))
         on conflict (id) do update set expires_at = excluded.expires_at where conversations.project_id = excluded.project_id
         returning id
       )
       ${storeMessages({ at: '0', messages: '$5', attempt: '0' })}`,
      [id, projectId, JSON.stringify(tools), CONVERSATION_RETENTION_HOURS, JSON.stringify(messages)],
    );
  }

  /**
   * Stores `messages` at seq `at`, `at + 1`, ... A message already stored at a seq is replaced only
   * by a write of the same or a later `attempt`: a retried activity's message wins, a late write of
   * an abandoned attempt does not.
   */
  async put(
    id: string,
    projectId: string,
    at: number,
    messages: readonly ChatMessage[],
    attempt = 0,
    modelStep?: StoredModelStep,
  ): Promise<void> {
    if (messages.length === 0) return;
    const [, count] = (await this.db.query(
      `with c as (
         update conversations set expires_at = now() + make_interval(hours => $6) where id = $1 and project_id = $2 returning id
       )
       ${storeMessages({ at: '$3', messages: '$4', attempt: '$5', modelStep: '$7' })}`,
      [
        id,
        projectId,
        at,
        JSON.stringify(messages),
        attempt,
        CONVERSATION_RETENTION_HOURS,
        modelStep ? JSON.stringify(modelStep) : null,
      ],
    )) as [unknown, number];
    if (count === 0 && !(await this.exists(id, projectId))) throw new ConversationNotFoundError(id);
  }

  /** Copies the messages [from, to) of another conversation of the project to seq `at` onwards. */
  async copy(fromId: string, projectId: string, from: number, to: number, intoId: string, at: number): Promise<void> {
    await this.db.query(
      `insert into conversation_messages (conversation_id, seq, message)
       select $5, m.seq - $3 + $6, m.message from conversation_messages m join conversations c on c.id = m.conversation_id
        where c.id = $1 and c.project_id = $2 and m.seq >= $3 and m.seq < $4
          and exists (select 1 from conversations t where t.id = $5 and t.project_id = $2)
       on conflict (conversation_id, seq) do nothing`,
      [fromId, projectId, from, to, intoId, at],
    );
  }

  /** The first `length` messages, in order, the tools offered, and the model's answer stored at
   * seq `length` if there is one (a step already answered), in one query; throws when the
   * conversation or any of the messages is missing (it expired). */
  async read(
    id: string,
    projectId: string,
    length: number,
  ): Promise<{
    messages: ChatMessage[];
    tools: OfferedTool[];
    answered?: { message: ChatMessage; step: StoredModelStep };
  }> {
    const rows: {
      tools: OfferedTool[];
      messages: ChatMessage[] | null;
      answered: { message: ChatMessage; step: StoredModelStep } | null;
    }[] = await this.db.query(
      `select c.tools, (select json_agg(m.message order by m.seq) from conversation_messages m where m.conversation_id = c.id and m.seq < $3) as messages,
              (select json_build_object('message', m.message, 'step', m.model_step) from conversation_messages m
                where m.conversation_id = c.id and m.seq = $3 and m.model_step is not null) as answered
         from conversations c where c.id = $1 and c.project_id = $2`,
      [id, projectId, length],
    );
    const messages = rows[0]?.messages ?? [];
    if (!rows[0] || messages.length !== length) throw new ConversationNotFoundError(id);
    return { messages, tools: rows[0].tools, ...(rows[0].answered ? { answered: rows[0].answered } : {}) };
  }

  /** The message at `seq`, or the last one when `seq` is omitted. */
  async message(
    id: string,
    projectId: string,
    seq?: number,
  ): Promise<{ seq: number; message: ChatMessage } | undefined> {
    const rows: { seq: number; message: ChatMessage }[] = await this.db.query(
      `select m.seq, m.message from conversation_messages m join conversations c on c.id = m.conversation_id
        where c.id = $1 and c.project_id = $2 and ($3::integer is null or m.seq = $3) order by m.seq desc limit 1`,
      [id, projectId, seq ?? null],
    );
    return rows[0];
  }

  /** The conversation's latest `limit` messages still kept, in order (none once it expired). */
  async latest(id: string, projectId: string, limit: number): Promise<{ seq: number; message: ChatMessage }[]> {
    const rows: { seq: number; message: ChatMessage }[] = await this.db.query(
      `select seq, message from (select m.seq, m.message from conversation_messages m join conversations c on c.id = m.conversation_id
        where c.id = $1 and c.project_id = $2 and c.expires_at > now() order by m.seq desc limit $3) latest order by seq`,
      [id, projectId, limit],
    );
    return rows;
  }

  /** Forgets the messages before `seq` (a session keeps only the window that reaches the model). */
  async forgetBefore(id: string, projectId: string, seq: number): Promise<void> {
    await this.db.query(
      `delete from conversation_messages m using conversations c where c.id = m.conversation_id and c.id = $1 and c.project_id = $2 and m.seq < $3`,
      [id, projectId, seq],
    );
  }

  /** Deletes expired conversations with their messages; returns how many conversations. */
  async deleteExpired(): Promise<number> {
    // Smaller batches: each conversation's messages go with it (on delete cascade).
    return deleteInBatches(this.db, 'conversations', `expires_at < now()`, [], 500);
  }

  private async exists(id: string, projectId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(`select 1 from conversations where id = $1 and project_id = $2`, [
      id,
      projectId,
    ]);
    return rows.length > 0;
  }
}

/** The conversation is not there (expired, or another project's). */
export class ConversationNotFoundError extends Error {
  constructor(readonly conversationId: string) {
    super(`Conversation ${conversationId} is not stored (it expired, or belongs to another project).`);
    this.name = 'ConversationNotFoundError';
  }
}
