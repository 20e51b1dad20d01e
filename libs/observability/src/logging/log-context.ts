import { AsyncLocalStorage } from 'node:async_hooks';

/** The ids a log line carries when they are known where it is written. */
export interface LogContext {
  request_id?: string;
  project_id?: string;
  session_id?: string;
  workflow_id?: string;
}

const KEY = Symbol.for('mas.observability.log-context');
// One store per process, even if this module is loaded twice (the tests' module registries).
const storage: AsyncLocalStorage<LogContext> = ((globalThis as { [KEY]?: AsyncLocalStorage<LogContext> })[KEY] ??=
  new AsyncLocalStorage<LogContext>());

/** Runs `fn` with `fields` added to the log context of everything it awaits. */
export function runWithLogContext<T>(fields: LogContext, fn: () => T): T {
  return storage.run({ ...storage.getStore(), ...withoutUndefined(fields) }, fn);
}

/** Adds ids learned on the way (the project once authenticated, the request id once created) to
 * the current context, seen by every later log line of this unit of work. No-op outside one. */
export function addLogContext(fields: LogContext): void {
  const store = storage.getStore();
  if (store) Object.assign(store, withoutUndefined(fields));
}

/** The current log context (empty outside a unit of work). */
export function currentLogContext(): Readonly<LogContext> {
  return storage.getStore() ?? {};
}

function withoutUndefined(fields: LogContext): LogContext {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => typeof v === 'string' && v !== '')) as LogContext;
}
