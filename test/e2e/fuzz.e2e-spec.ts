import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { CAPABILITIES, ERROR_STATUS, errorDocsUrl, isErrorCode } from '#libs/contracts';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';

// Property-based HTTP fuzzing (issue 14): generated bodies, headers, ids and query strings against
// every endpoint. Whatever arrives, the api answers within a bound, never with a 5xx, every error
// in the contract's envelope with one of its codes, and a refused request records nothing.
// Seeded, so a failure replays: FUZZ_SEED=<seed printed by fast-check>. FUZZ_RUNS=2000 searches
// longer; FUZZ_SHRINK=1 shrinks a failure to its smallest form (slow: every step is requests).
const config = testConfig();
const env = { TEMPORAL_TASK_QUEUE: `e2e-fuzz-${randomUUID()}` };
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
/** No answer may take longer (a real run of the scripted model takes well under a second). */
const ANSWER_BOUND_MS = 15_000;

// --- what is sent -------------------------------------------------------------------------------

/** Characters that have broken parsers, databases and headers before, mixed with ordinary ones. */
const hostileChar = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '\u0000',
      '\ud800',
      '\udfff',
      '\ufffd',
      '\ufeff',
      '\u2028',
      '"',
      '\\',
      '\n',
      '\r',
      '%',
      '/',
      '..',
      ' ',
      '报',
      '\u{1F680}',
      '$',
      '{',
      '<',
    ),
  },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 1 }) },
);
const hostileString = fc.string({ unit: hostileChar, maxLength: 24 });
/** Mostly ordinary text, sometimes hostile. */
const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }) },
  { weight: 1, arbitrary: hostileString },
);
const anyJson = fc.jsonValue({ maxDepth: 3 });
/** A field as the contract wants it (mostly) or any JSON value. */
const field = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 10, arbitrary: good }, { weight: 1, arbitrary: anyJson });

const capabilityName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...CAPABILITIES) },
  { weight: 1, arbitrary: text },
);
/** A JSON Schema with the keywords that make compilers work: ids shared between requests,
 * references that do not resolve, patterns that are not regular expressions, unknown dialects. */
const trickySchema = fc.record(
  {
    type: fc.constantFrom('object', 'string', 'objekt'),
    $id: fc.oneof(fc.constantFrom('https://example.com/same', 'urn:fuzz:same', '#frag', 'not a uri'), hostileString),
    properties: fc.dictionary(
      text,
      fc.oneof(
        fc.constant({ type: 'string' }),
        fc.record({ $ref: fc.constantFrom('#', '#/nowhere', 'https://example.com/x.json') }),
        anyJson,
      ),
      { maxKeys: 3 },
    ),
    required: field(fc.array(text, { maxLength: 3 })),
    pattern: fc.constantFrom('(', '^a+$', '\\p{L}', '[z-a]'),
    $schema: fc.constantFrom(
      'http://json-schema.org/draft-07/schema#',
      'https://json-schema.org/draft/2020-12/schema',
      'nonsense',
    ),
  },
  { requiredKeys: ['type'] },
);
const schema = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ type: 'object', properties: { q: { type: 'string' } } }) },
  { weight: 2, arbitrary: trickySchema },
  { weight: 1, arbitrary: anyJson },
);
const toolDefinition = fc.record(
  {
    name: fc.oneof({ weight: 4, arbitrary: fc.stringMatching(/^[a-zA-Z0-9_]{1,70}$/) }, { weight: 1, arbitrary: text }),
    description: field(text),
    parameters: schema,
  },
  { requiredKeys: [] },
);
const inputFile = fc.record(
  { name: field(fc.oneof(fc.constantFrom('a.txt', 'sales.csv', '报告.md'), text)), content: field(text) },
  { requiredKeys: ['name', 'content'] },
);
const agentBody = fc.record(
  {
    message: field(
      fc.oneof(
        text,
        fc.constantFrom(
          'hello',
          'lookup {"q":"x"}',
          'write_file {"name":"报告.md","content":"x"}',
          'read_file {"name":"a.txt"}',
          'run_javascript {"code":"String.fromCharCode(0)"}',
        ),
      ),
    ),
    capabilities: field(fc.array(capabilityName, { minLength: 1, maxLength: 4 })),
    files: field(fc.array(inputFile, { maxLength: 3 })),
    stream: field(fc.boolean()),
    tools: field(fc.array(toolDefinition, { maxLength: 2 })),
    unknown_field: anyJson,
  },
  { requiredKeys: ['message'] },
);
const toolOutputsBody = fc.record(
  {
    tool_outputs: field(
      fc.array(
        fc.record(
          {
            tool_call_id: field(fc.oneof(fc.constant('call_1'), text)),
            output: field(
              fc.oneof(
                text,
                fc.nat({ max: 120 * 1024 }).map((n) => 'o'.repeat(n)),
              ),
            ),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 3 },
      ),
    ),
    _compute_instance: field(
      fc.oneof(fc.constant(`${config.temporal.namespace}/${env.TEMPORAL_TASK_QUEUE}`), hostileString),
    ),
  },
  { requiredKeys: ['tool_outputs', '_compute_instance'] },
);

type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: Uint8Array };
const body = (json: fc.Arbitrary<unknown>): fc.Arbitrary<Body> =>
  fc.oneof(
    { weight: 16, arbitrary: json.map((value): Body => ({ kind: 'json', value })) },
    { weight: 1, arbitrary: fc.constant<Body>({ kind: 'none' }) },
    {
      weight: 1,
      arbitrary: json.chain((v) =>
        fc.nat({ max: 40 }).map((n): Body => ({ kind: 'text', text: JSON.stringify(v).slice(0, n) })),
      ),
    },
    { weight: 1, arbitrary: hostileString.map((t): Body => ({ kind: 'text', text: t })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes): Body => ({ kind: 'bytes', bytes })) },
  );

