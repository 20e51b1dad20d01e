import { checkReadiness, ProbeFailure, type ReadinessProbe } from './index.js';

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
    // The driver's text stays in the log: callers get a fixed reason.
    expect(result.components.kafka).toMatchObject({ status: 'down', error: 'unreachable' });
    expect(result.components.temporal).toMatchObject({ status: 'down', error: 'no answer within 50 ms' });
  });

  it("shows a ProbeFailure's own message, and a non-critical component never makes the app unavailable", async () => {
    const lagging: ReadinessProbe = {
      name: 'outbox',
      critical: false,
      check: async () => {
        throw new ProbeFailure('the oldest unsent outbox row is 95 s old');
      },
    };
    const result = await checkReadiness([up, lagging], 1000);
    expect(result.status).toBe('ready');
    expect(result.components.outbox).toMatchObject({
      status: 'down',
      error: 'the oldest unsent outbox row is 95 s old',
    });
  });
});
