import { startModelServer, type ModelServer } from './model-server.js';

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

// The stream as the client received it, one string per network read.
async function reads(res: Response): Promise<string[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read())
    parts.push(decoder.decode(r.value, { stream: true }));
  return parts;
}

describe('startModelServer', () => {
  let server: ModelServer;
  beforeEach(async () => {
    server = await startModelServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('listens on loopback and exposes the base URLs of both adapters', () => {
    expect(server.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).toBe(`${server.origin}/v1`);
  });

  it('answers queued replies in order, then echoes the last user message, and records requests', async () => {
    server.reply({ content: 'first' });
    const messages = [{ role: 'user', content: 'ping' }];
    const a = await post(`${server.url}/chat/completions`, { model: 'm1', messages }, { authorization: 'Bearer k' });
    expect(await a.json()).toMatchObject({
      model: 'm1',
      choices: [{ message: { role: 'assistant', content: 'first' }, finish_reason: 'stop' }],
    });
    const b = await post(`${server.origin}/chat/completions`, { model: 'm1', messages });
    expect(await b.json()).toMatchObject({
      choices: [{ message: { content: 'You said: "ping"' } }],
      usage: { prompt_tokens: expect.any(Number) },
    });
    const c = await post(`${server.origin}/v1/messages`, { model: 'm2', max_tokens: 10, messages });
    expect(await c.json()).toMatchObject({
      type: 'message',
      model: 'm2',
      content: [{ type: 'text', text: 'You said: "ping"' }],
      stop_reason: 'end_turn',
    });
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/chat/completions', '/chat/completions', '/v1/messages']);
    expect(server.requests[0]).toMatchObject({
      headers: { authorization: 'Bearer k' },
      body: { model: 'm1', messages },
    });
  });

  it('answers tool calls in each protocol’s JSON form', async () => {
    const toolCalls = [{ name: 'run_javascript', arguments: { code: '1+1' } }];
    server.reply({ toolCalls }, { toolCalls, usage: { input: 4, output: 2 } });
    const a = await (await post(`${server.url}/chat/completions`, { model: 'm', messages: [] })).json();
    expect(a).toMatchObject({
      choices: [
        {
          finish_reason: 'tool_calls',
          message: {
            content: null,
            tool_calls: [{ type: 'function', function: { name: 'run_javascript', arguments: '{"code":"1+1"}' } }],
          },
        },
      ],
    });
    const b = await (await post(`${server.origin}/v1/messages`, { model: 'm', messages: [] })).json();
    expect(b).toMatchObject({
      stop_reason: 'tool_use',
      content: [{ type: 'tool_use', name: 'run_javascript', input: { code: '1+1' } }],
      usage: { input_tokens: 4, output_tokens: 2 },
    });
  });

  it('streams OpenAI chunks word by word in separate reads, tool calls as deltas, usage, then [DONE]', async () => {
    server.reply({ content: 'one two three four', toolCalls: [{ name: 't', arguments: { x: 1 } }] });
    const res = await post(`${server.url}/chat/completions`, {
      model: 'm',
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const parts = await reads(res);
    expect(parts.length).toBeGreaterThan(4);
    const text = parts.join('');
    const chunks = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)));
    expect(
      chunks.flatMap((c) => c.choices.map((ch: { delta: { content?: string } }) => ch.delta.content ?? '')).join(''),
    ).toBe('one two three four');
    const args = chunks.flatMap((c) =>
      c.choices.flatMap(
        (ch: { delta: { tool_calls?: { function: { arguments?: string } }[] } }) => ch.delta.tool_calls ?? [],
      ),
    );
    expect(args.length).toBeGreaterThan(1);
    expect(args.map((t: { function: { arguments?: string } }) => t.function.arguments ?? '').join('')).toBe('{"x":1}');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: expect.any(Number) } });
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('streams Anthropic events from message_start to message_stop', async () => {
    server.reply({ content: 'alpha beta gamma', toolCalls: [{ name: 't', arguments: { y: 'z' } }] });
    const parts = await reads(await post(`${server.origin}/v1/messages`, { model: 'm', messages: [], stream: true }));
    expect(parts.length).toBeGreaterThan(4);
    const events = parts
      .join('')
      .split('\n\n')
      .filter(Boolean)
      .map((e) => JSON.parse(e.split('\n')[1]!.slice(6)));
    expect(events[0].type).toBe('message_start');
    expect(events.at(-1).type).toBe('message_stop');
    const deltas = events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta);
    expect(
      deltas
        .filter((d) => d.type === 'text_delta')
        .map((d) => d.text)
        .join(''),
    ).toBe('alpha beta gamma');
    expect(
      deltas
        .filter((d) => d.type === 'input_json_delta')
        .map((d) => d.partial_json)
        .join(''),
    ).toBe('{"y":"z"}');
  });

  it('answers 401 in each protocol’s error shape when the key is wrong', async () => {
    server.requireKey('right');
    const a = await post(
      `${server.url}/chat/completions`,
      { model: 'm', messages: [] },
      { authorization: 'Bearer wrong' },
    );
    expect(a.status).toBe(401);
    expect(await a.json()).toMatchObject({
      error: { code: 'invalid_api_key', message: expect.stringContaining('Incorrect API key') },
    });
    const b = await post(`${server.origin}/v1/messages`, { model: 'm', messages: [] }, { 'x-api-key': 'wrong' });
    expect(b.status).toBe(401);
    expect(await b.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const ok = await post(`${server.origin}/v1/messages`, { model: 'm', messages: [] }, { 'x-api-key': 'right' });
    expect(ok.status).toBe(200);
  });

  it('answers scripted error statuses, and 404 for unknown routes', async () => {
    server.reply({ status: 503, errorMessage: 'down for maintenance' }, { status: 429 });
    const a = await post(`${server.url}/chat/completions`, { model: 'm', messages: [] });
    expect(a.status).toBe(503);
    expect(await a.json()).toMatchObject({ error: { message: 'down for maintenance' } });
    const b = await post(`${server.origin}/v1/messages`, { model: 'm', messages: [] });
    expect(b.status).toBe(429);
    expect(await b.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect((await post(`${server.origin}/v1/embeddings`, {})).status).toBe(404);
  });

  it('delays a reply and still closes promptly with the request pending', async () => {
    server.reply({ content: 'slow', delayMs: 60_000 });
    const pending = post(`${server.url}/chat/completions`, { model: 'm', messages: [] }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await pending).toMatchObject({ message: 'fetch failed' });
    server = await startModelServer(); // afterEach closes it
  });
});