/** A path segment: a real-looking id, or anything, percent-encoded or deliberately not. */
const segment = fc.oneof(
  { weight: 3, arbitrary: fc.uuid() },
  {
    weight: 2,
    arbitrary: hostileString.filter((s) => s.length > 0).map((s) => encodeURIComponent(Buffer.from(s).toString())),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '%00',
      '%ZZ',
      '%',
      '%ED%A0%80',
      '%C0%AF',
      'a%2Fb',
      '..%2F..',
      'x'.repeat(2000),
      '00000000-0000-0000-0000-000000000000',
    ),
  },
);
const queryValue = fc.oneof(
  fc.constantFrom('%00', '%ZZ', '-1', '0', '1', '100', '1e309', 'NaN', 'active', 'expired', 'ended'),
  fc.uuid(),
  hostileString.map((s) => encodeURIComponent(Buffer.from(s).toString())),
);
const query = fc
  .array(fc.tuple(fc.constantFrom('limit', 'after', 'status', 'starting_after', 'x', 'limit[]'), queryValue), {
    maxLength: 3,
  })
  .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : ''));

interface Case {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** `{own}` stands for the id of what `setup` made in the case's project. */
  readonly path: string;
  readonly body: Body;
  readonly setup?: 'paused request' | 'session';
}

