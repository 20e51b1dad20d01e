import type { Principal } from '#libs/accounts';
import type { AppConfig } from '#libs/config';
import type { AgentRequestInput, InputFileRef } from '#libs/contracts';
import { creditsFor } from '#libs/metering';
import type { BlobStore } from '#libs/persistence';
import { resolveCapabilities, type AgentRequestBody } from './agent-request.validation.js';

/** What an agent request (or a session message) runs with: the capabilities the plan and project
 * allow (403s), the input files stored once (claim check) and the most the run can cost. */
export async function requestInput(
  config: Pick<AppConfig, 'plans' | 'capabilitySurcharges' | 'toolOutputsTimeoutMs'>,
  blobs: BlobStore,
  principal: Principal,
  body: AgentRequestBody,
  requestId: string,
): Promise<Omit<AgentRequestInput, 'history' | 'sessionId'>> {
  const { project } = principal;
  const plan = config.plans[project.plan];
  const capabilities = resolveCapabilities(body.capabilities, plan.name, plan.capabilities, project.capabilities, body.tools.length > 0);
  const files: InputFileRef[] = [];
  for (const file of body.files) {
    const { id, bytes } = await blobs.put(project.id, file.name, file.content);
    files.push({ name: file.name, blobId: id, bytes });
  }
  const surcharges = config.capabilitySurcharges;
  return {
    requestId,
    projectId: project.id,
    plan: project.plan,
    message: body.message,
    capabilities,
    capabilitiesRequested: body.capabilities !== undefined,
    tools: body.tools,
    files,
    maxCredits: creditsFor(capabilities, surcharges),
    surcharges,
    monthlyQuota: plan.monthlyQuota,
    stream: body.stream,
    toolOutputsTimeoutMs: config.toolOutputsTimeoutMs,
  };
}
