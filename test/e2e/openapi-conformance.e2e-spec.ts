import { request as httpRequest } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import { ERROR_STATUS, isErrorCode } from '#libs/contracts';
import { e2eStack } from '../support/e2e-stack.js';

// The OpenAPI document says exactly what the api accepts and answers (issue 29). Requests are
// generated from the document itself (its parameter and body schemas, walked here), sent with a
// valid key over the real stack, and every answer is checked against the document:
// - no 5xx, and every status is one the operation documents, with a code that status lists;
// - a schema-valid request is never refused with 400 (a documented 4xx for a state reason, such as
//   404 for an unknown id, is fine);
// - a schema-invalid request (one part broken) is refused with a documented 400;
// - without a key, every operation answers its documented 401;
// - a method the document does not list on a known path answers 405 in the contract's error shape.
// Seeded, so a failure replays: OPENAPI_SEED=<seed>. OPENAPI_RUNS=<n> per operation searches longer.
const RUNS = Number(process.env.OPENAPI_RUNS ?? 10);
const SEED = Number(process.env.OPENAPI_SEED ?? 20261125);

type Schema = Record<string, unknown>;
interface Parameter {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly required?: boolean;
  readonly schema: Schema;
}
interface Operation {
  readonly method: string;
  readonly path: string;
  readonly parameters: readonly Parameter[];
  readonly body?: Schema;
  readonly responses: Record<string, { description?: string }>;
}
/** One request as generated: parameter values by location and name, and the JSON body. */
interface Generated {
  readonly path: Record<string, string>;
  readonly query: Record<string, string>;
  readonly header: Record<string, string>;
  readonly body?: unknown;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'options', 'trace'] as const;

// --- values from schemas ------------------------------------------------------------------------

/** Characters that break parsers, databases and headers, mixed with ordinary text. */
const edgeChar = fc.constantFrom(
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u0085',
  '\t',
  '\n',
  '\r',
  ' ',
  '\u00a0',
  '\u2028',
  '\ufeff',
  '\ud800',
  '\udfff',
  '\u{1F680}',
  '报',
  '"',
  '\\',
  '/',
  '%',
  '{',
);
const char = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: edgeChar },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
);
const codePoints = (s: string): number => [...s].length;
/** A generated request as a failure shows it: anything outside printable ASCII escaped. */
const show = (g: unknown): string =>
  JSON.stringify(g)
    .slice(0, 600)
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** Values meant to satisfy `schema` (the caller filters with the document's own validator). */
function arbitrary(schema: Schema, resolve: (ref: string) => Schema): fc.Arbitrary<unknown> {
  if (typeof schema.$ref === 'string') return arbitrary(resolve(schema.$ref), resolve);
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'boolean':
      return fc.boolean();
    case 'integer':
    case 'number':
      return fc.integer({
        min: (schema.minimum as number | undefined) ?? -1000,
        max: (schema.maximum as number | undefined) ?? 2 ** 31 - 1,
      });
    case 'array': {
      const minLength = (schema.minItems as number | undefined) ?? 0;
      return fc.array(arbitrary((schema.items as Schema | undefined) ?? {}, resolve), {
        minLength,
        maxLength: Math.min((schema.maxItems as number | undefined) ?? 3, minLength + 3),
      });
    }
    case 'object': {
      const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
      const record = Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, arbitrary(s, resolve)]));
      return fc.record(record, { requiredKeys: (schema.required as string[] | undefined) ?? [] });
    }
    case 'string':
      return stringArbitrary(schema);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return fc.uuid();
  const min = (schema.minLength as number | undefined) ?? 0;
  const max = (schema.maxLength as number | undefined) ?? Infinity;
  const fits = (s: string): boolean => codePoints(s) >= min && codePoints(s) <= max;
  // The schema's pattern, and those of an allOf (a rule in two patterns).
  const sources = [
    schema.pattern,
    ...((schema.allOf as Schema[] | undefined) ?? []).map((part) => part.pattern),
  ].filter((p): p is string => typeof p === 'string');
  const patterns = sources.map((p) => new RegExp(p, 'u'));
  const text = fc.string({ unit: char, minLength: min, maxLength: Math.min(max, min + 30) });
  const options: fc.Arbitrary<string>[] = [text];
  // The boundary lengths, where they are small enough to send.
  if (max <= 1024) options.push(fc.constant('x'.repeat(max)));
  if (min > 0) options.push(fc.constant('x'.repeat(min)));
  if (sources.length === 1) {
    let matching: fc.Arbitrary<string> | undefined;
    try {
      matching = fc.stringMatching(new RegExp(sources[0]!));
    } catch {
      matching = undefined;
    }
    if (matching) options.push(matching, matching);
  }
  return fc.oneof(...options).filter((s) => fits(s) && patterns.every((p) => p.test(s)));
}

