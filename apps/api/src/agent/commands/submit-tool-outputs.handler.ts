import { randomUUID } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import {
  agentRequestWorkflowId,
  ServiceError,
  submitToolOutputsUpdate,
  type AgentStop,
  type ToolOutputsSubmission,
  isUuid,
} from '#libs/contracts';
import { BlobStore } from '#libs/persistence';
import { RequestReadModel } from '#libs/read-models';
import { computeInstanceOf } from '#libs/resources';
import type { ToolOutputsBody } from '../../runs/agent-request.validation.js';
import { RunGateway } from '../../runs/run-gateway.js';
import { awaitAnswer, fromTemporalError, type ConfiguredTemporal } from '../../runs/temporal-errors.js';
import { SubmitToolOutputsCommand } from './submit-tool-outputs.command.js';

/** Outputs above this size go to the blob store and travel by id (claim check), like a long user
 * message (request-input.ts): a submission of many outputs stays small in the workflow's history. */
const INLINE_OUTPUT_BYTES = 4 * 1024;

/**
 * The Update id of a submission: the same submission (same request, same parsed body) to the same
 * pause is the same Update, so a duplicate sent while the request runs joins the first and gets
 * its answer, and one sent after the request has closed gets that answer too (Temporal keeps an
 * Update's outcome by id with the closed workflow; an id it has not seen on a closed workflow is
 * refused as not found). A refused submission leaves no outcome, so sending it again is tried
 * again. The project is part of the id: another project's submission never joins this one's (the
 * workflow refuses it). The pause (its stop number, `pause`) is part of it too: a provider that
 * numbers each turn's calls from 0 repeats the ids in the next round, and the same outputs for them
 * would otherwise join the first round's Update and never reach the run (issue 28).
 */
export const toolOutputsUpdateId = (projectId: string, pause: number | undefined, bodyHash: string): string =>
  pause === undefined ? `tool-outputs-${projectId}-${bodyHash}` : `tool-outputs-${projectId}-${pause}-${bodyHash}`;

/** The 404s that need no Temporal: a request id that is not a uuid, or another compute instance. */
export function requireToolOutputsTarget(
  config: Pick<AppConfig, 'temporal'>,
  requestId: string,
  body: ToolOutputsBody,
): void {
  if (!isUuid(requestId) || body.computeInstance !== computeInstanceOf(config)) {
    throw new ServiceError(
      'context_expired',
      'The tool execution context has expired (5 minutes after the tool calls) or does not exist.',
    );
  }
}

@CommandHandler(SubmitToolOutputsCommand)
export class SubmitToolOutputsHandler implements ICommandHandler<SubmitToolOutputsCommand> {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly runs: RunGateway,
    private readonly blobs: BlobStore,
    private readonly requests: RequestReadModel,
  ) {}

  async execute(command: SubmitToolOutputsCommand): Promise<AgentStop> {
    requireToolOutputsTarget(this.config, command.requestId, command.body);
    const temporal = this.runs.temporal();
    // The run goes on with these outputs and this api waits for its next stop: within the
    // overload gate, like a new run (503 with Retry-After before anything is delivered).
    return this.runs.gatedStop(() => this.submit(temporal, command));
  }

  private async submit(
    { client, connection }: ConfiguredTemporal,
    { principal, requestId, body, bodyHash }: SubmitToolOutputsCommand,
  ): Promise<AgentStop> {
    const projectId = principal.project.id;
    // What this submission stores (its large outputs) counts against the project's cap on input
    // bytes a day, before anything is stored: a refusal stores nothing (issue 44).
    const stored = body.outputs.filter((o) => Buffer.byteLength(o.output, 'utf8') > INLINE_OUTPUT_BYTES);
    const bytes = stored.reduce((sum, o) => sum + Buffer.byteLength(o.output, 'utf8'), 0);
    const counted = bytes > 0 ? randomUUID() : undefined;
    if (counted) await this.runs.countStoredBytes(principal, counted, bytes);
    const outputs: ToolOutputsSubmission['outputs'][number][] = [];
    for (const o of body.outputs) {
      if (stored.includes(o)) {
        const { id } = await this.blobs.put(projectId, `tool-output-${o.toolCallId}`, o.output);
        outputs.push({ toolCallId: o.toolCallId, blobId: id });
      } else {
        outputs.push({ toolCallId: o.toolCallId, output: o.output });
      }
    }
    const pickupMs = this.config.temporal.pickupTimeoutMs;
    // The pause these outputs answer: the last one recorded (a duplicate sent after the request
    // ended finds the same pause as the submission it repeats).
    const pause = await this.requests.lastPause(requestId, principal.project.id);
    const handle = client.workflow.getHandle(agentRequestWorkflowId(requestId));
    let stop: AgentStop;
    try {
      // Both waits last while workers make progress: a worker must take up the workflow task that
      // validates and accepts the Update within the pickup time (the same task may run the whole
      // leg to the next stop: local activities), and the next stop comes while workers work on it.
      const run = { connection, client, describe: async () => (await handle.describe()).raw };
      const update = await awaitAnswer(run, pickupMs, () =>
        handle.startUpdate(submitToolOutputsUpdate, {
          args: [{ projectId: principal.project.id, outputs }],
          updateId: toolOutputsUpdateId(principal.project.id, pause, bodyHash),
          waitForStage: 'ACCEPTED',
        }),
      );
      stop = await awaitAnswer(run, pickupMs, () => update.result());
    } catch (e) {
      const error = fromTemporalError(e, 'context_expired');
      // The Update was lost with a workflow task that took these outputs and was then retried
      // (the run ended in the retry before the Update came back): the outputs were taken, and the
      // stop they led to, as recorded, is this submission's answer.
      if (error.code === 'compute_unavailable') {
        const answered = await this.requests.stopAfterToolOutputs(
          requestId,
          outputs.map((o) => o.toolCallId),
        );
        if (answered?.projectId === principal.project.id) return answered;
      }
      // Refused (or unknown): the stored outputs must not outlive the refusal. Not taken up in
      // time is no refusal: the Update may yet be delivered, so what it references stays stored.
      // Their bytes leave the project's count with them.
      if (error.code !== 'compute_unavailable') {
        await this.blobs.delete(
          outputs.flatMap((o) => (o.blobId ? [o.blobId] : [])),
          projectId,
        );
        if (counted) await this.runs.releaseStoredBytes(principal, counted);
      }
      throw error;
    }
    if (stop.projectId !== principal.project.id) {
      throw new ServiceError(
        'context_expired',
        'The tool execution context has expired (5 minutes after the tool calls) or does not exist.',
      );
    }
    return stop;
  }
}
