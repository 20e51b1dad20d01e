import { checkReadiness, type ReadinessProbe } from './index.js';

const up: ReadinessProbe = { name: 'postgres', check: async () => {} };
const failing: ReadinessProbe = {
  name: 'kafka',
  check: async () => {
    throw new Error('connection refused');
  },
};
const hanging: ReadinessProbe = {
  name: 'temporal',
  check: (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
};

describe('checkReadiness', () => {
  it('is ready when every component answers', async () => {
    const result = await checkReadiness([up], 1000);
    expect(result.status).toBe('ready');
    expect(result.components.postgres?.status).toBe('up');
  });

  it('reports each component on its own, with the reason for a failure and a bound on a hang', async () => {
    const result = await checkReadiness([up, failing, hanging], 50);
    expect(result.status).toBe('unavailable');
    expect(result.components.postgres?.status).toBe('up');
    expect(result.components.kafka).toMatchObject({ status: 'down', error: 'connection refused' });
    expect(result.components.temporal).toMatchObject({ status: 'down', error: 'no answer within 50 ms' });
  });
});