const endpoints: fc.Arbitrary<Case> = fc.oneof(
  { weight: 5, arbitrary: body(agentBody).map((b): Case => ({ method: 'POST', path: '/v1/agent', body: b })) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(segment, body(toolOutputsBody))
      .map(([id, b]): Case => ({ method: 'POST', path: `/v1/agent/${id}/tool-outputs`, body: b })),
  },
  { weight: 1, arbitrary: body(anyJson).map((b): Case => ({ method: 'POST', path: '/v1/sessions', body: b })) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(segment, body(agentBody))
      .map(([id, b]): Case => ({ method: 'POST', path: `/v1/sessions/${id}/messages`, body: b })),
  },
  {
    weight: 3,
    arbitrary: body(toolOutputsBody).map((b): Case => ({
      method: 'POST',
      path: '/v1/agent/{own}/tool-outputs',
      body: b,
      setup: 'paused request',
    })),
  },
  {
    weight: 3,
    arbitrary: body(agentBody).map((b): Case => ({
      method: 'POST',
      path: '/v1/sessions/{own}/messages',
      body: b,
      setup: 'session',
    })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom('/v1/agent/{own}', '/v1/agent/{own}/events', '/v1/sessions/{own}'),
        fc.constantFrom<Case['setup']>('paused request', 'session'),
        query,
      )
      .map(([template, setup, q]): Case => ({ method: 'GET', path: `${template}${q}`, body: { kind: 'none' }, setup })),
  },
  {
    weight: 1,
    arbitrary: body(anyJson).map((b): Case => ({
      method: 'DELETE',
      path: '/v1/sessions/{own}',
      body: b,
      setup: 'session',
    })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(segment, body(anyJson))
      .map(([id, b]): Case => ({ method: 'DELETE', path: `/v1/sessions/${id}`, body: b })),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          '/v1/agent/{id}',
          '/v1/agent/{id}/events',
          '/v1/sessions/{id}',
          '/v1/files/{id}',
          '/v1/sessions',
          '/v1/{id}',
          '/v1/agent/{id}/{id}',
        ),
        segment,
        query,
      )
      .map(([template, id, q]): Case => ({
        method: 'GET',
        path: `${template.replaceAll('{id}', id)}${q}`,
        body: { kind: 'none' },
      })),
  },
);

/** A printable header value (what fetch can send); Latin-1 included. */
const headerValue = fc.string({
  unit: fc.oneof(
    fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }),
    fc.integer({ min: 0xa0, max: 0xff }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 40,
});
type Auth = 'valid' | 'lower-case scheme' | 'none' | 'unknown key' | 'other scheme' | 'key with junk' | { raw: string };
const auth: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Auth>('valid') },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Auth>('lower-case scheme', 'none', 'unknown key', 'other scheme', 'key with junk'),
  },
  { weight: 1, arbitrary: headerValue.map((raw): Auth => ({ raw })) },
);
/** A header that is present once in `odds` cases. */
const rarely = (value: fc.Arbitrary<string>, odds: number) =>
  fc.oneof({ weight: odds - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: value });
const headers = fc
  .record({
    'content-type': fc.oneof(
      { weight: 6, arbitrary: fc.constant('application/json') },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          'application/json; charset=utf-8',
          'application/json; charset=latin1',
          'application/json; charset=utf-16',
          'text/plain',
          'multipart/form-data; boundary=x',
          'application/x-www-form-urlencoded',
        ),
      },
      { weight: 1, arbitrary: headerValue },
    ),
    'content-encoding': rarely(fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x-unknown'), 12),
    'idempotency-key': rarely(fc.oneof(fc.uuid(), headerValue, fc.constant('k'.repeat(300))), 2),
    'last-event-id': rarely(fc.oneof(fc.constantFrom('0', '3', '-1', '1e3', '99999999999999999999'), headerValue), 3),
    accept: rarely(fc.constantFrom('application/json', 'text/event-stream', '*/*'), 3),
  })
  .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);

// --- what must hold -----------------------------------------------------------------------------

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

async function send(
  url: string,
  c: Case,
  own: string,
  key: string,
  a: Auth,
  extra: Record<string, string>,
): Promise<Answer> {
  const h: Record<string, string> = { ...extra };
  if (a === 'valid') h.authorization = `Bearer ${key}`;
  else if (a === 'lower-case scheme') h.authorization = `bearer ${key}`;
  else if (a === 'unknown key') h.authorization = `Bearer sk-mas_${'Z'.repeat(43)}`;
  else if (a === 'other scheme') h.authorization = `Basic ${Buffer.from(`x:${key}`).toString('base64')}`;
  else if (a === 'key with junk') h.authorization = `Bearer ${key}x`;
  else if (typeof a === 'object') h.authorization = a.raw;
  let payload: string | Uint8Array | undefined;
  if (c.body.kind === 'json') payload = JSON.stringify(c.body.value) ?? 'null';
  else if (c.body.kind === 'text') payload = c.body.text;
  else if (c.body.kind === 'bytes') payload = c.body.bytes;
  if (c.method === 'GET') payload = undefined;
  const res = await fetch(`${url}${c.path.replaceAll('{own}', own)}`, {
    method: c.method,
    headers: h,
    body: payload,
    signal: AbortSignal.timeout(ANSWER_BOUND_MS),
  });
  // A stream answers with its headers; its body follows the request for as long as that runs
  // (GET /v1/agent/{id}/events on a paused request waits for its end).
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    await res.body?.cancel();
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: '' };
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

