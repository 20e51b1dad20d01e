import { Inject, Injectable, Logger } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowUpdateHandle,
} from '@temporalio/client';
import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import {
  agentRequestStartOptions,
  firstStopUpdate,
  ServiceError,
  WORKFLOW_TASK_TIMEOUT_MS,
  type AgentRequestInput,
  type AgentStop,
} from '#libs/contracts';
import { MeteringService } from '#libs/metering';
import { BlobStore, FileStore } from '#libs/persistence';
import type { AgentResponse } from '#libs/resources';
import { TemporalClientService } from '#libs/temporal';
import { SseResponder } from '../streaming/sse-responder.js';
import type { AgentRequestBody } from './agent-request.validation.js';
import {
  backgroundAnswer,
  renderResponse,
  runError,
  sendAnswer,
  setResponseHeaders,
  stopAnswer,
  withRequestId,
} from './answers.js';
import { IdempotencyKeys, type IdempotencyClaim, type StoredAnswer } from './idempotency.js';
import { GetAgentRequestQuery } from './queries/get-agent-request.query.js';
import { inputBytes, requestCapabilities, requestInput } from './request-input.js';
import { RunGate } from './run-gate.js';
import {
  awaitAnswer,
  fromTemporalError,
  requireTemporal,
  WorkflowTaskFailingError,
  type ConfiguredTemporal,
} from './temporal-errors.js';

/** The id of the Update that waits for a request's first stop. One id for every attempt: Temporal
 * keeps one outcome per Update id (also once the workflow has closed), so every duplicate of a
 * request gets the same first stop, and a closed request answers with it instead of running again. */
export const FIRST_STOP_UPDATE_ID = 'first-stop';

/** A run started or joined (an agent request, or a session's message): its request id, and its
 * first stop when it comes. */
export interface StartedRun {
  readonly requestId: string;
  firstStop(): Promise<AgentStop>;
  /** True when the api admitted the run before starting it (admit): a refusal was answered then. */
  readonly admitted?: boolean;
}

/** A started run as its POST answers it: with the session it belongs to, if any, and the
 * Idempotency-Key claim its answer is saved under, if any. */
export interface RunToAnswer extends StartedRun {
  readonly sessionId?: string;
  readonly claim?: IdempotencyClaim;
}

/** How a POST that starts a run is answered: the first stop as JSON, the run's events as SSE, or
 * `in_progress` at once (DESIGN.md section 9). */
export type AnswerShape = 'json' | 'stream' | 'background';

export const answerShape = (body: Pick<AgentRequestBody, 'stream' | 'background'>): AnswerShape =>
  body.background ? 'background' : body.stream ? 'stream' : 'json';

/** Refusals at admission that answer the request for good, as a run that failed would: saved
 * under its Idempotency-Key and replayed (DESIGN.md section 9), also once credits are added. The
 * caps' refusals (429 rate_limited, 413) are not: like the rate limit's, a retry after Retry-After
 * with the same key is admitted. */
const FINAL_REFUSALS: ReadonlySet<string> = new Set(['insufficient_credits', 'quota_exceeded']);

/** A request refused at admission (nothing was stored, reserved or started); `final` when its
 * answer is saved under the request's Idempotency-Key. */
export class AdmissionRefused extends ServiceError {
  constructor(
    error: ServiceError,
    readonly final: boolean,
  ) {
    super(error.code, error.message, error.headers);
  }
}

/** 503 for a run that found no room in this api within its wait: nothing was started or recorded. */
const atCapacity = (waitedMs: number): ServiceError =>
  new ServiceError(
    'service_unavailable',
    `The service is at capacity: no run could start within ${waitedMs / 1000} seconds. Nothing was started or charged; retry after the number of seconds in Retry-After.`,
    { 'Retry-After': '1' },
  );

const isUpdateHandle = (x: WorkflowUpdateHandle<AgentStop> | AgentStop): x is WorkflowUpdateHandle<AgentStop> =>
  typeof (x as { result?: unknown }).result === 'function';

