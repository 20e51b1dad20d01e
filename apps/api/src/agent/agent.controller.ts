import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiBody, ApiHeader, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { endEvents, FINAL_STATUSES, ServiceError, type AgentStop, type StreamEvent } from '#libs/contracts';
import { addLogContext } from '#libs/observability';
import type { AgentResponse } from '#libs/resources';
import { CurrentPrincipal } from '../auth/api-key.guard.js';
import { ApiIdempotencyKey, ApiResponses, errorResponses, EVENT_STREAM } from '../openapi/schemas.js';
import { parseAgentRequest, parseToolOutputs, resolveCapabilities } from '../runs/agent-request.validation.js';
import { errorAnswer, sendAnswer, setResponseHeaders, withRequestId } from '../runs/answers.js';
import { bodyHash } from '../json-off-thread.js';
import { parseIdempotencyKey } from '../runs/idempotency.js';
import { GetAgentRequestQuery } from '../runs/queries/get-agent-request.query.js';
import { AdmissionRefused, answerShape, RunGateway, type StartedRun } from '../runs/run-gateway.js';
import { SseResponder } from '../streaming/sse-responder.js';
import { StartAgentRequestCommand } from './commands/start-agent-request.command.js';
import { SubmitToolOutputsCommand } from './commands/submit-tool-outputs.command.js';
import { requireToolOutputsTarget } from './commands/submit-tool-outputs.handler.js';

const AUTH_ERRORS = ['invalid_api_key', 'rate_limited'] as const;
const COMPUTE_ERRORS = ['compute_error', 'compute_unavailable', 'service_unavailable'] as const;
const QUOTA_HEADERS = {
  'X-Request-Id': { schema: { type: 'string' }, description: "Equals the body's id." },
  'X-RateLimit-Limit': { schema: { type: 'integer' }, description: 'Monthly request limit of the plan.' },
  'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Requests remaining this billing period.' },
  'X-RateLimit-Reset': { schema: { type: 'integer' }, description: 'Unix time the billing period ends.' },
};
const agentResponse = {
  description: 'AgentResponse',
  headers: QUOTA_HEADERS,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/AgentResponse' } } },
};

