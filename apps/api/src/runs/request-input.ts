import type { Principal } from '#libs/accounts';
import type { AppConfig } from '#libs/config';
import type { AgentRequestInput, InputFileRef, TextRef } from '#libs/contracts';
import { creditsFor } from '#libs/metering';
import type { BlobStore } from '#libs/persistence';
import { resolveCapabilities, type AgentRequestBody } from './agent-request.validation.js';

/** A user message longer than this (UTF-8 bytes) is stored and travels by reference (claim check):
 * it would otherwise ride in the session's Update, the child's start and the workflow's input. */
export const INLINE_MESSAGE_BYTES = 4 * 1024;

/** The UTF-8 bytes of input a request stores (its files, and its message when long): what the
 * project's cap on input bytes a day counts. */
export function inputBytes(body: Pick<AgentRequestBody, 'files' | 'message'>): number {
  const message = Buffer.byteLength(body.message, 'utf8');
  return body.files.reduce((sum, f) => sum + f.bytes, 0) + (message > INLINE_MESSAGE_BYTES ? message : 0);
}

/** The most a request can cost (what admission reserves): 1 + the surcharges of the capabilities
 * the plan and project allow it (403s when it asks for others). */
export function requestCapabilities(
  config: Pick<AppConfig, 'plans' | 'capabilitySurcharges'>,
  principal: Principal,
  body: AgentRequestBody,
): { capabilities: ReturnType<typeof resolveCapabilities>; maxCredits: number } {
  const plan = config.plans[principal.project.plan];
  const capabilities = resolveCapabilities(
    body.capabilities,
    plan.name,
    plan.capabilities,
    principal.project.capabilities,
    body.tools.length > 0,
  );
  return { capabilities, maxCredits: creditsFor(capabilities, config.capabilitySurcharges) };
}

/** What an agent request (or a session message) runs with: the capabilities the plan and project
 * allow (403s), the message and the input files stored when large (claim check) and the most the
 * run can cost. Called once the request was admitted: a refused request stores nothing. */
export async function requestInput(
  config: Pick<AppConfig, 'plans' | 'capabilitySurcharges' | 'toolOutputsTimeoutMs' | 'temporal'>,
  blobs: BlobStore,
  principal: Principal,
  body: AgentRequestBody,
  requestId: string,
): Promise<Omit<AgentRequestInput, 'history' | 'sessionId'>> {
  const { project } = principal;
  const plan = config.plans[project.plan];
  const { capabilities, maxCredits } = requestCapabilities(config, principal, body);
  const files: InputFileRef[] = [];
  for (const file of body.files) {
    const { id } = await blobs.put(project.id, file.name, file.content, file.bytes);
    files.push({ name: file.name, blobId: id, bytes: file.bytes });
  }
  let message: TextRef = { text: body.message };
  if (Buffer.byteLength(body.message, 'utf8') > INLINE_MESSAGE_BYTES)
    message = { blobId: (await blobs.put(project.id, 'message', body.message)).id };
  const surcharges = config.capabilitySurcharges;
  return {
    requestId,
    projectId: project.id,
    plan: project.plan,
    message,
    capabilities,
    capabilitiesRequested: body.capabilities !== undefined,
    tools: body.tools,
    files,
    maxCredits,
    surcharges,
    monthlyQuota: plan.monthlyQuota,
    // A background run records its stream events like a streamed one: they are how it is followed.
    stream: body.stream || body.background,
    toolOutputsTimeoutMs: config.toolOutputsTimeoutMs,
    // The bulkhead: its streamed model calls and built-in tools on workers of their own, if run.
    ...(config.temporal.longActivityTaskQueue ? { longActivityTaskQueue: config.temporal.longActivityTaskQueue } : {}),
  };
}
