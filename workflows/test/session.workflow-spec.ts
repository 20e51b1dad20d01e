import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import {
  agentRequestWorkflowId,
  DEFAULT_CAPABILITY_SURCHARGES,
  endSessionUpdate,
  sendSessionMessageUpdate,
  sessionStateQuery,
  sessionWorkflowId,
  submitToolOutputsUpdate,
  type AgentActivities,
  type AgentStop,
  type ChatMessage,
  type SessionActivities,
  type SessionMessage,
  type SessionView,
  type SessionWorkflowInput,
} from '#libs/contracts';
import { scriptedTurn } from '#libs/llm';
import { sourceBundlerOptions } from '../../apps/worker/src/workflow-bundle.js';
import { memoryConversations } from './memory-conversations.js';

// The session workflow's own logic under Temporal's time-skipping test server: the 30-minute idle
// timer and the 5-minute tool context run in milliseconds. Each message runs the real
// agentRequestWorkflow as a child; activities are in-memory stand-ins (the model is the pure
// scripted model, which echoes the last user message), and they record what the model was given.
const workflowsPath = fileURLToPath(new URL('../src/index.ts', import.meta.url));
const MINUTE = 60_000;

interface Ledger {
  /** What the model received, by request id (the last call of each request). */
  readonly modelInput: Map<string, readonly ChatMessage[]>;
  /** Every write to the sessions read model, in order. */
  readonly records: SessionView[];
  /** The request ids admitted (quota and credits), in order. */
  readonly admitted: string[];
  /** A model call whose user message starts with "slow" enters this gate and waits until it opens. */
  readonly slow: Gate;
}

interface Gate {
  readonly entered: Promise<void>;
  enter(): void;
  readonly opened: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let enter!: () => void;
  let open!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { entered, enter, opened, open };
}

function fakeActivities(ledger: Ledger): AgentActivities & SessionActivities {
  const memory = memoryConversations({
    model: async ({ requestId, messages, tools }) => {
      ledger.modelInput.set(requestId, messages);
      const last = messages.at(-1);
      if (last?.role === 'user' && last.content.startsWith('slow')) {
        ledger.slow.enter();
        await ledger.slow.opened;
      }
      return scriptedTurn({ model: 'scripted', messages, tools });
    },
  });
  return {
    releaseReservation: async () => undefined,
    ...memory.activities,
    beginRequest: memory.beginRequest(
      async ({ requestId }) => (ledger.admitted.push(requestId), { ok: true, balance: 99, requestsUsed: 1 }),
    ),
    emitStreamEvents: async () => ({ nextSeq: 1 }),
    streamedText: async () => '',
    recordStop: async ({ stop, status }) => ({
      creditsThisRequest: stop === 1 && status !== 'failed' ? 1 : 0,
      creditsRemaining: 98,
    }),
    recordToolOutputs: async () => undefined,
    recordSession: async (view) => void ledger.records.push(view),
  };
}

const lookupTool = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};

