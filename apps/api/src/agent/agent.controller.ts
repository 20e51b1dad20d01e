import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiBody, ApiHeader, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { ServiceError, type AgentStop, isUuid } from '#libs/contracts';
import { FileStore } from '#libs/persistence';
import { CurrentPrincipal } from '../auth/api-key.guard.js';
import { parseAgentRequest, parseToolOutputs, resolveCapabilities } from './agent-request.validation.js';
import { renderStop, responseFiles, sendAnswer, setResponseHeaders, stopAnswer, withRequestId, type AgentResponse } from './agent-response.js';
import { StartAgentRequestCommand, StreamAgentRequestCommand } from './commands/start-agent-request.command.js';
import { SubmitToolOutputsCommand } from './commands/submit-tool-outputs.command.js';
import { requireToolOutputsTarget } from './commands/submit-tool-outputs.handler.js';
import { ApiIdempotencyKey, ApiResponses, errorResponses } from '../openapi/schemas.js';
import { SseResponder } from '../streaming/sse-responder.js';
import { computeInstanceOf } from './compute-instance.js';
import { bodyHash, IdempotencyKeys, parseIdempotencyKey } from './idempotency.js';
import { GetAgentRequestQuery } from './queries/get-agent-request.query.js';
import { addLogContext } from '#libs/observability';

const AUTH_ERRORS = ['invalid_api_key', 'rate_limited'] as const;
const COMPUTE_ERRORS = ['compute_error', 'compute_unavailable', 'service_unavailable'] as const;
const QUOTA_HEADERS = {
  'X-Request-Id': { schema: { type: 'string' }, description: 'Equals the body\'s id.' },
  'X-RateLimit-Limit': { schema: { type: 'integer' }, description: 'Monthly request limit of the plan.' },
  'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Requests remaining this billing period.' },
  'X-RateLimit-Reset': { schema: { type: 'integer' }, description: 'Unix time the billing period ends.' },
};
const agentResponse = { description: 'AgentResponse', headers: QUOTA_HEADERS, content: { 'application/json': { schema: { $ref: '#/components/schemas/AgentResponse' } } } };

