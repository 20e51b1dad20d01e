import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import {
  DEFAULT_CAPABILITY_SURCHARGES,
  firstStopUpdate,
  stateQuery,
  submitToolOutputsUpdate,
  type AgentActivities,
  type AgentRequestInput,
  type AgentStop,
} from '#libs/contracts';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { scriptedTurn } from '#libs/llm';
import { creditsFor } from '#libs/metering';
import { sourceBundlerOptions } from '../../apps/worker/src/workflow-bundle.js';
import { memoryConversations } from './memory-conversations.js';

// The workflow's own logic under Temporal's time-skipping test server: the 5-minute timer runs in
// milliseconds. Activities are in-memory stand-ins (the model is the pure scripted model); the
// end-to-end tests run the real ones.
const workflowsPath = fileURLToPath(new URL('../src/index.ts', import.meta.url));

// One store for every worker of the file: like PostgreSQL, it outlives a worker's restart.
const conversations = memoryConversations({
  model: async ({ requestId, messages, tools }) => {
    const last = messages.at(-1);
    // "hang": the model never answers; "hang after a step": it answers once (an unknown tool's
    // call), then never again. Both hold their call until the activity is cancelled.
    if (last?.role === 'user' && last.content === 'hang after a step') {
      return {
        content: '',
        toolCalls: [{ id: 'call_x', name: 'nowhere', arguments: {} }],
        usage: { inputTokens: 10, outputTokens: 2 },
        model: 'test',
      };
    }
    if (last?.content === 'hang' || (last?.role === 'tool' && last.name === 'nowhere')) {
      hanging.add(requestId);
      const ctx = Context.current();
      for (;;) {
        ctx.heartbeat();
        await ctx.sleep(50);
      }
    }
    return scriptedTurn({ model: 'scripted', messages, tools });
  },
});
/** Requests whose model call is holding (and waits for a cancellation). */
const hanging = new Set<string>();
const modelHolding = async (requestId: string): Promise<void> => {
  while (!hanging.has(requestId)) await new Promise((resolve) => setTimeout(resolve, 20));
};

function fakeActivities(ledger: Ledger): AgentActivities {
  return {
    beginRequest: conversations.beginRequest(async () => ({ ok: true, balance: 94, requestsUsed: 1 })),
    releaseReservation: async () => void (ledger.released += 1),
    ...conversations.activities,
    recordStop: async ({ status, stop, capabilitiesUsed, surcharges }) => {
      if (ledger.failStops) throw ApplicationFailure.create({ message: 'the database is gone', nonRetryable: true });
      ledger.stops.push(`${stop}:${status}`);
      // Like libs/metering: the first stop settles; a failed run, or a cancelled one whose model
      // never answered, costs nothing.
      const answered =
        status === 'completed' ||
        status === 'requires_tool_outputs' ||
        (status === 'cancelled' && capabilitiesUsed.includes('chat'));
      const charged = stop === 1 && answered ? creditsFor(capabilitiesUsed, surcharges) : 0;
      if (stop === 1) ledger.settled.push(charged);
      return { creditsThisRequest: charged, creditsRemaining: 100 - charged };
    },
    recordToolOutputs: async () => undefined,
    emitStreamEvents: async () => ({ nextSeq: 1 }),
    streamedText: async () => '',
  };
}

interface Ledger {
  settled: number[];
  stops: string[];
  released: number;
  failStops?: boolean;
}

const lookupTool = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};

function input(message: string): AgentRequestInput {
  return {
    requestId: randomUUID(),
    projectId: randomUUID(),
    plan: 'pro',
    message: { text: message },
    capabilities: ['chat'],
    capabilitiesRequested: false,
    tools: [lookupTool],
    files: [],
    maxCredits: 6,
    surcharges: DEFAULT_CAPABILITY_SURCHARGES,
    monthlyQuota: 100,
    stream: false,
  };
}

