import { randomUUID } from 'node:crypto';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';

// A session message and the session's DELETE sent at the same moment (issue 28: "a duplicate
// session message racing its own close gets a saved 502"). Whichever wins, the message's answer is
// a contract answer (200, or 410 session_ended / 409 session_busy), never a 5xx, and a retry with
// its Idempotency-Key gets that same answer. Real api, worker, Temporal and PostgreSQL.
describe('a session message racing the session close', () => {
  const stack = e2eStack({ name: 'session-close-race' });

  it('answers the message with a contract answer, replayed the same under its key', async () => {
    // 12 rounds of 4 requests: within the project's 60 requests a minute.
    const { auth } = await stack.fixtures.project({ credits: 1000 });
    const seen = new Map<string, number>();
    for (let i = 0; i < 12; i++) {
      const session = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
      expect(session.status).toBe(200);
      const key = randomUUID();
      const headers = { ...auth, 'idempotency-key': key };
      const path = `/v1/sessions/${session.body.id}/messages`;
      const [message, closed] = await Promise.all([
        request(stack.api.url, 'POST', path, { headers, body: { message: `race ${i}` } }),
        new Promise((resolve) => setTimeout(resolve, i % 5)).then(() =>
          request(stack.api.url, 'DELETE', `/v1/sessions/${session.body.id}`, { headers: auth }),
        ),
      ]);
      const outcome = `${message.status} ${message.body?.error?.code ?? message.body?.status ?? ''} / close ${closed.status}`;
      seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
      expect({ i, status: message.status, body: message.status >= 500 ? message.body : undefined }).toEqual({
        i,
        status: expect.any(Number),
        body: undefined,
      });
      const again = await request(stack.api.url, 'POST', path, { headers, body: { message: `race ${i}` } });
      expect({ i, status: again.status, code: again.body?.error?.code }).toEqual({
        i,
        status: message.status,
        code: message.body?.error?.code,
      });
    }
    process.stderr.write(`session close race outcomes: ${JSON.stringify(Object.fromEntries(seen))}\n`);
  });
});
