import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { BlobStore } from './blob-store.js';

/** Input files on the test database. */
describe('BlobStore', () => {
  let fixtures: Fixtures;
  let blobs: BlobStore;
  let projectId: string;
  beforeAll(async () => {
    fixtures = await Fixtures.open(testConfig());
    blobs = new BlobStore(fixtures.db);
    projectId = (await fixtures.project()).project.id;
  });
  afterAll(() => fixtures.close());

  // Issue 28, session 20: PostgreSQL's default compression (pglz) spent 51-55 ms of a database core
  // on an upload of 8 files of 1 MB, and about 28 ms a MB on text that compresses less; lz4 spends
  // 7-11 ms on the same upload, in a burst that every tenant's transactions share the cores with.
  it("stores a file's content compressed with lz4, and reads it back exactly", async () => {
    const content = 'The quick brown fox jumps over the lazy dog. é✓ 🙂\n'.repeat(20_000);
    const { id, bytes } = await blobs.put(projectId, 'fox.txt', content);
    expect(bytes).toBe(Buffer.byteLength(content, 'utf8'));
    const [row] = (await fixtures.db.query(`select pg_column_compression(content) as method from blobs where id = $1`, [
      id,
    ])) as [{ method: string | null }];
    expect(row.method).toBe('lz4');
    expect(await blobs.get(id, projectId)).toEqual({ name: 'fox.txt', content });
  });

  it("keeps another project's file from a project", async () => {
    const { id } = await blobs.put(projectId, 'mine.txt', 'mine');
    const other = (await fixtures.project()).project.id;
    expect(await blobs.get(id, other)).toBeUndefined();
  });
});
