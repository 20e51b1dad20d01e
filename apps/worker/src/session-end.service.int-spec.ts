import { randomUUID } from 'node:crypto';
import { SessionEndRequests } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { SessionEndService } from './session-end.service.js';

// The session ends the console asks for (docs/console.md, "Ending a session"), over the real
// PostgreSQL: while Temporal cannot be reached a request stays, with its error, for the next try;
// with Temporal up, a session whose workflow is gone leaves nothing to do and the request is done.
// (The end of a live session, through the real workflow, is in test/e2e/console.e2e-spec.ts.)

const config = testConfig();

describe('SessionEndService', () => {
  let fixtures: Fixtures;
  let requests: SessionEndRequests;

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    requests = new SessionEndRequests(fixtures.db);
  });
  afterAll(async () => {
    await fixtures.close();
  });

  const row = async (sessionId: string) =>
    (
      (await fixtures.db.query(`select attempts, last_error from session_end_requests where session_id = $1`, [
        sessionId,
      ])) as { attempts: number; last_error: string | null }[]
    )[0];

  it('keeps a request while Temporal cannot be reached, and carries it out once it can', async () => {
    const { project } = await fixtures.project();
    const sessionId = randomUUID();
    await requests.request(project.id, sessionId);
    await requests.request(project.id, sessionId);
    expect(await requests.pending(project.id, sessionId)).toMatchObject({
      sessionId,
      projectId: project.id,
      attempts: 0,
    });
    expect(await requests.pending(randomUUID(), sessionId)).toBeUndefined();

    // Nothing listens on port 1.
    const unreachable = new TemporalClientService({
      ...config,
      temporal: { ...config.temporal, address: '127.0.0.1:1' },
    });
    try {
      await new SessionEndService(requests, unreachable).endWaiting();
    } finally {
      await unreachable.onApplicationShutdown();
    }
    expect(await row(sessionId)).toMatchObject({ attempts: 1, last_error: expect.any(String) });

    const temporal = new TemporalClientService(config);
    try {
      await new SessionEndService(requests, temporal).endWaiting();
    } finally {
      await temporal.onApplicationShutdown();
    }
    // No workflow session-<id>: nothing is left to end.
    expect(await row(sessionId)).toBeUndefined();
  });
});
