import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { agentRequestWorkflowId, ServiceError, submitToolOutputsUpdate, type AgentStop, type ToolOutputsSubmission, isUuid } from '#libs/contracts';
import { BlobStore } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';
import { computeInstanceOf } from '../compute-instance.js';
import { fromTemporalError } from '../temporal-errors.js';
import { SubmitToolOutputsCommand } from './submit-tool-outputs.command.js';

/** Outputs above this size go to the blob store and travel by id (DESIGN.md section 1). */
const INLINE_OUTPUT_BYTES = 64 * 1024;

@CommandHandler(SubmitToolOutputsCommand)
export class SubmitToolOutputsHandler implements ICommandHandler<SubmitToolOutputsCommand> {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporal: TemporalClientService,
    private readonly blobs: BlobStore,
  ) {}

  async execute({ principal, requestId, body }: SubmitToolOutputsCommand): Promise<AgentStop> {
    const expired = new ServiceError('context_expired', 'The tool execution context has expired (5 minutes after the tool calls) or does not exist.');
    if (!isUuid(requestId) || body.computeInstance !== computeInstanceOf(this.config)) throw expired;
    const client = this.temporal.client;
    if (!client) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');
    const outputs: ToolOutputsSubmission['outputs'][number][] = [];
    for (const o of body.outputs) {
      if (Buffer.byteLength(o.output, 'utf8') > INLINE_OUTPUT_BYTES) {
        const { id } = await this.blobs.put(principal.project.id, `tool-output-${o.toolCallId}`, o.output);
        outputs.push({ toolCallId: o.toolCallId, blobId: id });
      } else {
        outputs.push({ toolCallId: o.toolCallId, output: o.output });
      }
    }
    try {
      return await client.workflow
        .getHandle(agentRequestWorkflowId(requestId))
        .executeUpdate(submitToolOutputsUpdate, { args: [{ projectId: principal.project.id, outputs }] });
    } catch (e) {
      throw fromTemporalError(e, 'context_expired');
    }
  }
}