// --- the document -------------------------------------------------------------------------------

function operationsOf(doc: { paths: Record<string, Record<string, Record<string, unknown>>> }): Operation[] {
  const list: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const content = (op.requestBody as { content?: Record<string, { schema: Schema }> } | undefined)?.content;
      list.push({
        method: method.toUpperCase(),
        path,
        parameters: (op.parameters as Parameter[] | undefined) ?? [],
        ...(content?.['application/json'] ? { body: content['application/json'].schema } : {}),
        responses: op.responses as Operation['responses'],
      });
    }
  }
  return list;
}

/** The codes a documented response lists (its description is the codes, each in backticks). */
const documentedCodes = (response: { description?: string } | undefined): string[] =>
  [...(response?.description ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly text: string;
}

/** Any method (fetch refuses TRACE), the body read unless it is a stream. */
function send(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}${path}`,
      {
        method,
        headers: {
          ...headers,
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }),
        },
      },
      (res) => {
        const answerHeaders = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)]));
        // A stream follows its run until the end; its status and headers are what is checked.
        if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          res.destroy();
          resolve({ status: res.statusCode ?? 0, headers: answerHeaders, text: '' });
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: answerHeaders,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    // As a Buffer: with a string, Node writes the headers in the same chunk as UTF-8 (a Latin-1
    // header character would arrive as two bytes).
    req.end(body === undefined ? undefined : Buffer.from(body));
  });
}

describe('the OpenAPI document against the api', () => {
  const stack = e2eStack({ name: 'openapi-conformance' });
  let doc: {
    paths: Record<string, Record<string, Record<string, unknown>>>;
    components: { schemas: Record<string, Schema> };
  };
  let ajv: Ajv2020;
  let operations: Operation[];

  beforeAll(async () => {
    doc = (await (await fetch(`${stack.api.url}/v1/openapi.json`)).json()) as typeof doc;
    ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: false });
    (addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
    ajv.addSchema({ ...doc, $id: 'openapi.json' });
    operations = operationsOf(doc);
  });

  const resolve = (ref: string): Schema =>
    ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<Record<string, unknown>>(
        (node, key) => node[key] as Record<string, unknown>,
        doc as unknown as Record<string, unknown>,
      ) as Schema;
  const validators = new Map<string, ValidateFunction>();
  /** The document's own validator of one schema (its $refs resolve in the document). */
  const validator = (schema: Schema): ValidateFunction => {
    const key = JSON.stringify(schema);
    let v = validators.get(key);
    if (!v) {
      v = ajv.compile({
        $id: `part-${validators.size}.json`,
        allOf: [
          JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/')) as Schema,
        ],
      });
      validators.set(key, v);
    }
    return v;
  };
  const valid = (schema: Schema, value: unknown): boolean => validator(schema)(value);

  /** Whether every part of a generated request is valid by the document. */
  function requestValid(op: Operation, g: Generated): boolean {
    for (const p of op.parameters) {
      const value = g[p.in][p.name];
      if (value === undefined) {
        if (p.required) return false;
        continue;
      }
      const typed =
        p.schema.type === 'integer' || p.schema.type === 'number'
          ? /^-?\d+$/.test(value)
            ? Number(value)
            : value
          : value;
      if (!valid(p.schema, typed)) return false;
    }
    return op.body === undefined || g.body === undefined || (valid(op.body, g.body) && proseRules(g.body));
  }

  /** The rules JSON Schema cannot state, which the document states in prose: each tool's name once
   * (the tools' description). */
  function proseRules(body: unknown): boolean {
    const tools = (body as { tools?: { name: string }[] }).tools;
    return !Array.isArray(tools) || new Set(tools.map((t) => t.name)).size === tools.length;
  }

  const generated = (op: Operation): fc.Arbitrary<Generated> => {
    const parts = op.parameters.map((p) => {
      const value = arbitrary(p.schema, resolve).map((v) => String(v));
      return (p.required ? value : fc.option(value, { nil: undefined })).map((v) => [p, v] as const);
    });
    const body = op.body ? arbitrary(op.body, resolve) : fc.constant(undefined);
    return fc.tuple(fc.tuple(...parts), body).map(([values, b]) => {
      const g: {
        path: Record<string, string>;
        query: Record<string, string>;
        header: Record<string, string>;
        body?: unknown;
      } = { path: {}, query: {}, header: {} };
      for (const [p, v] of values) if (v !== undefined) g[p.in][p.name] = v;
      if (b !== undefined) g.body = b;
      return g;
    });
  };

  function target(op: Operation, g: Generated): string {
    const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(g.path[name] ?? ''));
    const query = new URLSearchParams(g.query).toString();
    return query ? `${path}?${query}` : path;
  }

  /** The answer is one the operation documents: its status, a code that status lists, the error shape. */
  function expectDocumented(op: Operation, answer: Answer, what: string): void {
    const where = `${op.method} ${op.path} (${what}) answered ${answer.status} ${answer.text.slice(0, 300)}`;
    if (answer.status >= 500 && !op.responses[String(answer.status)]) throw new Error(`undocumented 5xx: ${where}`);
    const response = op.responses[String(answer.status)] as
      { content?: Record<string, { schema: Schema }> } | undefined;
    if (!response) throw new Error(`undocumented status: ${where}`);
    // The body as documented for its media type (a file download documents none).
    const mediaType = (answer.headers['content-type'] ?? '').split(';')[0]!.trim();
    if (response.content && !response.content[mediaType])
      throw new Error(`undocumented media type ${mediaType}: ${where}`);
    const schema = response.content?.[mediaType]?.schema;
    if (schema && mediaType === 'application/json' && !valid(schema, JSON.parse(answer.text))) {
      throw new Error(`body not as documented (${ajv.errorsText(validator(schema).errors)}): ${where}`);
    }
    if (answer.status < 400) return;
    const parsed = JSON.parse(answer.text) as { error: { code: string; message: string; docs: string } };
    if (!isErrorCode(parsed.error?.code) || ERROR_STATUS[parsed.error.code] !== answer.status)
      throw new Error(`not the contract's error: ${where}`);
    if (!documentedCodes(op.responses[String(answer.status)]).includes(parsed.error.code))
      throw new Error(`code not listed under ${answer.status}: ${where}`);
  }

  /** A request in a project of its own (the rate limit never interferes); `{id}` is sometimes a
   * real id of that project, so the found paths are exercised too. */
  async function sendGenerated(op: Operation, g: Generated, realId: boolean, withKey = true): Promise<Answer> {
    const { key } = await stack.fixtures.project({ credits: 100 });
    const path = { ...g.path };
    if (realId && 'id' in path) path.id = await ownId(op.path, key);
    const headers: Record<string, string> = { ...g.header, ...(withKey ? { authorization: `Bearer ${key}` } : {}) };
    return send(
      stack.api.url,
      op.method,
      target(op, { ...g, path }),
      headers,
      g.body === undefined ? undefined : JSON.stringify(g.body),
    );
  }

  async function ownId(path: string, key: string): Promise<string> {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    if (path.startsWith('/v1/sessions/'))
      return (
        (await (await fetch(`${stack.api.url}/v1/sessions`, { method: 'POST', headers })).json()) as { id: string }
      ).id;
    if (path.startsWith('/v1/files/')) {
      const res = (await (
        await fetch(`${stack.api.url}/v1/agent`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            message: 'create_document {"name":"a.md","content":"# A"}',
            capabilities: ['documents'],
          }),
        })
      ).json()) as { files: { url?: string }[] };
      return res.files[0]?.url?.split('/').at(-1) ?? '';
    }
    return (
      (await (
        await fetch(`${stack.api.url}/v1/agent`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ message: 'hello' }),
        })
      ).json()) as { id: string }
    ).id;
  }

  it('answers schema-valid requests to every operation with a documented status, never a 400 or a 5xx', async () => {
    for (const op of operations) {
      await fc.assert(
        fc.asyncProperty(
          generated(op).filter((g) => requestValid(op, g)),
          fc.boolean(),
          async (g, realId) => {
            const answer = await sendGenerated(op, g, realId);
            expectDocumented(op, answer, `schema-valid ${show(g)}`);
            if (answer.status === 400)
              throw new Error(`a schema-valid request refused: ${op.method} ${op.path} ${show(g)} -> ${answer.text}`);
          },
        ),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }
  }, 240_000);

  /** One part of a valid request broken: a parameter or a body field given a value its schema refuses. */
  /** The paths of every value below the top of `value` (keys and indexes). */
  const nodePaths = (value: unknown, at: (string | number)[] = []): (string | number)[][] =>
    typeof value !== 'object' || value === null
      ? []
      : Object.entries(value).flatMap(([k, v]) => [
          [...at, Array.isArray(value) ? Number(k) : k],
          ...nodePaths(v, [...at, Array.isArray(value) ? Number(k) : k]),
        ]);
  const replaced = (value: unknown, at: readonly (string | number)[], v: unknown): unknown => {
    if (at.length === 0) return v;
    const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
    copy[at[0]!] = replaced(copy[at[0]!], at.slice(1), v);
    return copy;
  };

  const broken = (op: Operation): fc.Arbitrary<Generated> =>
    generated(op).chain((g) => {
      const mutations: fc.Arbitrary<Generated>[] = [];
      for (const p of op.parameters.filter((q) => q.in !== 'path')) {
        mutations.push(
          fc
            .constantFrom('', '-1', '0', 'x', '1.5', '%', 'k'.repeat(300), '\t')
            .map((v) => ({ ...g, [p.in]: { ...g[p.in], [p.name]: v } })),
        );
      }
      if (op.body) {
        const body = (g.body ?? {}) as Record<string, unknown>;
        const oddValue = fc.oneof(
          fc.constantFrom<unknown>(
            null,
            1,
            -1,
            1.5,
            true,
            'x',
            '',
            ' ',
            '\u0000',
            '\ud800',
            [],
            {},
            [''],
            [{}],
            'x'.repeat(300),
          ),
          fc.jsonValue({ maxDepth: 1 }),
        );
        mutations.push(fc.constantFrom<unknown>(null, 1, 'x', [], true).map((b) => ({ ...g, body: b })));
        const schema = typeof op.body.$ref === 'string' ? resolve(op.body.$ref) : op.body;
        const fields = Object.keys((schema.properties as Schema | undefined) ?? {});
        if (fields.length)
          mutations.push(
            fc.tuple(fc.constantFrom(...fields), oddValue).map(([k, v]) => ({ ...g, body: { ...body, [k]: v } })),
          );
        // Deeper: any value inside the body (a file's name, a tool's parameters, an output) replaced.
        const paths = nodePaths(body);
        if (paths.length)
          mutations.push(
            fc.tuple(fc.constantFrom(...paths), oddValue).map(([at, v]) => ({ ...g, body: replaced(body, at, v) })),
          );
      }
      return mutations.length ? fc.oneof(...mutations) : fc.constant(g);
    });

  it('refuses schema-invalid requests with a documented 400', async () => {
    for (const op of operations) {
      if (!op.body && !op.parameters.some((p) => p.in !== 'path')) continue;
      await fc.assert(
        fc.asyncProperty(
          broken(op).filter((g) => !requestValid(op, g)),
          async (g) => {
            const answer = await sendGenerated(op, g, false);
            expectDocumented(op, answer, `schema-invalid ${show(g)}`);
            if (answer.status !== 400)
              throw new Error(
                `a schema-invalid request not refused with 400: ${op.method} ${op.path} ${show(g)} -> ${answer.status} ${answer.text.slice(0, 300)}`,
              );
          },
        ),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }
  }, 240_000);

  it('answers every operation without a key with its documented 401', async () => {
    for (const op of operations) {
      const g = fc.sample(
        generated(op).filter((x) => requestValid(op, x)),
        { numRuns: 1, seed: SEED },
      )[0]!;
      const answer = await sendGenerated(op, g, false, false);
      expect({ op: `${op.method} ${op.path}`, status: answer.status }).toEqual({
        op: `${op.method} ${op.path}`,
        status: 401,
      });
      expectDocumented(op, answer, 'no key');
    }
  });

  it('answers a method the document does not list on a known path with 405, naming the allowed ones', async () => {
    const { key } = await stack.fixtures.project({ credits: 100 });
    const example = '3b0f6e52-1c4d-4a8e-9d57-1f2e3d4c5b6a';
    for (const [path, item] of Object.entries(doc.paths)) {
      const allowed = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase());
      for (const method of METHODS.map((m) => m.toUpperCase()).filter((m) => !allowed.includes(m))) {
        const answer = await send(stack.api.url, method, path.replace(/\{[^}]+\}/g, example), {
          authorization: `Bearer ${key}`,
        });
        expect({ request: `${method} ${path}`, status: answer.status }).toEqual({
          request: `${method} ${path}`,
          status: 405,
        });
        expect(JSON.parse(answer.text)).toEqual({
          error: {
            code: 'method_not_allowed',
            message: expect.any(String),
            docs: expect.stringContaining('/docs/errors#method_not_allowed'),
          },
        });
        expect(answer.headers.allow?.split(', ').sort()).toEqual(
          [...allowed, ...(allowed.includes('GET') ? ['HEAD'] : [])].sort(),
        );
      }
    }
  });
});