describe('sessionWorkflow', () => {
  let env: TestWorkflowEnvironment;
  const taskQueue = 'session-workflow-test';

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

  const newLedger = (): Ledger => ({ modelInput: new Map(), records: [], admitted: [], slow: gate() });

  const newWorker = (ledger: Ledger) =>
    Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath,
      bundlerOptions: sourceBundlerOptions(),
      activities: fakeActivities(ledger),
    });

  /** Starts a session; `idleTimeoutMs` defaults to the contract's 30 minutes. */
  async function startSession(
    options: Partial<Pick<SessionWorkflowInput, 'idleTimeoutMs' | 'continueAsNewAfterEvents'>> = {},
  ) {
    const sessionId = randomUUID();
    const projectId = randomUUID();
    const createdAt = Date.now();
    const input: SessionWorkflowInput = {
      sessionId,
      projectId,
      createdAt,
      idleTimeoutMs: options.idleTimeoutMs ?? 30 * MINUTE,
      ...options,
    };
    const handle = await env.client.workflow.start('sessionWorkflow', {
      taskQueue,
      workflowId: sessionWorkflowId(sessionId),
      args: [input],
    });
    const firstRunId = handle.firstExecutionRunId;
    // The first workflow task has run (a query needs it) before a test skips time.
    await handle.query(sessionStateQuery);
    const message = (text: string, extra: Partial<SessionMessage> = {}): SessionMessage => ({
      requestId: randomUUID(),
      projectId,
      plan: 'pro',
      message: { text },
      capabilities: ['chat'],
      capabilitiesRequested: false,
      tools: [],
      files: [],
      maxCredits: 1,
      surcharges: DEFAULT_CAPABILITY_SURCHARGES,
      monthlyQuota: 1000,
      stream: false,
      // Workflow time runs ahead under time skipping: never too late in these tests.
      acceptBy: Number.MAX_SAFE_INTEGER,
      ...extra,
    });
    const send = async (
      text: string,
      extra: Partial<SessionMessage> = {},
    ): Promise<AgentStop & { sent: SessionMessage }> => {
      const sent = message(text, extra);
      const stop = await handle.executeUpdate(sendSessionMessageUpdate, { args: [sent], updateId: sent.requestId });
      return { ...stop, sent };
    };
    return { handle: handle as WorkflowHandle, projectId, sessionId, firstRunId, message, send };
  }

  const state = (handle: WorkflowHandle): Promise<SessionView> => handle.query(sessionStateQuery);

  /** The failure of an Update the session refused (its contract code is the type). */
  const busyCause = async (update: Promise<unknown>): Promise<unknown> => {
    const e = await update.then(
      () => new Error('the session accepted the message'),
      (e: unknown) => e,
    );
    expect(e).toBeInstanceOf(WorkflowUpdateFailedError);
    return (e as WorkflowUpdateFailedError).cause;
  };

  it('expires after 30 minutes of silence, records it, and refuses an end afterwards', async () => {
    const ledger = newLedger();
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, projectId } = await startSession();
      const created = await state(handle);
      expect(created).toMatchObject({
        status: 'active',
        messageCount: 0,
        expiresAt: created.lastActivityAt + 30 * MINUTE,
      });
      await env.sleep('29 minutes');
      expect((await state(handle)).status).toBe('active');
      await env.sleep('61 seconds');
      const final: SessionView = await handle.result();
      expect(final).toMatchObject({ status: 'expired', expiresAt: created.expiresAt });
      expect(ledger.records.at(-1)).toMatchObject({ status: 'expired', messageCount: 0 });
      // The expired session's workflow has closed: Temporal refuses the Update as NOT_FOUND, which the
      // api turns into the session's recorded end (apps/api/src/sessions/session-temporal.ts).
      await expect(handle.executeUpdate(endSessionUpdate, { args: [{ projectId }] })).rejects.toThrow(
        WorkflowNotFoundError,
      );
    });
  });

  it('does not expire 29 minutes after a message: each message resets the idle timer', async () => {
    const ledger = newLedger();
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, send } = await startSession();
      const created = await state(handle);
      await env.sleep('20 minutes');
      const reply = await send('hello');
      expect(reply).toMatchObject({ status: 'completed', message: 'You said: "hello"' });
      const afterMessage = await state(handle);
      expect(afterMessage).toMatchObject({
        status: 'active',
        messageCount: 2,
        expiresAt: afterMessage.lastActivityAt + 30 * MINUTE,
      });
      expect(afterMessage.lastActivityAt - created.lastActivityAt).toBeGreaterThanOrEqual(20 * MINUTE);
      expect(ledger.records.at(-1)).toMatchObject({ status: 'active', messageCount: 2 });
      await env.sleep('29 minutes');
      expect((await state(handle)).status).toBe('active');
      await env.sleep('2 minutes');
      expect(await handle.result()).toMatchObject({ status: 'expired', messageCount: 2 });
    });
  });

  it('gives the model at most 50 messages, opening at a user message: the 26th message drops the first exchange from the context', async () => {
    const ledger = newLedger();
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, send, projectId } = await startSession();
      let last: Awaited<ReturnType<typeof send>> | undefined;
      for (let i = 1; i <= 25; i++) last = await send(`m${i}`);
      // The 25th message was the 49th in the conversation: everything before it reached the model.
      const before = ledger.modelInput.get(last!.sent.requestId)!;
      expect(before).toHaveLength(49);
      expect(before[0]).toEqual({ role: 'user', content: 'm1' });
      expect((await state(handle)).messageCount).toBe(50);

      const fiftyFirst = await send('m26');
      expect(fiftyFirst.message).toBe('You said: "m26"');
      const seen = ledger.modelInput.get(fiftyFirst.sent.requestId)!;
      // The window opens at a user message (Anthropic refuses any other first message): the whole
      // first exchange goes, and 49 messages reach the model.
      expect(seen).toHaveLength(49);
      expect(seen[0]).toEqual({ role: 'user', content: 'm2' });
      expect(seen.some((m) => m.content.includes('m1"') || m.content === 'm1')).toBe(false);
      expect(seen.at(-2)).toEqual({ role: 'assistant', content: 'You said: "m25"' });
      expect(seen.at(-1)).toEqual({ role: 'user', content: 'm26' });
      expect((await state(handle)).messageCount).toBe(52);
      // Ended, so no session is left running behind the next tests (a running session whose
      // worker has stopped can hold up the time-skipping clock of a later test).
      await handle.executeUpdate(endSessionUpdate, { args: [{ projectId }] });
    });
  });

  it('continues as new when its history grows, with messages arriving around it: every accepted one answered once, the rest refused busy', async () => {
    const ledger = newLedger();
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, firstRunId, send, sessionId, projectId } = await startSession({ continueAsNewAfterEvents: 30 });
      const accepted: string[] = [];
      let refused = 0;
      /** Sends `n` messages at once: the session takes one and refuses the others as busy;
       * `onAnswer` runs when the accepted one is answered. */
      const wave = async (prefix: string, n: number, onAnswer: () => void = () => undefined) => {
        const batch = Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);
        const replies = await Promise.all(
          batch.map((t) =>
            send(t).then(
              (r) => (onAnswer(), r),
              (e: unknown) => e,
            ),
          ),
        );
        let taken = 0;
        for (const [i, r] of replies.entries()) {
          if (r instanceof WorkflowUpdateFailedError) {
            expect(r.cause).toMatchObject({ type: 'session_busy' });
            refused++;
            continue;
          }
          expect(r).toMatchObject({ status: 'completed', message: `You said: "${batch[i]}"` });
          accepted.push(batch[i]!);
          taken++;
        }
        // Each wave reaches a session with nothing running (or one closing its run: its Updates
        // move to the next run), so it takes at least one.
        expect(taken).toBeGreaterThanOrEqual(1);
      };
      accepted.push('first');
      await send('first');
      // The hand-over is due from here on. Wave b arrives the moment wave a's message is answered,
      // as the run hands over; the others one after another.
      let waveB: Promise<void> | undefined;
      await wave('a', 6, () => {
        waveB ??= wave('b', 6);
      });
      await waveB;
      let waveD: Promise<void> | undefined;
      await wave('c', 5, () => {
        waveD ??= wave('d', 3);
      });
      await waveD;
      await wave('e', 2);
      await wave('f', 4);
      expect(refused).toBeGreaterThan(0);

      const probe = await send('probe');
      const seen = ledger.modelInput.get(probe.sent.requestId)!;
      const users = seen.filter((m) => m.role === 'user').map((m) => m.content);
      expect(users.at(-1)).toBe('probe');
      // Exactly the accepted messages, each once.
      expect([...users.slice(0, -1)].sort()).toEqual([...accepted].sort());
      // Each user message is followed by its own answer.
      for (let i = 0; i < seen.length - 1; i += 2) {
        expect(seen[i + 1]).toEqual({ role: 'assistant', content: `You said: "${seen[i]!.content}"` });
      }
      expect(seen).toHaveLength(2 * accepted.length + 1);
      expect((await state(handle)).messageCount).toBe(2 * accepted.length + 2);
      // A refused message never ran: only the accepted ones (and the probe) were admitted.
      expect(ledger.admitted).toHaveLength(accepted.length + 1);

      const first = await env.client.workflow.getHandle(sessionWorkflowId(sessionId), firstRunId).describe();
      expect(first.status.name).toBe('CONTINUED_AS_NEW');
      const current = await env.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe();
      expect(current.runId).not.toBe(firstRunId);
      expect(current.status.name).toBe('RUNNING');
      // Across the chain of runs every answered message was accepted exactly once, and no refused one.
      let runs = 0;
      let acceptedUpdates = 0;
      for (let runId: string | undefined = firstRunId; runId; runs++) {
        const history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> = await env.client.workflow
          .getHandle(sessionWorkflowId(sessionId), runId)
          .fetchHistory();
        const events = history.events ?? [];
        acceptedUpdates += events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
        const next: string | null | undefined =
          events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
        runId = next ?? undefined;
      }
      expect(runs).toBeGreaterThanOrEqual(3);
      expect(acceptedUpdates).toBe(accepted.length + 1);
      await handle.executeUpdate(endSessionUpdate, { args: [{ projectId }] });
    });
  });

  it('does not expire while a message waits for tool outputs within its 5 minutes; refuses messages meanwhile and takes the next once it is answered', async () => {
    const ledger = newLedger();
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      // An idle timeout far shorter than the tool context, so a running timer would show.
      const { handle, send, projectId } = await startSession({ idleTimeoutMs: MINUTE });
      const paused = await send('please lookup {"q":"x"}', { tools: [lookupTool] });
      expect(paused).toMatchObject({
        status: 'requires_tool_outputs',
        sessionId: expect.any(String),
        toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }],
      });
      // A message sent meanwhile is refused: the session is busy.
      expect(await busyCause(send('and then?'))).toMatchObject({
        type: 'session_busy',
        message: expect.stringContaining(paused.requestId),
      });
      await env.sleep('4 minutes');
      expect(await state(handle)).toMatchObject({
        status: 'active',
        activeRequestId: paused.requestId,
        queuedMessages: 0,
      });
      expect(await busyCause(send('still there?'))).toMatchObject({ type: 'session_busy' });

      const child = env.client.workflow.getHandle(agentRequestWorkflowId(paused.requestId));
      const resumed = await child.executeUpdate(submitToolOutputsUpdate, {
        args: [{ projectId, outputs: [{ toolCallId: paused.toolCalls![0]!.id, output: 'found it' }] }],
      });
      expect(resumed).toMatchObject({
        status: 'completed',
        sessionId: paused.sessionId,
        message: expect.stringContaining('found it'),
        creditsThisRequest: 0,
      });
      // The moment the caller has the answer, the session takes the next message.
      const later = await send('and then?');
      expect(later).toMatchObject({ status: 'completed', message: 'You said: "and then?"' });
      // The later message saw the finished exchange, tool calls and results left out.
      const seen = ledger.modelInput.get(later.requestId)!;
      expect(seen).toEqual([
        { role: 'user', content: 'please lookup {"q":"x"}' },
        { role: 'assistant', content: resumed.message },
        { role: 'user', content: 'and then?' },
      ]);
      expect(await state(handle)).toMatchObject({ status: 'active', messageCount: 4 });
      expect(ledger.admitted).toEqual([paused.requestId, later.requestId]);
      await env.sleep('61 seconds');
      expect(await handle.result()).toMatchObject({ status: 'expired', messageCount: 4 });
    });
  });

  it('is busy while a message runs or is paused, and free again once the request completes, expires or is cancelled; a refusal records nothing', async () => {
    const ledger = newLedger();
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, send, message, projectId } = await startSession();
      const refusedIds: string[] = [];
      /** A message the session must refuse as busy (sent with its own Update id, as the api does). */
      const expectBusy = async (text: string, blocking: string): Promise<void> => {
        const sent = message(text);
        refusedIds.push(sent.requestId);
        const cause = await busyCause(
          handle.executeUpdate(sendSessionMessageUpdate, { args: [sent], updateId: sent.requestId }),
        );
        expect(cause).toMatchObject({ type: 'session_busy', message: expect.stringContaining(blocking) });
      };

      // Running: the model is still thinking.
      const running = send('slow answer');
      await ledger.slow.entered;
      const runningId = [...ledger.modelInput.keys()].at(-1)!;
      await expectBusy('while running', runningId);
      expect(await state(handle)).toMatchObject({ activeRequestId: runningId, queuedMessages: 0 });
      ledger.slow.open();
      expect(await running).toMatchObject({ status: 'completed', message: 'You said: "slow answer"' });

      // Paused, then cancelled: free as soon as the cancellation has its answer.
      const paused = await send('lookup {"q":"x"}', { tools: [lookupTool] });
      expect(paused.status).toBe('requires_tool_outputs');
      await expectBusy('while paused', paused.requestId);
      const cancelled = env.client.workflow.getHandle(agentRequestWorkflowId(paused.requestId));
      await cancelled.cancel();
      expect(await cancelled.result()).toMatchObject({ status: 'cancelled' });
      expect(await send('after the cancel')).toMatchObject({ status: 'completed' });

      // Paused, then expired (5 minutes without tool outputs): free again.
      const expiring = await send('lookup {"q":"y"}', { tools: [lookupTool] });
      expect(expiring.status).toBe('requires_tool_outputs');
      await expectBusy('while paused again', expiring.requestId);
      await env.sleep('4 minutes');
      await expectBusy('still paused', expiring.requestId);
      expect(await env.client.workflow.getHandle(agentRequestWorkflowId(expiring.requestId)).result()).toMatchObject({
        status: 'expired',
      });
      const afterExpiry = await send('after the expiry');
      expect(afterExpiry).toMatchObject({ status: 'completed' });

      // Only the finished exchanges are in the conversation; the refused messages left no trace:
      // never admitted, never accepted, nothing written for them.
      const seen = ledger.modelInput
        .get(afterExpiry.sent.requestId)!
        .filter((m) => m.role === 'user')
        .map((m) => m.content);
      expect(seen).toEqual(['slow answer', 'after the cancel', 'after the expiry']);
      expect(await state(handle)).toMatchObject({ status: 'active', messageCount: 6, queuedMessages: 0 });
      expect(ledger.admitted.filter((id) => refusedIds.includes(id))).toEqual([]);
      expect(ledger.admitted).toHaveLength(5);
      const events = (await handle.fetchHistory()).events ?? [];
      const acceptedIds = events
        .map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId)
        .filter(Boolean);
      expect(acceptedIds).toHaveLength(5);
      expect(acceptedIds.filter((id) => refusedIds.includes(id!))).toEqual([]);
      expect(ledger.records.filter((r) => r.activeRequestId && refusedIds.includes(r.activeRequestId))).toEqual([]);
      await handle.executeUpdate(endSessionUpdate, { args: [{ projectId }] });
    });
  });

  it('ends on request: refuses another project and a message given up on, and records the end', async () => {
    const ledger = newLedger();
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, send, projectId, message } = await startSession();
      await send('hello');
      const foreign = await handle
        .executeUpdate(endSessionUpdate, { args: [{ projectId: randomUUID() }] })
        .catch((e: unknown) => e);
      expect((foreign as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'session_not_found' });
      const foreignMessage = await handle
        .executeUpdate(sendSessionMessageUpdate, { args: [{ ...message('x'), projectId: randomUUID() }] })
        .catch((e: unknown) => e);
      expect((foreignMessage as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'session_not_found' });
      const stale = await handle
        .executeUpdate(sendSessionMessageUpdate, { args: [message('too late', { acceptBy: 0 })] })
        .catch((e: unknown) => e);
      expect((stale as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'compute_unavailable' });

      const ended = await handle.executeUpdate(endSessionUpdate, { args: [{ projectId }] });
      expect(ended).toMatchObject({ status: 'ended', messageCount: 2 });
      expect(ledger.records.at(-1)).toMatchObject({ status: 'ended', revision: ended.revision });
      expect(await handle.result()).toMatchObject({ status: 'ended' });
    });
  });

  it('refuses messages to an ended session while its last request still runs', async () => {
    const ledger = newLedger();
    const worker = await newWorker(ledger);
    await worker.runUntil(async () => {
      const { handle, send, projectId } = await startSession();
      const paused = await send('lookup {"q":"y"}', { tools: [lookupTool] });
      expect(paused.status).toBe('requires_tool_outputs');
      await handle.executeUpdate(endSessionUpdate, { args: [{ projectId }] });
      const refused = await send('more').catch((e: unknown) => e);
      expect((refused as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'session_ended' });
      // The paused request still gets its answer; the session closes after it.
      const child = env.client.workflow.getHandle(agentRequestWorkflowId(paused.requestId));
      const resumed = await child.executeUpdate(submitToolOutputsUpdate, {
        args: [{ projectId, outputs: [{ toolCallId: paused.toolCalls![0]!.id, output: 'ok' }] }],
      });
      expect(resumed.status).toBe('completed');
      expect(await handle.result()).toMatchObject({ status: 'ended' });
    });
  });
});
