import { Context } from '@temporalio/activity';
import { runWithLogContext } from './log-context.js';

type ActivityFunction = (...args: never[]) => Promise<unknown>;

/** Wraps a worker's activities so every line they log carries `workflow_id` (from the activity's
 * Info) and the `request_id`, `project_id` and `session_id` of their input, when it has them. */
export function withActivityLogContext<T extends Record<string, ActivityFunction>>(activities: T): T {
  const wrapped: Record<string, ActivityFunction> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = (...args: never[]) => {
      const first: unknown = args[0];
      const input = (typeof first === 'object' && first !== null ? first : {}) as {
        requestId?: unknown;
        projectId?: unknown;
        sessionId?: unknown;
      };
      const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
      return runWithLogContext(
        {
          workflow_id: Context.current().info.workflowExecution?.workflowId,
          request_id: text(input.requestId),
          project_id: text(input.projectId),
          session_id: text(input.sessionId),
        },
        () => fn(...args),
      );
    };
  }
  return wrapped as T;
}
