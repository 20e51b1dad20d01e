import { callModel, ModelError, type ModelRequest } from './index.js';

const base: ModelRequest = {
  provider: 'scripted',
  model: 'scripted',
  baseUrl: null,
  apiKey: null,
  allowHosts: [],
  messages: [{ role: 'user', content: 'stream me please' }],
  tools: [],
};

describe('callModel with the scripted provider (no network)', () => {
  it('streams the reply word by word, tokens concatenating to the content', async () => {
    const tokens: string[] = [];
    const turn = await callModel({ ...base, onToken: (t) => tokens.push(t) });
    expect(turn.content).toBe('You said: "stream me please"');
    expect(tokens).toEqual(['You ', 'said: ', '"stream ', 'me ', 'please"']);
    expect(tokens.join('')).toBe(turn.content);
  });

  it('stops when the signal is aborted, with the caller’s reason', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled by the workflow');
    const tokens: string[] = [];
    const call = callModel({
      ...base,
      signal: controller.signal,
      onToken: (t) => {
        tokens.push(t);
        if (tokens.length === 2) controller.abort(reason);
      },
    });
    await expect(call).rejects.toBe(reason);
    expect(tokens).toHaveLength(2);
  });

  it('refuses an unknown provider as a rejected ModelError', async () => {
    const call = callModel({ ...base, provider: 'gemini' as ModelRequest['provider'] });
    await expect(call).rejects.toBeInstanceOf(ModelError);
    await expect(call).rejects.toMatchObject({ kind: 'rejected', retryable: false });
  });
});
