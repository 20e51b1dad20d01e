import { createContext, Script, type RunningScriptOptions } from 'node:vm';
import { callWorkflowsWithoutWatchdog, SDK_NO_LIMIT_MS } from './workflow-vm-calls.js';

describe('callWorkflowsWithoutWatchdog', () => {
  const real = Script.prototype.runInContext;
  const seen: (RunningScriptOptions | undefined)[] = [];

  beforeAll(() => {
    // What reaches Node's runInContext once the worker's wrapper is in front of it.
    Script.prototype.runInContext = function (this: Script, context, options?: RunningScriptOptions) {
      seen.push(options);
      return real.call(this, context, options);
    } as typeof real;
    callWorkflowsWithoutWatchdog();
  });
  afterAll(() => {
    Script.prototype.runInContext = real;
  });

  it("drops the SDK's no-limit timeout, so that no watchdog thread starts for the call", () => {
    seen.length = 0;
    expect(new Script('6 * 7').runInContext(createContext({}), { timeout: SDK_NO_LIMIT_MS, displayErrors: true })).toBe(
      42,
    );
    expect(seen).toEqual([{ displayErrors: true }]);
  });

  it('keeps any other timeout, which still stops a script that runs too long', () => {
    seen.length = 0;
    expect(() => new Script('for (;;) {}').runInContext(createContext({}), { timeout: 20 })).toThrow(/timed out/);
    expect(seen).toEqual([{ timeout: 20 }]);
  });
});
