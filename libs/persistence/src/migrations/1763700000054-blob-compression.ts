import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Input files compressed with lz4 instead of PostgreSQL's default, pglz (issue 28, session 20): an
 * upload of 8 files of 1 MB cost the database 51-55 ms of a core with pglz and 7-11 ms with lz4,
 * and text that compresses less about 28 ms a MB against 7. Rows already stored keep pglz (both
 * are read alike); no rewrite, no lock held for long. A PostgreSQL built without lz4 keeps pglz.
 * Safe for the previous release: nothing it does changes.
 */
export class BlobCompression1763700000054 implements MigrationInterface {
  name = 'BlobCompression1763700000054';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      do $$ begin
        alter table blobs alter column content set compression lz4;
      exception when feature_not_supported then
        raise notice 'this PostgreSQL was built without lz4: input files stay compressed with pglz';
      end $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`alter table blobs alter column content set compression default`);
  }
}
