import { randomUUID } from 'node:crypto';
import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { WorkflowNotFoundError } from '@temporalio/common';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import {
  agentRequestWorkflowId,
  sendSessionMessageUpdate,
  sessionWorkflowId,
  WORKFLOW_TASK_TIMEOUT_MS,
  type AgentStop,
  type SessionMessage,
} from '#libs/contracts';
import { SessionStream } from '#libs/events';
import { BlobStore } from '#libs/persistence';
import { withUpdateStart, type UpdateStart } from '#libs/temporal';
import { resolveCapabilities } from '../../runs/agent-request.validation.js';
import { errorAnswer, withRequestId } from '../../runs/answers.js';
import { requestInput } from '../../runs/request-input.js';
import { AdmissionRefused, RunGateway, type StartedRun } from '../../runs/run-gateway.js';
import {
  awaitAnswer,
  fromTemporalError,
  withFailingCause,
  type ConfiguredTemporal,
  type RunDescription,
} from '../../runs/temporal-errors.js';
import { closedSessionError, sessionNotFound, UUID } from '../session-resource.js';
import { sessionCallError, withinPickup } from '../session-temporal.js';
import { SessionsRepository } from '../sessions.repository.js';
import {
  SendSessionMessageCommand,
  type AcceptedSessionMessage,
  type ReplayedSessionMessage,
} from './send-session-message.command.js';
import { addLogContext } from '#libs/observability';

/** How much longer than the session's own deadline a message's reservation waits for its request
 * to start: the session starts it once the previous exchange is in the conversation. */
const SESSION_PICKUP_MARGIN_MS = 5 * 60 * 1000;

/**
 * A session message is the session's `sendMessage` Update, its id the message's request id. With an
 * Idempotency-Key that id is the claim's, so a duplicate sends the same Update again and Temporal
 * joins it to the first (within the session's run, also once it has completed); the saved answer
 * covers later retries. A duplicate whose request has already closed (the session may have
 * continued as new since, where the Update id is unknown) reads the closed request instead of
 * sending the message again.
 */
@CommandHandler(SendSessionMessageCommand)
export class SendSessionMessageHandler implements ICommandHandler<SendSessionMessageCommand> {
  private readonly logger = new Logger('sessions');

  constructor(
    private readonly db: DataSource,
    private readonly stream: SessionStream,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly runs: RunGateway,
    private readonly blobs: BlobStore,
    private readonly sessions: SessionsRepository,
  ) {}

  async execute(command: SendSessionMessageCommand): Promise<AcceptedSessionMessage | ReplayedSessionMessage> {
    const { principal, sessionId, body, idempotency } = command;
    const { project } = principal;
    // 404 and 410 come after the body's 400 and before the capabilities' 403.
    const record = UUID.test(sessionId) ? await this.sessions.find(project.id, sessionId) : undefined;
    if (!record) throw sessionNotFound();
    const endpoint = `POST /v1/sessions/${sessionId}/messages`;
    const closed = closedSessionError(record.status);
    if (closed) {
      // A retry of a message answered before the session ended gets that answer again (DESIGN.md
      // section 9: a finished first answer is replayed), not the ended session's 410.
      const answer = await this.runs.answered(principal, idempotency?.key, endpoint, idempotency?.body);
      if (answer) return { kind: 'replay', answer };
      throw closed;
    }
    const plan = this.config.plans[project.plan];
    resolveCapabilities(body.capabilities, plan.name, plan.capabilities, project.capabilities, body.tools.length > 0);
    const temporal = this.runs.temporal();

    // Claimed once the request has passed its checks: nothing is recorded for a refused request.
    const claim = await this.runs.claim(principal, idempotency?.key, endpoint, idempotency?.body);
    if (claim?.answer) return { kind: 'replay', answer: claim.answer };
    const requestId = claim?.requestId ?? randomUUID();
    addLogContext({ request_id: requestId });
    const duplicate = claim !== undefined && !claim.first;
    try {
      // The message is a run: within the overload gate, like a request to POST /v1/agent (503 with
      // Retry-After before anything is sent to the session).
      const run = await this.runs.gated(() => this.send(temporal, command, requestId, duplicate));
      return {
        kind: 'accepted',
        requestId,
        ...(claim ? { claim } : {}),
        duplicate,
        admitted: run.admitted === true,
        firstStop: run.firstStop,
      };
    } catch (e) {
      // Refused at admission for credits or quota: the message's answer for good, saved under the key.
      if (e instanceof AdmissionRefused && e.final)
        return {
          kind: 'replay',
          answer: await this.runs.save(claim, errorAnswer(e, this.config.publicBaseUrl, requestId)),
        };
      throw withRequestId(e, requestId);
    }
  }