function expectContractAnswer(answer: Answer): void {
  if (answer.status >= 500) throw new Error(`${answer.status} ${answer.text.slice(0, 500)}`);
  if (answer.status < 400) return;
  expect(answer.contentType).toContain('application/json');
  const parsed = JSON.parse(answer.text) as { error?: { code?: unknown; message?: unknown; docs?: unknown } };
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(Object.keys(parsed.error ?? {}).sort()).toEqual(['code', 'docs', 'message']);
  const code = parsed.error?.code;
  expect(isErrorCode(code)).toBe(true);
  if (!isErrorCode(code)) return;
  expect(ERROR_STATUS[code]).toBe(answer.status);
  expect(typeof parsed.error?.message).toBe('string');
  expect(parsed.error?.docs).toBe(errorDocsUrl(config.publicBaseUrl, code));
}

describe('HTTP fuzzing', () => {
  const stack = e2eStack({ name: 'fuzz', env });

  /** What a request can leave behind in the project: money, quota, stored inputs and outputs. */
  const recorded = async (
    projectId: string,
  ): Promise<{ credit_balance: number; requests_used: number; ledger: number; blobs: number; files: number }> =>
    (
      await stack.fixtures.db.query(
        `select p.credit_balance, p.requests_used,
                (select count(*)::int from credit_ledger where project_id = p.id) as ledger,
                (select count(*)::int from blobs where project_id = p.id) as blobs,
                (select count(*)::int from generated_files where project_id = p.id) as files
           from projects p where p.id = $1`,
        [projectId],
      )
    )[0];

  /** A request paused for the `lookup` tool, or a session, in the case's project. */
  async function setUp(setup: NonNullable<Case['setup']>, key: string): Promise<string> {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const res =
      setup === 'session'
        ? await fetch(`${stack.api.url}/v1/sessions`, { method: 'POST', headers })
        : await fetch(`${stack.api.url}/v1/agent`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              message: 'lookup {"q":"x"}',
              tools: [
                {
                  name: 'lookup',
                  description: 'Look up',
                  parameters: { type: 'object', properties: { q: { type: 'string' } } },
                },
              ],
            }),
          });
    const json = (await res.json()) as { id: string; status: string };
    expect({ status: res.status, state: json.status }).toEqual({
      status: 200,
      state: setup === 'session' ? 'active' : 'requires_tool_outputs',
    });
    return json.id;
  }

  it(`answers ${RUNS} generated requests within ${ANSWER_BOUND_MS / 1000} s each, never 5xx, errors in the envelope, refusals recording nothing`, async () => {
    const credits = 100;
    await fc.assert(
      fc.asyncProperty(endpoints, auth, headers, async (c, a, extra) => {
        // A project of its own per case: the rate limit never interferes, and "nothing recorded"
        // is exact.
        const { project, key } = await stack.fixtures.project({ credits });
        const own = c.setup ? await setUp(c.setup, key) : '';
        const before = await recorded(project.id);
        const answer = await send(stack.api.url, c, own, key, a, extra);
        expectContractAnswer(answer);
        if (answer.status >= 400) {
          const after = await recorded(project.id);
          expect(after).toEqual(before);
        }
      }),
      // Shrinking replays many requests; FUZZ_SHRINK=1 asks for it when hunting a failure down.
      { numRuns: RUNS, seed: SEED, endOnFailure: process.env.FUZZ_SHRINK !== '1' },
    );
  }, 600_000);
});
