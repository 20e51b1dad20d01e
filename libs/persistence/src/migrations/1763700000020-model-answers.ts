import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ModelAnswers1763700000020 implements MigrationInterface {
  name = 'ModelAnswers1763700000020';

  async up(q: QueryRunner): Promise<void> {
    // A model's answer is stored with its figures (tokens, the stream seq after its tokens), so a
    // re-run of the step reads the answer back instead of calling the customer's model again
    // (DESIGN.md section 10, "a stop is recorded once"). Expand only: a nullable column, which the
    // previous release neither reads nor writes.
    await q.query(`alter table conversation_messages add column model_step jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`alter table conversation_messages drop column model_step`);
  }
}