  /** Sends the message to the session (the duplicate of a closed request reads that request
   * instead), and returns once the session accepted it. */
  private async send(
    temporal: ConfiguredTemporal,
    { principal, sessionId, body }: SendSessionMessageCommand,
    requestId: string,
    duplicate: boolean,
  ): Promise<StartedRun> {
    const { client, connection } = temporal;
    const { project } = principal;
    if (duplicate) {
      const closedStop = await this.closedRequestStop(client, requestId);
      if (closedStop) return { requestId, firstStop: () => Promise.resolve(closedStop) };
    }
    const pickupMs = this.config.temporal.pickupTimeoutMs;
    // Past this moment the caller has been told compute_unavailable: the session must refuse it.
    const acceptBy = Date.now() + pickupMs;
    // Admitted before anything is stored or sent to the session (DESIGN.md section 10). The session
    // starts the message's request once the previous exchange is in the conversation: its
    // reservation waits for that longer than the session's own deadline.
    await this.runs.admit(principal, body, requestId, acceptBy + WORKFLOW_TASK_TIMEOUT_MS + SESSION_PICKUP_MARGIN_MS);
    const input = await requestInput(this.config, this.blobs, principal, body, requestId);
    const message: SessionMessage = { ...input, acceptBy, admitted: true };
    const handle = client.workflow.getHandle(sessionWorkflowId(sessionId));
    let update;
    const start: UpdateStart = {};
    try {
      update = await withinPickup(connection, pickupMs, () =>
        handle.startUpdate(
          sendSessionMessageUpdate,
          withUpdateStart({ args: [message], updateId: requestId, waitForStage: 'ACCEPTED' as const }, start),
        ),
      );
      // Refused by the session (session_busy while the previous message runs or is paused, and
      // the others): its failure, at once. Nothing was recorded, so neither is an acceptance,
      // and the key stays unanswered, free for a retry.
      if (start.refused) await update.result();
    } catch (e) {
      // Refused by the session (nothing recorded, no request started): its reservation goes back at
      // once. Any other failure leaves it to the pickup deadline (the reconciler).
      if (start.refused) await this.runs.unadmit(principal, requestId).catch(() => undefined);
      throw await withFailingCause(
        await sessionCallError(e, this.sessions, project.id, sessionId),
        client,
        async () => (await handle.describe()).raw,
      );
    }
    const accepted = update;
    await this.recordAccepted(sessionId, project.id, requestId);
    return {
      requestId,
      admitted: true,
      firstStop: async () => {
        try {
          // Bounded like a request's first stop: as long as workers make progress on the message.
          return await awaitAnswer(
            { connection, client, describe: () => this.progress(temporal, sessionId, requestId) },
            pickupMs,
            () => accepted.result(),
          );
        } catch (e) {
          throw withRequestId(await sessionCallError(e, this.sessions, project.id, sessionId), requestId);
        }
      },
    };
  }

  /** What a worker must do next for the message: its request's pending steps once it started,
   * before that the session's own (a message accepted just as the previous request ended waits in
   * the session while that exchange enters the conversation). */
  private async progress(
    { client }: ConfiguredTemporal,
    sessionId: string,
    requestId: string,
  ): Promise<RunDescription> {
    try {
      return (await client.workflow.getHandle(agentRequestWorkflowId(requestId)).describe()).raw;
    } catch (e) {
      if (!(e instanceof WorkflowNotFoundError)) throw e;
      return (await client.workflow.getHandle(sessionWorkflowId(sessionId)).describe()).raw;
    }
  }

  /** `session.message-accepted` on the session's stream. The session has the message whatever
   * happens here: a database that fails now costs the record, not the caller's answer (the
   * session's next state event carries its figures). */
  private async recordAccepted(sessionId: string, projectId: string, requestId: string): Promise<void> {
    try {
      await this.db.transaction((tx) => this.stream.messageAccepted(tx, { sessionId, projectId, requestId }));
    } catch (e) {
      this.logger.warn(
        `could not record that session ${sessionId} accepted request ${requestId}: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  /** The last stop of the message's request when that request has closed; undefined while it runs
   * or before it started. */
  private async closedRequestStop(
    client: ConfiguredTemporal['client'],
    requestId: string,
  ): Promise<AgentStop | undefined> {
    const handle = client.workflow.getHandle(agentRequestWorkflowId(requestId));
    try {
      const { status } = await handle.describe();
      if (status.name === 'RUNNING') return undefined;
      return (await handle.result()) as AgentStop;
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return undefined;
      throw fromTemporalError(e, 'compute_unavailable');
    }
  }
}