describe('agentRequestWorkflow', () => {
  let env: TestWorkflowEnvironment;
  const taskQueue = 'workflow-test';

  beforeAll(async () => {
    const path = process.env.MAS_TEMPORAL_TEST_SERVER;
    if (!path) throw new Error('MAS_TEMPORAL_TEST_SERVER is not set: run the tests with `npm test`');
    env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } });
    for (const [name, type] of [
      ['ProjectId', 'KEYWORD'],
      ['AgentStatus', 'KEYWORD'],
      ['Capabilities', 'KEYWORD_LIST'],
    ] as const) {
      await env.connection.operatorService
        .addSearchAttributes({
          namespace: env.namespace ?? 'default',
          searchAttributes: { [name]: type === 'KEYWORD' ? 2 : 7 },
        })
        .catch(() => undefined);
    }
  });
  afterAll(async () => {
    await env?.teardown();
  });

  const newWorker = (ledger: Ledger, options: { cache?: boolean } = {}) =>
    Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath,
      bundlerOptions: sourceBundlerOptions(),
      activities: fakeActivities(ledger),
      // Without a cache there is no sticky queue: the next task goes to any worker, which must
      // rebuild the workflow from its history, as after a process restart.
      ...(options.cache === false ? { maxCachedWorkflows: 0 } : {}),
    });

  async function start(message: string, patch: Partial<AgentRequestInput> = {}) {
    const handle = await env.client.workflow.start('agentRequestWorkflow', {
      taskQueue,
      workflowId: `agent-request-${randomUUID()}`,
      args: [{ ...input(message), ...patch }],
    });
    const first = await handle.executeUpdate(firstStopUpdate);
    return { handle, first };
  }

  it('expires the tool context 5 minutes after the pause, and refuses outputs after that', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, first } = await start('please lookup {"q":"a"}');
      expect(first).toMatchObject({
        status: 'requires_tool_outputs',
        toolCalls: [{ name: 'lookup', arguments: { q: 'a' } }],
        creditsThisRequest: 1,
      });
      await env.sleep('4 minutes');
      expect((await handle.query(stateQuery)).status).toBe('requires_tool_outputs');
      await env.sleep('61 seconds');
      const final: AgentStop = await handle.result();
      expect(final.status).toBe('expired');
      // The workflow has closed: Temporal refuses the Update as NOT_FOUND, which the api answers
      // 404 context_expired (apps/api/src/runs/temporal-errors.ts).
      await expect(
        handle.executeUpdate(submitToolOutputsUpdate, {
          args: [{ projectId: first.projectId, outputs: [{ toolCallId: first.toolCalls![0]!.id, output: 'late' }] }],
        }),
      ).rejects.toThrow(WorkflowNotFoundError);
    });
    expect(ledger.settled).toEqual([1]);
    expect(ledger.stops).toEqual(['1:requires_tool_outputs', '2:expired']);
  });

  it('answers outputs submitted just before the 5 minutes are up', async () => {
    const worker = await newWorker({ settled: [], stops: [], released: 0 });
    await worker.runUntil(async () => {
      const { handle, first } = await start('please lookup {"q":"b"}');
      await env.sleep('290 seconds');
      const next = await handle.executeUpdate(submitToolOutputsUpdate, {
        args: [
          { projectId: first.projectId, outputs: [{ toolCallId: first.toolCalls![0]!.id, output: 'just in time' }] },
        ],
      });
      expect(next).toMatchObject({
        status: 'completed',
        creditsThisRequest: 0,
        message: expect.stringContaining('just in time'),
      });
    });
  });

  it('goes through several rounds of tool calls, each with a fresh 5-minute context', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, first } = await start('lookup {"q":"c"} rounds:3');
      let stop = first;
      const ids = new Set<string>();
      for (let round = 1; round <= 3; round++) {
        expect(stop.status).toBe('requires_tool_outputs');
        const call = stop.toolCalls![0]!;
        ids.add(call.id);
        await env.sleep('4 minutes');
        stop = await handle.executeUpdate(submitToolOutputsUpdate, {
          args: [{ projectId: first.projectId, outputs: [{ toolCallId: call.id, output: `result ${round}` }] }],
        });
      }
      expect(ids.size).toBe(3);
      expect(stop).toMatchObject({ status: 'completed', message: expect.stringContaining('result 3') });
    });
    expect(ledger.settled).toEqual([1]);
  });

  it("refuses outputs that do not answer exactly the pending calls, and another project's", async () => {
    const worker = await newWorker({ settled: [], stops: [], released: 0 });
    await worker.runUntil(async () => {
      const { handle, first } = await start('lookup {"q":"d"}');
      const submit = (projectId: string, toolCallId: string) =>
        handle.executeUpdate(submitToolOutputsUpdate, {
          args: [{ projectId, outputs: [{ toolCallId, output: 'x' }] }],
        });
      const wrongId = await submit(first.projectId, 'call_nope').catch((e: unknown) => e);
      expect(wrongId).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((wrongId as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'invalid_tool_outputs' });
      const otherProject = await submit(randomUUID(), first.toolCalls![0]!.id).catch((e: unknown) => e);
      expect((otherProject as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'context_expired' });
      expect((await handle.query(stateQuery)).status).toBe('requires_tool_outputs');
    });
  });

  it('survives a worker restart in the middle of a pause', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    let paused: Awaited<ReturnType<typeof start>> | undefined;
    const before = await newWorker(ledger, { cache: false });
    await before.runUntil(async () => {
      paused = await start('lookup {"q":"e"}');
    });
    // The first worker is gone; a new one (a fresh process in production) picks the workflow up.
    const after = await newWorker(ledger, { cache: false });
    await after.runUntil(async () => {
      await env.sleep('2 minutes');
      const { handle, first } = paused!;
      const next = await handle.executeUpdate(submitToolOutputsUpdate, {
        args: [
          { projectId: first.projectId, outputs: [{ toolCallId: first.toolCalls![0]!.id, output: 'after restart' }] },
        ],
      });
      expect(next).toMatchObject({ status: 'completed', message: expect.stringContaining('after restart') });
    });
    expect(ledger.settled).toEqual([1]);
  });

  it('gives admission the pickup deadline, which refuses a request first taken up after it: nothing runs, a failed stop is recorded', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    const deadlines: (number | undefined)[] = [];
    let admitted = 0;
    // libs/metering's admit refuses a request not admitted by its deadline (metering.int-spec.ts).
    const admit = async (input: { acceptBy?: number }) => {
      deadlines.push(input.acceptBy);
      if (input.acceptBy !== undefined && Date.now() > input.acceptBy)
        return {
          ok: false as const,
          error: { code: 'compute_unavailable' as const, message: 'No agent worker took the request up in time.' },
          balance: 100,
          requestsUsed: 0,
        };
      admitted += 1;
      return { ok: true as const, balance: 94, requestsUsed: 1 };
    };
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath,
      bundlerOptions: sourceBundlerOptions(),
      activities: { ...fakeActivities(ledger), beginRequest: conversations.beginRequest(admit) },
    });
    const acceptBy = Date.now() - 1;
    await worker.runUntil(async () => {
      const { first } = await start('hello', { acceptBy });
      expect(first).toMatchObject({ status: 'failed', error: { code: 'compute_unavailable' }, creditsThisRequest: 0 });
    });
    expect(admitted).toBe(0);
    expect(new Set(deadlines)).toEqual(new Set([acceptBy]));
    // Local activities run at least once: what counts is that only a failed first stop was recorded.
    expect(new Set(ledger.stops)).toEqual(new Set(['1:failed']));
  });

  it('takes up a request the api admitted instead of admitting it, and admits one of a previous release (no `admitted` in its input)', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    const asked: (boolean | undefined)[] = [];
    const admit = async (input: { admitted?: boolean }) => {
      asked.push(input.admitted);
      return { ok: true as const, balance: 94, requestsUsed: 1 };
    };
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath,
      bundlerOptions: sourceBundlerOptions(),
      activities: { ...fakeActivities(ledger), beginRequest: conversations.beginRequest(admit) },
    });
    await worker.runUntil(async () => {
      expect((await start('hello', { admitted: true })).first.status).toBe('completed');
      expect((await start('hello')).first.status).toBe('completed');
    });
    // Local activities run at least once: what counts is what each request asked for.
    expect(new Set(asked)).toEqual(new Set([true, undefined]));
    expect(asked[0]).toBe(true);
    expect(asked.at(-1)).toBeUndefined();
  });

  // The bulkhead (docs/operations.md): a run whose input names a long-activity task queue schedules
  // its streamed model call there, where a worker without workflows runs it; a run that names none
  // schedules it on its own task queue, as before the option existed (the replay corpus holds those).
  it('runs a streamed model call on the long-activity task queue its input names, and on its own queue otherwise', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    const longQueue = `${taskQueue}-long`;
    const ranOnLong: string[] = [];
    const activities = fakeActivities(ledger);
    const longWorker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: longQueue,
      activities: {
        ...activities,
        callModel: async (call: Parameters<AgentActivities['callModel']>[0]) => {
          ranOnLong.push(call.requestId);
          return activities.callModel(call);
        },
      },
    });
    const worker = await newWorker(ledger);
    const scheduledOn = async (workflowId: string) => {
      const { events } = await env.client.workflow.getHandle(workflowId).fetchHistory();
      return (events ?? [])
        .map((e) => e.activityTaskScheduledEventAttributes)
        .filter((a) => a?.activityType?.name === 'callModel')
        .map((a) => a?.taskQueue?.name);
    };
    await worker.runUntil(
      longWorker.runUntil(async () => {
        const bulkheaded = await start('hello', { stream: true, tools: [], longActivityTaskQueue: longQueue });
        expect(bulkheaded.first.status).toBe('completed');
        expect(await scheduledOn(bulkheaded.handle.workflowId)).toEqual([longQueue]);
        expect(ranOnLong).toEqual([bulkheaded.first.requestId]);
        const plain = await start('hello', { stream: true, tools: [] });
        expect(plain.first.status).toBe('completed');
        expect(await scheduledOn(plain.handle.workflowId)).toEqual([taskQueue]);
        expect(ranOnLong).toEqual([bulkheaded.first.requestId]);
      }),
    );
  });

  it('is cancelled while paused: the pending Update gets the cancelled stop, nothing more is charged', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, first } = await start('please lookup {"q":"a"}');
      expect(first.status).toBe('requires_tool_outputs');
      await handle.cancel();
      const final: AgentStop = await handle.result();
      expect(final).toMatchObject({ status: 'cancelled', stop: 2, creditsThisRequest: 0, message: '' });
      expect(final.toolCalls).toBeUndefined();
      // Closed by the cancel: late outputs are refused as for an expired context.
      await expect(
        handle.executeUpdate(submitToolOutputsUpdate, {
          args: [{ projectId: first.projectId, outputs: [{ toolCallId: first.toolCalls![0]!.id, output: 'late' }] }],
        }),
      ).rejects.toThrow(WorkflowNotFoundError);
    });
    expect(ledger.settled).toEqual([1]);
    expect(ledger.stops).toEqual(['1:requires_tool_outputs', '2:cancelled']);
  });

  it('is cancelled while the model runs: charged nothing before the model answered, 1 + surcharges after', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      for (const message of ['hang', 'hang after a step']) {
        const args = { ...input(message), tools: [] };
        const handle = await env.client.workflow.start('agentRequestWorkflow', {
          taskQueue,
          workflowId: `agent-request-${args.requestId}`,
          args: [args],
        });
        // The caller waiting for the first stop gets the cancelled one.
        const waiting = handle.executeUpdate(firstStopUpdate);
        await modelHolding(args.requestId);
        await handle.cancel();
        const final: AgentStop = await handle.result();
        expect(final.status).toBe('cancelled');
        expect(await waiting).toMatchObject({ status: 'cancelled', stop: 1 });
      }
    });
    expect(ledger.stops).toEqual(['1:cancelled', '1:cancelled']);
    expect(ledger.settled).toEqual([0, 1]);
    expect(ledger.released).toBe(0);
  });

  it('stays completed when the cancellation comes after it finished', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0 };
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, first } = await start('hello');
      expect(first.status).toBe('completed');
      await handle.cancel().catch(() => undefined);
      expect((await handle.result()).status).toBe('completed');
    });
    // Local activities run at least once (a workflow task that is retried runs them again; the real
    // recordStop answers a retry as it answered the first): only the completed stop was recorded.
    expect(new Set(ledger.stops)).toEqual(new Set(['1:completed']));
  });

  it('releases the reservation when the run fails before its first stop is recorded', async () => {
    const ledger = { settled: [] as number[], stops: [] as string[], released: 0, failStops: true };
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('agentRequestWorkflow', {
        taskQueue,
        workflowId: `agent-request-${randomUUID()}`,
        args: [input('hello')],
      });
      await expect(handle.result()).rejects.toThrow(/Workflow execution failed/);
    });
    expect(ledger.released).toBe(1);
  });
});
