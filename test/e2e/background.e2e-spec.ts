import { randomUUID } from 'node:crypto';
import { pruneAll } from '../../apps/relay/src/retention.js';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { readSse, type SseEvent } from '../support/sse.js';

/** The stream retention window of this file's api (STREAM_RETENTION_SECONDS): one second, so a
 * run's events pass it while the run is paused, without a test that waits for minutes. */
const RETENTION_SECONDS = 1;
const lookup = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};
const text = (events: readonly SseEvent[]) =>
  events
    .filter((e) => e.event === 'token')
    .map((e) => e.data.content as string)
    .join('');

/** Background runs, resumable streams for a run's whole life, and cancel's partial message
 * (DESIGN.md section 9), over the real api, worker, Temporal, PostgreSQL and Kafka. */
describe('background runs and resumable streams', () => {
  const stack = e2eStack({ name: 'background', env: { STREAM_RETENTION_SECONDS: String(RETENTION_SECONDS) } });

  const project = (credits = 20) =>
    stack.fixtures.project({
      credits,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
  const get = (id: string, auth: Record<string, string>) =>
    request(stack.api.url, 'GET', `/v1/agent/${id}`, { headers: auth });
  const events = (id: string, auth: Record<string, string>, query = '', stopAfter?: number) =>
    readSse(`${stack.api.url}/v1/agent/${id}/events${query}`, { headers: auth }, stopAfter);
  const finished = async (id: string, auth: Record<string, string>) =>
    eventually(async () => {
      const res = await get(id, auth);
      expect(['in_progress', 'requires_tool_outputs']).not.toContain(res.body.status);
      return res.body;
    });
  const stored = async (id: string): Promise<{ seq: number; type: string }[]> =>
    stack.fixtures.db.query(`select seq, type from stream_events where request_id = $1 order by seq`, [id]);
  /** Waits until every stored event of the request is older than the retention window. */
  const pastWindow = (id: string) =>
    eventually(async () => {
      const rows: { young: number }[] = await stack.fixtures.db.query(
        `select count(*)::int as young from stream_events where request_id = $1 and created_at > now() - make_interval(secs => $2)`,
        [id, RETENTION_SECONDS],
      );
      expect(rows[0]!.young).toBe(0);
    });

  beforeEach(() => {
    stack.models.clearReplies();
    stack.models.requests.length = 0;
  });

  it('answers `background: true` at once with in_progress; GET and the events endpoint follow the run to its end', async () => {
    const { auth } = await project();
    // The model waits in the middle of its answer: the run is surely still going when the POST answers.
    stack.models.reply({ content: 'one two three four five', stallAfterEvents: 3, stallMs: 1000 });
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'go', background: true },
    });
    expect(res.status).toBe(200);
    const id = res.body.id as string;
    expect(res.body).toMatchObject({
      object: 'agent.response',
      status: 'in_progress',
      capabilities_used: [],
      files: [],
      usage: { credits_this_request: 0 },
    });
    expect(res.body.message).toBeUndefined();
    expect(res.headers.get('x-request-id')).toBe(id);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('49999');
    // Followed live from the first event to the end, then the stream closes.
    const followed = await events(id, auth);
    expect(followed.status).toBe(200);
    expect(followed.events.at(-1)).toMatchObject({
      event: 'done',
      data: { id, status: 'completed', usage: { credits_this_request: 1 } },
    });
    expect(followed.events.map((e) => Number(e.id))).toEqual(followed.events.map((_, i) => i + 1));
    const result = await finished(id, auth);
    expect(result).toMatchObject({
      status: 'completed',
      message: 'one two three four five',
      usage: { credits_this_request: 1, credits_remaining: 19 },
    });
    expect(text(followed.events)).toBe(result.message);
    // Finished: a replay from any point gives the rest and ends; ?starting_after= and Last-Event-ID alike.
    const tail = await events(id, auth, `?starting_after=${followed.events.length - 2}`);
    expect(tail.events.map((e) => e.event)).toEqual(['token', 'done']);
    const byHeader = await readSse(`${stack.api.url}/v1/agent/${id}/events`, {
      headers: { ...auth, 'last-event-id': String(followed.events.length - 1) },
    });
    expect(byHeader.events.map((e) => e.event)).toEqual(['done']);
  });

  it('refuses `background` with `stream` or not a boolean (400 invalid_body), and answers a refused run as its error, not 200', async () => {
    const { auth } = await project();
    for (const body of [
      { message: 'go', background: true, stream: true },
      { message: 'go', background: 'yes' },
    ]) {
      const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_body');
    }
    const broke = await project(0);
    const refused = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: broke.auth,
      body: { message: 'go', background: true },
    });
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('insufficient_credits');
  });

  it('runs a session message in the background; the session is busy until it ends, then takes the next', async () => {
    const { auth } = await project();
    const session = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
    const path = `/v1/sessions/${session.body.id}/messages`;
    stack.models.reply({ content: 'first answer', stallAfterEvents: 2, stallMs: 1000 });
    const res = await request(stack.api.url, 'POST', path, {
      headers: auth,
      body: { message: 'first', background: true },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'session.message', session_id: session.body.id, status: 'in_progress' });
    const stream = await request(stack.api.url, 'POST', path, {
      headers: auth,
      body: { message: 'x', background: true, stream: true },
    });
    expect(stream.body.error.code).toBe('invalid_body');
    const followed = await events(res.body.id, auth);
    expect(followed.events.at(-1)!.event).toBe('done');
    expect(await finished(res.body.id, auth)).toMatchObject({
      object: 'session.message',
      status: 'completed',
      message: 'first answer',
    });
    const next = await request(stack.api.url, 'POST', path, { headers: auth, body: { message: 'second' } });
    expect(next.body).toMatchObject({ status: 'completed' });
  });

  it('a client that drops a streamed request stops nothing: the result and the rest of the events are read afterwards', async () => {
    const { auth } = await project();
    stack.models.reply({ content: 'alpha beta gamma delta epsilon', stallAfterEvents: 3, stallMs: 1000 });
    // Two tokens, then the connection is cut while the model is in the middle of its answer.
    const dropped = await readSse(
      `${stack.api.url}/v1/agent`,
      { method: 'POST', headers: auth, body: { message: 'go', stream: true } },
      2,
    );
    const id = dropped.headers.get('x-request-id')!;
    expect(dropped.events.map((e) => e.event)).toEqual(['token', 'token']);
    const result = await finished(id, auth);
    expect(result).toMatchObject({
      status: 'completed',
      message: 'alpha beta gamma delta epsilon',
      usage: { credits_this_request: 1 },
    });
    const rest = await events(id, auth, '', undefined);
    expect(rest.events.at(-1)!.event).toBe('done');
    const resumed = await readSse(`${stack.api.url}/v1/agent/${id}/events`, {
      headers: { ...auth, 'last-event-id': '2' },
    });
    expect(text([...dropped.events, ...resumed.events])).toBe(result.message);
  });

  it("404 request_not_found for an unknown request or another project's; 400 for a malformed position", async () => {
    const { auth } = await project();
    const other = await project();
    stack.models.reply({ content: 'mine' });
    const mine = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'go', background: true },
    });
    await finished(mine.body.id, auth);
    for (const [id, headers] of [
      [randomUUID(), auth],
      ['not-a-uuid', auth],
      [mine.body.id, other.auth],
    ] as const) {
      const res = await request(stack.api.url, 'GET', `/v1/agent/${id}/events`, { headers });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('request_not_found');
    }
    for (const query of ['?starting_after=-1', '?starting_after=x', '?starting_after=1&starting_after=2']) {
      const res = await request(stack.api.url, 'GET', `/v1/agent/${mine.body.id}/events${query}`, { headers: auth });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_body');
    }
  });

  it("keeps a paused run's events past the retention window while it runs, then the window after its end; the end is always replayed", async () => {
    const { auth } = await project();
    stack.models.reply(
      { content: 'Let me look that up', toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] },
      { content: 'Found it' },
    );
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'go', tools: [lookup], background: true },
    });
    expect(res.body.status).toBe('in_progress');
    const id = res.body.id as string;
    const paused = await eventually(async () => {
      const read = await get(id, auth);
      expect(read.body.status).toBe('requires_tool_outputs');
      return read.body;
    });
    const before = await stored(id);
    expect(before.length).toBeGreaterThan(0);
    expect(before.every((e) => e.type === 'token')).toBe(true);
    // Every event is now older than the window, and the run still lives: the relay's rule keeps them.
    await pastWindow(id);
    expect(
      (await pruneAll(stack.fixtures.db, { streamRetentionSeconds: RETENTION_SECONDS })).filter((r) => r.error),
    ).toEqual([]);
    expect(await stored(id)).toEqual(before);
    const replay = await events(id, auth, '', before.length);
    expect(text(replay.events)).toBe('Let me look that up');

    const answered = await request(stack.api.url, 'POST', `/v1/agent/${id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: paused.tool_calls[0].id, output: 'x is 1' }],
        _compute_instance: paused._compute_instance,
      },
    });
    expect(answered.body).toMatchObject({ status: 'completed', message: 'Found it' });
    // Finished, within the window: everything, its first events included, and the end.
    const all = await events(id, auth);
    expect(text(all.events)).toBe('Let me look that upFound it');
    expect(all.events.at(-1)).toMatchObject({ event: 'done', data: { id, status: 'completed' } });
    await pruneAll(stack.fixtures.db, { streamRetentionSeconds: 3600 });
    expect((await stored(id)).length).toBe(all.events.length);

    // The window after its end has passed: the rule deletes the run's events, and the replay is the end alone.
    await pastWindow(id);
    await pruneAll(stack.fixtures.db, { streamRetentionSeconds: RETENTION_SECONDS });
    expect(await stored(id)).toEqual([]);
    const end = await events(id, auth);
    expect(end.events.map((e) => [e.event, e.data.status])).toEqual([['done', 'completed']]);
  });

  it('cancels a session message, not the session: the session takes the next message, without the cancelled exchange', async () => {
    const { project: p, auth } = await project();
    const session = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
    const path = `/v1/sessions/${session.body.id}/messages`;
    stack.models.reply({ content: 'never seen', delayMs: 15_000 });
    const original = request(stack.api.url, 'POST', path, { headers: auth, body: { message: 'cancel me' } });
    const id = await eventually(async () => {
      const rows: { request_id: string }[] = await stack.fixtures.db.query(
        `select request_id from credit_ledger where project_id = $1 and kind = 'reserve'`,
        [p.id],
      );
      expect(rows).toHaveLength(1);
      expect(stack.models.requests.length).toBe(1);
      return rows[0]!.request_id;
    });
    const cancelled = await request(stack.api.url, 'POST', `/v1/agent/${id}/cancel`, { headers: auth });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({
      id,
      object: 'session.message',
      session_id: session.body.id,
      status: 'cancelled',
      usage: { credits_this_request: 0 },
    });
    expect((await original).body).toMatchObject({ id, status: 'cancelled' });
    expect(
      (await request(stack.api.url, 'GET', `/v1/sessions/${session.body.id}`, { headers: auth })).body.status,
    ).toBe('active');
    stack.models.reply({ content: 'second answer' });
    const next = await request(stack.api.url, 'POST', path, { headers: auth, body: { message: 'next one' } });
    expect(next.body).toMatchObject({ object: 'session.message', status: 'completed', message: 'second answer' });
    const sent = JSON.stringify(stack.models.requests.at(-1)!.body.messages);
    expect(sent).toContain('next one');
    expect(sent).not.toContain('cancel me');
  });

  it('keeps what a model call had streamed as the partial message of a request cancelled in the middle of it', async () => {
    const { auth } = await project();
    // Three events (the role, two words), then the model holds the rest until the call is aborted.
    stack.models.reply({ content: 'partial words that never finish', stallAfterEvents: 3 });
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'go', background: true },
    });
    const id = res.body.id as string;
    await eventually(async () => expect((await stored(id)).filter((e) => e.type === 'token').length).toBe(2));
    const cancelled = await request(stack.api.url, 'POST', `/v1/agent/${id}/cancel`, { headers: auth });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', message: 'partial words ' });
    expect((await get(id, auth)).body).toMatchObject({ status: 'cancelled', message: 'partial words ' });
    const replay = await events(id, auth);
    expect(text(replay.events)).toBe('partial words ');
    expect(replay.events.at(-1)).toMatchObject({ event: 'error', data: { code: 'request_cancelled' } });
  });
});