/**
 * The one way a run goes through the api, for every endpoint that starts or continues one
 * (`POST /v1/agent`, its tool outputs, a session's message): the Temporal client (one "not
 * configured" check), the overload gate (RunGate), starting or joining an agent request within the
 * pickup bounds, the Idempotency-Key claim and the saving of the answer, and the three answer
 * shapes. The controllers parse and check what is theirs; the rest is here.
 */
@Injectable()
export class RunGateway {
  private readonly logger = new Logger('agent');
  /** Open streams by project on this process (holdingStream). */
  private readonly openStreams = new Map<string, number>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporalClient: TemporalClientService,
    private readonly blobs: BlobStore,
    private readonly files: FileStore,
    private readonly gate: RunGate,
    private readonly idempotency: IdempotencyKeys,
    private readonly sse: SseResponder,
    private readonly queries: QueryBus,
    private readonly metering: MeteringService,
  ) {}

  /**
   * Admission (DESIGN.md section 10), before any workflow starts and before anything of the request
   * is stored: the quota, the credits and the project's caps (runs in flight, input bytes a day)
   * decided and the reservation made in one PostgreSQL round trip (MeteringService.admitRequest).
   * A refusal throws the contract's error (402 insufficient_credits; 429 quota_exceeded or
   * rate_limited with Retry-After; 413 payload_too_large) and leaves nothing behind. The reservation
   * names the request and `pickupBy`: a workflow that has not taken the request up by then refuses
   * it, and the reconciler releases the reservation. Idempotent by request id (a retry with the same
   * Idempotency-Key is admitted once). The answer's quota figures: the counter after admission.
   */
  async admit(
    principal: Principal,
    body: AgentRequestBody,
    requestId: string,
    pickupBy: number,
  ): Promise<{ requestsUsed: number; balance: number }> {
    const { project } = principal;
    const plan = this.config.plans[project.plan];
    const caps = this.config.caps[project.plan];
    const admission = await this.metering.admitRequest({
      requestId,
      projectId: project.id,
      credits: requestCapabilities(this.config, principal, body).maxCredits,
      monthlyQuota: plan.monthlyQuota,
      pickupBy: new Date(pickupBy),
      inputBytes: inputBytes(body),
      caps,
    });
    if (!admission.ok) {
      const error = withRequestId(
        runError(admission.error, principal, admission.retryAfterSeconds),
        requestId,
      ) as ServiceError;
      throw new AdmissionRefused(error, FINAL_REFUSALS.has(error.code));
    }
    return admission;
  }

  /**
   * Runs `work` (which answers with a stream when `streamed`) holding one of the project's places
   * for open streams on this api process: past its plan's cap (openStreams), 429 rate_limited with
   * Retry-After before anything is claimed, admitted or started. The place is given back when
   * `work` ends (the stream closed, or anything failed). Counted in this process's memory: a stream
   * is this process's connection, and a process that dies takes its connections and its count with
   * it; N api replicas behind a load balancer so allow up to N times the cap (docs/metering.md).
   */
  async holdingStream<T>(principal: Principal, streamed: boolean, work: () => Promise<T>): Promise<T> {
    if (!streamed) return work();
    const projectId = principal.project.id;
    const cap = this.config.caps[principal.project.plan].openStreams;
    const open = this.openStreams.get(projectId) ?? 0;
    if (open >= cap) {
      throw new ServiceError(
        'rate_limited',
        `The project has ${cap} streams open on this server, its plan's cap. Nothing was run; close one (or read the request with GET /v1/agent/{id}) and retry after the number of seconds in Retry-After.`,
        { 'Retry-After': '1' },
      );
    }
    this.openStreams.set(projectId, open + 1);
    try {
      return await work();
    } finally {
      const left = (this.openStreams.get(projectId) ?? 1) - 1;
      if (left > 0) this.openStreams.set(projectId, left);
      else this.openStreams.delete(projectId);
    }
  }

  /** Counts `bytes` a tool-outputs submission is about to store against the project's cap on input
   * bytes a day (as admission counts a request's files), or refuses with admission's error for
   * that cap (413 payload_too_large, 429 rate_limited with Retry-After). `id` names the count. */
  async countStoredBytes(principal: Principal, id: string, bytes: number): Promise<void> {
    const count = await this.metering.countToolOutputBytes({
      id,
      projectId: principal.project.id,
      bytes,
      inputBytesPerDay: this.config.caps[principal.project.plan].inputBytesPerDay,
    });
    if (!count.ok) throw runError(count.error, principal, count.retryAfterSeconds);
  }

  /** Gives back the bytes counted by `countStoredBytes` for a submission that was refused. */
  async releaseStoredBytes(principal: Principal, id: string): Promise<void> {
    await this.metering.releaseToolOutputBytes({ id, projectId: principal.project.id });
  }

  /** Undoes the admission of a request that certainly did not start (a session refused its
   * message): its credits and quota count come back, nothing names it, a retry is admitted afresh. */
  async unadmit(principal: Principal, requestId: string): Promise<void> {
    await this.metering.unadmit({ requestId, projectId: principal.project.id });
  }

  /** The Temporal client, or 503 service_unavailable when no Temporal address is configured. */
  temporal(): ConfiguredTemporal {
    return requireTemporal(this.temporalClient);
  }

  /** Claims the Idempotency-Key (none: nothing to claim) for this endpoint and body; a claim with
   * an answer is a replay. Call it once the request has passed its own checks: nothing is recorded
   * for a refused request. */
  async claim(
    principal: Principal,
    key: string | undefined,
    endpoint: string,
    body: unknown,
  ): Promise<IdempotencyClaim | undefined> {
    return key === undefined ? undefined : this.idempotency.claim(principal.project.id, key, endpoint, body);
  }

  /** The answer saved under the key for this endpoint and body, if any (IdempotencyKeys.answered). */
  async answered(
    principal: Principal,
    key: string | undefined,
    endpoint: string,
    body: unknown,
  ): Promise<StoredAnswer | undefined> {
    return key === undefined ? undefined : this.idempotency.answered(principal.project.id, key, endpoint, body);
  }

  /** Saves the answer under the claim (the first saved wins) and returns the answer to send. */
  async save(claim: IdempotencyClaim | undefined, answer: StoredAnswer): Promise<StoredAnswer> {
    return claim ? this.idempotency.save(claim, answer) : answer;
  }

  /**
   * The overload gate for every path that makes a run go on in this api (a new agent request, a
   * session message, a tool-output continuation): the call starts once this api has room for it
   * (it waits its turn, or gets 503 service_unavailable with Retry-After before anything starts),
   * and the room is freed when the run's next stop is known.
   */
  async gated<T extends StartedRun>(start: () => Promise<T>): Promise<T> {
    const release = await this.gate.enter(() => atCapacity(this.config.runs.maxWaitMs));
    try {
      const started = await start();
      const first = started.firstStop().finally(release);
      first.catch(() => undefined);
      return { ...started, firstStop: () => first };
    } catch (e) {
      release();
      throw e;
    }
  }

  /** `call` (which waits for a run's next stop) within the overload gate; see gated. */
  async gatedStop(call: () => Promise<AgentStop>): Promise<AgentStop> {
    const release = await this.gate.enter(() => atCapacity(this.config.runs.maxWaitMs));
    try {
      return await call();
    } finally {
      release();
    }
  }

  /**
   * Starts agentRequestWorkflow with Update-with-Start under the request's id (within the overload
   * gate), and returns once a worker has taken it up, with its first stop when the answer is JSON.
   * Temporal closes the races between duplicates (Idempotency-Key retries): with `USE_EXISTING` a
   * duplicate joins the running workflow, or starts the one that never started; with
   * `REJECT_DUPLICATE` a closed workflow's id is never used for a second run (its first-stop Update
   * answers instead). Nothing is terminated when no worker takes the request up in time: the
   * workflow carries `acceptBy` and fails at once, before admitting anything, if it starts later.
   */
  startAgentRequest(principal: Principal, body: AgentRequestBody, requestId: string): Promise<StartedRun> {
    const temporal = this.temporal();
    return this.gated(() => this.startRun(temporal, principal, body, requestId));
  }

  private async startRun(
    { client, connection }: ConfiguredTemporal,
    principal: Principal,
    body: AgentRequestBody,
    requestId: string,
  ): Promise<StartedRun> {
    const pickupMs = this.config.temporal.pickupTimeoutMs;
    // The deadline leaves room for one workflow task timeout beyond the pickup time: a worker that
    // dies while it runs the first task (before admission) holds the task that long, the api keeps
    // waiting meanwhile (its watchdog counts only a task that waits for a worker), and the worker
    // that takes the task over must still admit the request (the drill's kill -9 of the worker).
    const acceptBy = Date.now() + pickupMs + WORKFLOW_TASK_TIMEOUT_MS;
    // Admitted before anything is stored or started: a refused request stores no file and starts no workflow.
    await this.admit(principal, body, requestId, acceptBy);
    const input: AgentRequestInput = {
      ...(await requestInput(this.config, this.blobs, principal, body, requestId)),
      acceptBy,
      admitted: true,
    };
    // The id, reuse policy, timeout and search attributes a session's child start uses too.
    const startOptions = agentRequestStartOptions(input);
    const { workflowId } = startOptions;
    const startWorkflowOperation = new WithStartWorkflowOperation('agentRequestWorkflow', {
      ...startOptions,
      taskQueue: this.config.temporal.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    let handle: WorkflowUpdateHandle<AgentStop> | AgentStop;
    const run = {
      connection,
      client,
      describe: async () => (await client.workflow.getHandle(workflowId).describe()).raw,
    };
    const update = { startWorkflowOperation, updateId: FIRST_STOP_UPDATE_ID };
    try {
      // One round trip starts (or joins) the workflow and registers (or joins) the Update. The
      // Update is accepted when the run's first workflow task completes, which (local activities)
      // is its first stop for a caller who waits for it: that caller gets the stop in the same round
      // trip. Bounded by a worker taking the task up, not by its length. A streamed or background
      // run returns once accepted: its events are what the caller follows.
      handle = await awaitAnswer<WorkflowUpdateHandle<AgentStop> | AgentStop>(run, pickupMs, () =>
        answerShape(body) === 'json'
          ? client.workflow.executeUpdateWithStart(firstStopUpdate, update)
          : client.workflow.startUpdateWithStart(firstStopUpdate, { ...update, waitForStage: 'ACCEPTED' }),
      );
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) {
        // Closed without this Update (a request started before first-stop ids existed): its result is its last stop.
        return { requestId, admitted: true, firstStop: () => this.closedStop(client, workflowId) };
      }
      const error = fromTemporalError(e, 'compute_unavailable');
      if (error.code === 'compute_unavailable' && !(error instanceof WorkflowTaskFailingError)) {
        this.logger.warn(`request ${requestId}: ${e instanceof Error ? e.message : String(e)}`);
        throw new ServiceError(
          'compute_unavailable',
          `No agent worker took the request up within ${pickupMs / 1000} seconds, or the compute service could not be reached. A request that starts later fails at once without running; GET /v1/agent/{id} with the X-Request-Id shows its state, and a retry with the same Idempotency-Key joins it.`,
        );
      }
      throw error;
    }
    if (!isUpdateHandle(handle)) {
      const stop = handle;
      return { requestId, admitted: true, firstStop: () => Promise.resolve(stop) };
    }
    const accepted = handle;
    return {
      requestId,
      admitted: true,
      firstStop: async () => {
        try {
          // Bounded: as long as workers make progress on the run, not while none does.
          return await awaitAnswer(run, pickupMs, () => accepted.result());
        } catch (e) {
          throw fromTemporalError(e, 'compute_unavailable');
        }
      },
    };
  }

  private async closedStop(client: ConfiguredTemporal['client'], workflowId: string): Promise<AgentStop> {
    try {
      return (await client.workflow.getHandle(workflowId).result()) as AgentStop;
    } catch (e) {
      throw fromTemporalError(e, 'compute_unavailable');
    }
  }

  /** A stop as the contract's AgentResponse (GET, cancel): see renderResponse. */
  render(stop: AgentStop, principal: Principal, startedAt: number): Promise<AgentResponse> {
    return renderResponse(stop, { config: this.config, files: this.files, principal, startedAt });
  }

  /** A stop as a POST's answer (`requestsUsed`: the quota counter its headers show). */
  stopAnswer(stop: AgentStop, principal: Principal, startedAt: number, requestsUsed: number): Promise<StoredAnswer> {
    return stopAnswer(stop, { config: this.config, files: this.files, principal, startedAt, requestsUsed });
  }

  /** Sends the answer, saved under the claim first when there is one. */
  async send(res: Response, claim: IdempotencyClaim | undefined, answer: StoredAnswer): Promise<void> {
    sendAnswer(res, await this.save(claim, answer));
  }

  /**
   * Answers a POST that started (or joined) a run, in its shape, the same for `POST /v1/agent` and
   * a session's message:
   * - json: the first stop (a failed run's contract error), saved under the key;
   * - stream: SSE once the run was admitted; a run refused for quota or credits, or never taken
   *   up, is answered as JSON like a request without `stream` (not saved: a retry gets the same);
   *   a duplicate gets the whole stream again, from the first stored event;
   * - background: `in_progress` once admitted (backgroundAnswer), saved under the key.
   * A 502 that follows the start carries the request id (X-Request-Id).
   */
  async answer(
    res: Response,
    run: RunToAnswer,
    shape: AnswerShape,
    principal: Principal,
    startedAt: number,
  ): Promise<void> {
    const { requestId, claim } = run;
    const duplicate = claim !== undefined && !claim.first;
    const ctx = { config: this.config, files: this.files, principal, startedAt };
    if (shape === 'json') {
      let stop: AgentStop;
      try {
        stop = await run.firstStop();
      } catch (e) {
        // Not saved: whether the request ran is not known here; a retry with the key joins it.
        throw withRequestId(e, requestId);
      }
      return this.send(res, claim, await stopAnswer(stop, { ...ctx, requestsUsed: stop.requestsUsed }));
    }
    const firstStop = run.firstStop();
    // A run the api admitted was refused (or not) before it started: nothing to wait for here.
    const unadmitted = run.admitted
      ? undefined
      : await this.sse.unadmittedStop(requestId, firstStop, this.config.temporal.pickupTimeoutMs);
    if (shape === 'background') {
      const read = (): Promise<AgentStop | undefined> =>
        this.queries.execute(new GetAgentRequestQuery(principal, requestId)).catch(() => undefined);
      const answer = await backgroundAnswer(
        { requestId, duplicate, ...(run.sessionId ? { sessionId: run.sessionId } : {}) },
        unadmitted,
        read,
        ctx,
      );
      return this.send(res, claim, answer);
    }
    // A stream refused for quota or credits (or never taken up) is answered as JSON, like a
    // request without `stream`: SSE headers are written only once the run was admitted.
    if (unadmitted && 'error' in unadmitted) throw withRequestId(unadmitted.error, requestId);
    if (unadmitted)
      return sendAnswer(res, await stopAnswer(unadmitted.stop, { ...ctx, requestsUsed: unadmitted.stop.requestsUsed }));
    // SSE (contract 4.4): the quota counter moves when the run is admitted; until then the
    // headers count this request. A duplicate gets the whole stream again, from the first event.
    setResponseHeaders(
      res,
      requestId,
      principal,
      this.config.plans[principal.project.plan].monthlyQuota,
      principal.project.requestsUsed + (duplicate ? 0 : 1),
    );
    await this.sse.respond(res, requestId, principal.project.id, 0, firstStop);
  }
}