/** `POST /v1/agent`, `POST /v1/agent/{id}/tool-outputs`, `GET /v1/agent/{id}`. */
@ApiTags('agent')
@ApiBearerAuth()
@Controller('v1/agent')
export class AgentController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly runs: RunGateway,
    private readonly sse: SseResponder,
  ) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Run the agent',
    description:
      'Answers with the first stop: `completed`, or `requires_tool_outputs` when the agent calls your tools. With `stream: true`, a text/event-stream of `token`, `tool_start`, `tool_end`, then `done` or `error` (each with an SSE id); a client that drops it stops nothing (GET /v1/agent/{id}/events resumes it). With `background: true`, `in_progress` at once, followed with GET /v1/agent/{id} and its events. A 502 `compute_unavailable` for a request that may have started carries its id in `X-Request-Id`.',
  })
  @ApiBody({ schema: { $ref: '#/components/schemas/AgentRequest' } })
  @ApiIdempotencyKey(
    "A request runs once: a retry gets its first stop (a failed run's error included), with `background: true` its `in_progress` answer, or with `stream: true` its stored events again from the first. A retry after a 502 `compute_unavailable` joins the request it started instead of starting another.",
  )
  @ApiResponses({
    200: { ...agentResponse, content: { ...agentResponse.content, ...EVENT_STREAM } },
    ...errorResponses([
      ...AUTH_ERRORS,
      'invalid_body',
      'missing_message',
      'message_too_long',
      'invalid_capabilities',
      'invalid_tools',
      'invalid_files',
      'stream_not_supported',
      'payload_too_large',
      'capability_not_enabled',
      'plan_restricted',
      'insufficient_credits',
      'quota_exceeded',
      'idempotency_conflict',
      ...COMPUTE_ERRORS,
    ]),
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
    resolveCapabilities(
      request.capabilities,
      plan.name,
      plan.capabilities,
      principal.project.capabilities,
      request.tools.length > 0,
    );
    // A stream holds one of the project's open-stream places (429 before anything is recorded).
    await this.runs.holdingStream(principal, answerShape(request) === 'stream', async () => {
      const claim = await this.runs.claim(principal, key, 'POST /v1/agent', body);
      if (claim?.answer) return sendAnswer(res, claim.answer);
      // Every attempt with the key runs under the claim's request id: Temporal joins them into one run.
      const requestId = claim?.requestId ?? randomUUID();
      addLogContext({ request_id: requestId });
      let run: StartedRun;
      try {
        run = await this.commands.execute(new StartAgentRequestCommand(principal, request, requestId));
      } catch (e) {
        // Refused at admission for credits or quota: the request's answer for good, saved under the key.
        if (e instanceof AdmissionRefused && e.final)
          return this.runs.send(res, claim, errorAnswer(e, this.config.publicBaseUrl, requestId));
        // Not saved: whether the request ran is not known here (or a cap refused it, for now); a
        // retry with the key joins it, or is admitted afresh.
        throw withRequestId(e, requestId);
      }
      await this.runs.answer(res, { ...run, ...(claim ? { claim } : {}) }, answerShape(request), principal, startedAt);
    });
  }

  @Post(':id/tool-outputs')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Submit tool outputs',
    description:
      'Answers the pending tool calls within 5 minutes; replies with the next stop. Costs no credits. The same submission sent again after it was accepted (with or without an Idempotency-Key) gets the answer it got.',
  })
  @ApiParam({ name: 'id', description: 'The request id from the first response.' })
  @ApiBody({ schema: { $ref: '#/components/schemas/ToolOutputsRequest' } })
  @ApiIdempotencyKey(
    "An accepted submission's answer is replayed; a refused one (400 `invalid_tool_outputs`, 404 `context_expired`) is not saved.",
  )
  @ApiResponses({
    200: agentResponse,
    ...errorResponses([
      ...AUTH_ERRORS,
      'invalid_body',
      'invalid_tool_outputs',
      'tool_output_too_large',
      'context_expired',
      'idempotency_conflict',
      'payload_too_large',
      ...COMPUTE_ERRORS,
    ]),
  })
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
    const claim = await this.runs.claim(principal, key, `POST /v1/agent/${id}/tool-outputs`, body);
    if (claim?.answer) return sendAnswer(res, claim.answer);
    let stop: AgentStop;
    try {
      stop = await this.commands.execute(new SubmitToolOutputsCommand(principal, id, outputs, bodyHash(body)));
    } catch (e) {
      // A refused submission is not saved (it changed nothing); a 502 names the request.
      throw e instanceof ServiceError && e.status >= 500 ? withRequestId(e, id) : e;
    }
    // A continuation is not a new request: the quota counter has not moved.
    await this.runs.send(
      res,
      claim,
      await this.runs.stopAnswer(stop, principal, startedAt, principal.project.requestsUsed),
    );
  }

  /** Replays what a client missed (Last-Event-ID or ?starting_after=) and continues live. */
  @Get(':id/events')
  @ApiOperation({
    summary: "Follow or resume a request's events",
    description:
      "The events after `Last-Event-ID` (or `starting_after`; none: from the first), then live until `done` or `error`: a finished request's stream replays and ends, a running one's replays and follows. " +
      'Events are recorded for requests sent with `stream: true` or `background: true`, and stay replayable while the request runs (tool pauses included) and for 24 hours after it ended; the end event is always there (for a request without recorded events, or whose events have expired, the stream is that end event alone). ' +
      'A client that drops a stream cancels nothing: the run goes on, and this endpoint resumes it.',
  })
  @ApiHeader({
    name: 'Last-Event-ID',
    required: false,
    schema: { type: 'string', pattern: '^[0-9]+$' },
    description: 'The `id` of the last event received: a non-negative integer.',
  })
  @ApiQuery({
    name: 'starting_after',
    required: false,
    schema: { type: 'integer', minimum: 0 },
    description: 'Like `Last-Event-ID` (which wins when both are given).',
  })
  @ApiQuery({
    name: 'after',
    required: false,
    schema: { type: 'integer', minimum: 0 },
    description: 'An alias of `starting_after` (which wins when both are given).',
  })
  @ApiResponses({
    200: { description: 'text/event-stream', content: EVENT_STREAM },
    ...errorResponses([
      ...AUTH_ERRORS,
      'invalid_body',
      'request_not_found',
      'compute_unavailable',
      'service_unavailable',
    ]),
  })
  async events(
    @Param('id') id: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query('starting_after') startingAfter: unknown,
    @Query('after') after: unknown,
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
  ): Promise<void> {
    // Each one given is checked, even one that another wins over (the document's schemas).
    for (const [name, value] of [
      ['Last-Event-ID', lastEventId],
      ['starting_after', startingAfter],
      ['after', after],
    ] as const) {
      if (value !== undefined && (typeof value !== 'string' || !/^[0-9]+$/.test(value))) {
        throw new ServiceError(
          'invalid_body',
          `\`${name}\` must be given once, as the non-negative integer id of the last event received.`,
        );
      }
    }
    // Any number of digits is an id (the document says so): one past every event there can be
    // replays nothing and follows the rest live.
    const afterSeq = Math.min(
      Number((lastEventId ?? startingAfter ?? after ?? '0') as string),
      Number.MAX_SAFE_INTEGER,
    );
    // 404 request_not_found for an unknown request or another project's (a background request
    // with no event yet is found: its stream follows it from the first event).
    await this.queries.execute(new GetAgentRequestQuery(principal, id));
    const endOf = async (): Promise<Omit<StreamEvent, 'seq'> | undefined> => {
      const stop = await this.queries.execute(new GetAgentRequestQuery(principal, id));
      return FINAL_STATUSES.has(stop.status) ? endEvents(stop)[0] : undefined;
    };
    await this.runs.holdingStream(principal, true, async () => {
      res.setHeader('X-Request-Id', id);
      await this.sse.respond(res, id, principal.project.id, afterSeq, undefined, endOf);
    });
  }

  @Get(':id')
  @ApiOperation({
    summary: 'Read a request',
    description:
      'Its latest state: in_progress, requires_tool_outputs, completed, cancelled (with its partial `message`), expired or failed (with `error`). How a background request is followed.',
  })
  @ApiResponses({
    200: agentResponse,
    ...errorResponses([...AUTH_ERRORS, 'request_not_found', 'compute_unavailable', 'service_unavailable']),
  })
  async get(
    @Param('id') id: string,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<AgentResponse> {
    const startedAt = performance.now();
    const stop = await this.queries.execute(new GetAgentRequestQuery(principal, id));
    setResponseHeaders(
      res,
      stop.requestId,
      principal,
      this.config.plans[principal.project.plan].monthlyQuota,
      principal.project.requestsUsed,
    );
    return this.runs.render(stop, principal, startedAt);
  }
}
