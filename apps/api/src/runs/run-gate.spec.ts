import { jest } from '@jest/globals';
import { RunGate } from './run-gate.js';

const refused = () => new Error('refused');

describe('RunGate', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('lets runs in up to its limit at once', async () => {
    const gate = new RunGate(2, 1000);
    await gate.enter(refused);
    await gate.enter(refused);
    expect(gate.load).toEqual({ running: 2, waiting: 0 });
  });

  it('makes the next run wait for a release, first come first served', async () => {
    const gate = new RunGate(1, 1000);
    const release = await gate.enter(refused);
    const order: string[] = [];
    const a = gate.enter(refused).then((r) => (order.push('a'), r));
    const b = gate.enter(refused).then((r) => (order.push('b'), r));
    expect(gate.load).toEqual({ running: 1, waiting: 2 });
    release();
    (await a)();
    (await b)();
    expect(order).toEqual(['a', 'b']);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses a run whose turn did not come in time, and forgets it', async () => {
    const gate = new RunGate(1, 500);
    await gate.enter(refused);
    const late = gate.enter(refused);
    jest.advanceTimersByTime(501);
    await expect(late).rejects.toThrow('refused');
    expect(gate.load).toEqual({ running: 1, waiting: 0 });
  });

  it('counts a release once, however often it is called', async () => {
    const gate = new RunGate(1, 1000);
    const release = await gate.enter(refused);
    release();
    release();
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
    await gate.enter(refused);
    expect(gate.load.running).toBe(1);
  });
});