/** `POST /v1/agent`, `POST /v1/agent/{id}/tool-outputs`, `GET /v1/agent/{id}`. */
@ApiTags('agent')
@ApiBearerAuth()
@Controller('v1/agent')
export class AgentController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly files: FileStore,
    private readonly sse: SseResponder,
    private readonly idempotency: IdempotencyKeys,
  ) {}

  private async render(stop: AgentStop, principal: Principal, startedAt: number): Promise<AgentResponse> {
    const files = await responseFiles(stop, this.files, this.config);
    // A session's request stays a `session.message` through its tool-output continuations.
    const object = stop.sessionId ? 'session.message' : 'agent.response';
    return renderStop(stop, { object, sessionId: stop.sessionId, computeInstance: computeInstanceOf(this.config), startedAt, plan: principal.project.plan }, files);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Run the agent', description: 'Answers with the first stop: `completed`, or `requires_tool_outputs` when the agent calls your tools. With `stream: true`, a text/event-stream of `token`, `tool_start`, `tool_end`, then `done` or `error` (each with an SSE id). A 502 `compute_unavailable` for a request that may have started carries its id in `X-Request-Id`.' })
  @ApiBody({ schema: { $ref: '#/components/schemas/AgentRequest' } })
  @ApiIdempotencyKey('A request runs once: a retry gets its first stop (a failed run\'s error included), or with `stream: true` its stored events again from the first. A retry after a 502 `compute_unavailable` joins the request it started instead of starting another.')
  @ApiResponses({
    200: { ...agentResponse, content: { ...agentResponse.content, 'text/event-stream': { schema: { type: 'string' } } } },
    ...errorResponses([...AUTH_ERRORS, 'invalid_body', 'missing_message', 'message_too_long', 'invalid_capabilities', 'invalid_tools', 'invalid_files', 'stream_not_supported', 'payload_too_large', 'capability_not_enabled', 'plan_restricted', 'insufficient_credits', 'quota_exceeded', 'idempotency_conflict', ...COMPUTE_ERRORS]),
  })
  async create(
    @Body() body: unknown,
    @Headers('idempotency-key') rawKey: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
  ): Promise<void> {
    const startedAt = performance.now();
    const request = parseAgentRequest(body);
    const key = parseIdempotencyKey(rawKey);
    // The 403s come before the key is claimed: nothing is recorded for a refused request.
    const plan = this.config.plans[principal.project.plan];
    resolveCapabilities(request.capabilities, plan.name, plan.capabilities, principal.project.capabilities, request.tools.length > 0);
    const claim = key === undefined ? undefined : await this.idempotency.claim(principal.project.id, key, 'POST /v1/agent', body);
    if (claim?.answer) return sendAnswer(res, claim.answer);
    // Every attempt with the key runs under the claim's request id: Temporal joins them into one run.
    const requestId = claim?.requestId ?? randomUUID();
    addLogContext({ request_id: requestId });
    if (request.stream) {
      let started;
      try {
        started = await this.commands.execute(new StreamAgentRequestCommand(principal, request, requestId));
      } catch (e) {
        throw withRequestId(e, requestId);
      }
      const firstStop = started.firstStop();
      // A stream refused for quota or credits (or never taken up) is answered as JSON, like a
      // request without `stream`: SSE headers are written only once the run was admitted.
      const unadmitted = await this.sse.unadmittedStop(requestId, firstStop, this.config.temporal.pickupTimeoutMs);
      if (unadmitted && 'error' in unadmitted) throw withRequestId(unadmitted.error, requestId);
      if (unadmitted) {
        const answer = await stopAnswer(unadmitted.stop, { config: this.config, files: this.files, principal, startedAt, requestsUsed: unadmitted.stop.requestsUsed });
        return sendAnswer(res, answer);
      }
      // The quota counter moves when the run is admitted; until then the headers count this request.
      setResponseHeaders(res, requestId, principal, plan.monthlyQuota, principal.project.requestsUsed + (claim && !claim.first ? 0 : 1));
      // A duplicate gets the whole stream again, from the first stored event.
      await this.sse.respond(res, requestId, principal.project.id, 0, firstStop);
      return;
    }
    let stop: AgentStop;
    try {
      stop = await this.commands.execute(new StartAgentRequestCommand(principal, request, requestId));
    } catch (e) {
      // Not saved: whether the request ran is not known here; a retry with the key joins it.
      throw withRequestId(e, requestId);
    }
    const answer = await stopAnswer(stop, { config: this.config, files: this.files, principal, startedAt, requestsUsed: stop.requestsUsed });
    sendAnswer(res, claim ? await this.idempotency.save(claim, answer) : answer);
  }

  @Post(':id/tool-outputs')
  @HttpCode(200)
  @ApiOperation({ summary: 'Submit tool outputs', description: 'Answers the pending tool calls within 5 minutes; replies with the next stop. Costs no credits. The same submission sent again after it was accepted (with or without an Idempotency-Key) gets the answer it got.' })
  @ApiParam({ name: 'id', description: 'The request id from the first response.' })
  @ApiBody({ schema: { $ref: '#/components/schemas/ToolOutputsRequest' } })
  @ApiIdempotencyKey('An accepted submission\'s answer is replayed; a refused one (400 `invalid_tool_outputs`, 404 `context_expired`) is not saved.')
  @ApiResponses({ 200: agentResponse, ...errorResponses([...AUTH_ERRORS, 'invalid_body', 'invalid_tool_outputs', 'tool_output_too_large', 'context_expired', 'idempotency_conflict', ...COMPUTE_ERRORS]) })
  async submitToolOutputs(
    @Param('id') id: string,
    @Body() body: unknown,
    @Headers('idempotency-key') rawKey: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
  ): Promise<void> {
    const startedAt = performance.now();
    const outputs = parseToolOutputs(body);
    const key = parseIdempotencyKey(rawKey);
    requireToolOutputsTarget(this.config, id, outputs);
    const claim = key === undefined ? undefined : await this.idempotency.claim(principal.project.id, key, `POST /v1/agent/${id}/tool-outputs`, body);
    if (claim?.answer) return sendAnswer(res, claim.answer);
    let stop: AgentStop;
    try {
      stop = await this.commands.execute(new SubmitToolOutputsCommand(principal, id, outputs, bodyHash(body)));
    } catch (e) {
      // A refused submission is not saved (it changed nothing); a 502 names the request.
      throw e instanceof ServiceError && e.status >= 500 ? withRequestId(e, id) : e;
    }
    // A continuation is not a new request: the quota counter has not moved.
    const answer = await stopAnswer(stop, { config: this.config, files: this.files, principal, startedAt, requestsUsed: principal.project.requestsUsed });
    sendAnswer(res, claim ? await this.idempotency.save(claim, answer) : answer);
  }

  /** Replays what a client missed (Last-Event-ID or ?after=) and continues live. */
  @Get(':id/events')
  @ApiOperation({ summary: 'Resume a stream', description: 'The events after `Last-Event-ID` (or `after`), then live until `done` or `error`. Kept 24 hours.' })
  @ApiHeader({ name: 'Last-Event-ID', required: false })
  @ApiQuery({ name: 'after', required: false, type: Number })
  @ApiResponses({ 200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...errorResponses([...AUTH_ERRORS, 'invalid_body', 'request_not_found']) })
  async events(
    @Param('id') id: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query('after') after: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
  ): Promise<void> {
    const raw = lastEventId ?? after ?? '0';
    const afterSeq = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(afterSeq)) {
      throw new ServiceError('invalid_body', '`Last-Event-ID` (or `after`) must be the non-negative integer id of the last event received.');
    }
    if (!isUuid(id) || !(await this.sse.exists(id, principal.project.id))) {
      throw new ServiceError('request_not_found', 'No streamed request with this id exists in this project (stream events are kept for 24 hours).');
    }
    res.setHeader('X-Request-Id', id);
    await this.sse.respond(res, id, principal.project.id, afterSeq);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a request', description: 'Its latest state: in_progress, requires_tool_outputs, completed, expired or failed (with `error`).' })
  @ApiResponses({ 200: agentResponse, ...errorResponses([...AUTH_ERRORS, 'request_not_found']) })
  async get(@Param('id') id: string, @CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response): Promise<AgentResponse> {
    const startedAt = performance.now();
    const stop = await this.queries.execute(new GetAgentRequestQuery(principal, id));
    setResponseHeaders(res, stop.requestId, principal, this.config.plans[principal.project.plan].monthlyQuota, principal.project.requestsUsed);
    return this.render(stop, principal, startedAt);
  }
}
