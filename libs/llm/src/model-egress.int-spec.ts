import { createServer, type Server, type Socket } from 'node:net';
import type { ChatMessage } from '#libs/contracts';
import { startModelServer, type ModelServer } from '../../../test/support/model-server.js';
import { callModel, ModelError, type ModelRequest } from './index.js';

// A project's model base URL is egress like fetch_url's (DESIGN.md section 11): the call goes
// through libs/egress, so a base URL on a loopback, private or metadata address is refused before
// any connection unless the operator's MODEL_ALLOW_HOSTS names the host; and what a tenant reads
// of a provider's failure is the service's own words, never the remote body.

const key = 'sk-egress-test-0123456789abcdef';
const question: ChatMessage[] = [{ role: 'user', content: 'Hello?' }];

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof ModelError) return e;
    throw e;
  }
  throw new Error('expected a ModelError');
}

/** A TCP listener on loopback that records every byte anyone sends it (and answers nothing). */
async function listener(): Promise<{
  port: number;
  connections: () => number;
  received: () => string;
  close(): Promise<void>;
}> {
  let connections = 0;
  let received = '';
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => connections,
    received: () => received,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe.each(['openai', 'anthropic'] as const)('a %s model base URL is egress', (provider) => {
  it('refuses a base URL on loopback that MODEL_ALLOW_HOSTS does not name: nothing reaches the listener, the key never leaves', async () => {
    const target = await listener();
    try {
      const request = {
        provider,
        model: 'test-model',
        baseUrl: `http://127.0.0.1:${target.port}${provider === 'openai' ? '/v1' : ''}`,
        apiKey: key,
        messages: question,
        tools: [],
        allowHosts: [],
        signal: AbortSignal.timeout(5_000),
      };
      const error = await failure(callModel(request as ModelRequest));
      expect(error).toMatchObject({ kind: 'rejected', retryable: false });
      expect(error.message).toContain('127.0.0.1 is a loopback address');
      expect(error.message).toContain('MODEL_ALLOW_HOSTS');
      expect(error.message).not.toContain(key);
      expect(target.connections()).toBe(0);
      expect(target.received()).toBe('');
    } finally {
      await target.close();
    }
  });

  it('refuses a name that resolves to loopback (localhost) unless the name is allowed', async () => {
    const server = await startModelServer();
    try {
      const port = new URL(server.origin).port;
      const request = (allowHosts: string[]) =>
        ({
          provider,
          model: 'test-model',
          baseUrl: `http://localhost:${port}${provider === 'openai' ? '/v1' : ''}`,
          apiKey: key,
          messages: question,
          tools: [],
          allowHosts,
        }) as ModelRequest;
      const error = await failure(callModel(request([])));
      expect(error.message).toMatch(/localhost resolves to (127\.0\.0\.1|::1), which is a loopback address/);
      expect(server.requests).toHaveLength(0);

      server.reply({ content: 'Hi from localhost.' });
      await expect(callModel(request(['localhost']))).resolves.toMatchObject({ content: 'Hi from localhost.' });
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  describe('with the host allowed', () => {
    let server: ModelServer;
    const request = (overrides: Partial<ModelRequest> = {}): ModelRequest =>
      ({
        provider,
        model: 'test-model',
        baseUrl: provider === 'openai' ? server.url : server.origin,
        apiKey: key,
        messages: question,
        tools: [],
        allowHosts: ['127.0.0.1'],
        ...overrides,
      }) as ModelRequest;

    beforeEach(async () => {
      server = await startModelServer();
    });
    afterEach(async () => {
      await server.close();
    });

    it('goes through, as before, streaming or not', async () => {
      server.reply({ content: 'Hello there.' }, { content: 'Streamed hello.' });
      await expect(callModel(request())).resolves.toMatchObject({ content: 'Hello there.' });
      const tokens: string[] = [];
      await expect(callModel(request({ onToken: (t) => tokens.push(t) }))).resolves.toMatchObject({
        content: 'Streamed hello.',
      });
      expect(tokens.join('')).toBe('Streamed hello.');
      expect(server.requests).toHaveLength(2);
    });

    it('also through a network entry (127.0.0.0/8)', async () => {
      server.reply({ content: 'By network.' });
      await expect(callModel(request({ allowHosts: ['127.0.0.0/8'] } as Partial<ModelRequest>))).resolves.toMatchObject(
        { content: 'By network.' },
      );
    });

    it("tells a refused key in the service's words: the provider's body text reaches the tenant nowhere", async () => {
      const marker = 'REMOTE-BODY-MARKER-7f3a';
      server.reply({ status: 401, errorMessage: `${marker}: Incorrect API key provided, see https://evil.example` });
      const error = await failure(callModel(request()));
      expect(error).toMatchObject({ kind: 'rejected', retryable: false, status: 401 });
      expect(error.message).toBe(`model provider ${provider} refused the key (HTTP 401)`);
      expect(JSON.stringify({ message: error.message, kind: error.kind, status: error.status })).not.toContain(marker);
    });

    it.each([
      [400, 'rejected', 'rejected the request (HTTP 400)'],
      [404, 'rejected', 'did not find the model or the endpoint (HTTP 404)'],
      [429, 'unavailable', 'rate-limited the request (HTTP 429)'],
      [503, 'unavailable', 'is unavailable (HTTP 503)'],
    ])('says %i in its own words, without the body', async (status, kind, words) => {
      const marker = `MARKER-${status}-body`;
      server.reply({ status, errorMessage: marker });
      const error = await failure(callModel(request()));
      expect(error).toMatchObject({ kind, status });
      expect(error.message).toBe(`model provider ${provider} ${words}`);
    });
  });
});
