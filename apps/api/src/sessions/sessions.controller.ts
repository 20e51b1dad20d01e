import { randomUUID } from 'node:crypto';
import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { CurrentPrincipal } from '../auth/api-key.guard.js';
import { ApiIdempotencyKey, ApiResponses, errorResponses, EVENT_STREAM, ID_SCHEMA } from '../openapi/schemas.js';
import { parseAgentRequest } from '../runs/agent-request.validation.js';
import { responseHeaders, sendAnswer, setResponseHeaders } from '../runs/answers.js';
import { parseIdempotencyKey } from '../runs/idempotency.js';
import { answerShape, RunGateway } from '../runs/run-gateway.js';
import { CreateSessionCommand } from './commands/create-session.command.js';
import { EndSessionCommand } from './commands/end-session.command.js';
import { SendSessionMessageCommand } from './commands/send-session-message.command.js';
import { GetSessionQuery } from './queries/get-session.query.js';
import { ListSessionsQuery } from './queries/list-sessions.query.js';
import { renderRecord, renderView, type SessionResource } from '#libs/resources';
import { LIST_LIMIT, parseListParams, type SessionList } from './session-resource.js';

/** `POST /v1/sessions`, `GET /v1/sessions[/{id}]`, `DELETE /v1/sessions/{id}`, `POST /v1/sessions/{id}/messages`. */
const SESSION = {
  description: 'Session',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Session' } } },
};
const AUTH_ERRORS = ['invalid_api_key', 'rate_limited'] as const;

@ApiTags('sessions')
@ApiBearerAuth()
@Controller('v1/sessions')
export class SessionsController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly runs: RunGateway,
  ) {}

  /** The headers of every 200; a session read or change has its own request id. */
  private headers(
    res: Response,
    principal: Principal,
    requestId: string = randomUUID(),
    requestsUsed = principal.project.requestsUsed,
  ): void {
    setResponseHeaders(res, requestId, principal, this.config.plans[principal.project.plan].monthlyQuota, requestsUsed);
  }

  private headerValues(principal: Principal, requestId: string = randomUUID()): Record<string, string> {
    return responseHeaders(
      requestId,
      principal,
      this.config.plans[principal.project.plan].monthlyQuota,
      principal.project.requestsUsed,
    );
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Start a session',
    description: 'No body needed. Needs a project that has purchased credits; at most 10 active per project.',
  })
  @ApiIdempotencyKey(
    'One key creates one session: a retry gets the session the first attempt created. A 429 `session_limit_reached` is not saved (nothing was created).',
  )
  @ApiResponses({
    200: SESSION,
    ...errorResponses([
      ...AUTH_ERRORS,
      'invalid_body',
      'plan_restricted',
      'idempotency_conflict',
      'payload_too_large',
      'session_limit_reached',
      'service_unavailable',
      'compute_unavailable',
    ]),
  })
  async create(
    @Body() body: unknown,
    @Headers('idempotency-key') rawKey: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
  ): Promise<void> {
    const key = parseIdempotencyKey(rawKey);
    const outcome = await this.commands.execute(
      new CreateSessionCommand(principal, key === undefined ? undefined : { key, body }),
    );
    if (outcome.kind === 'replay') return sendAnswer(res, outcome.answer);
    const answer = await outcome.save({
      status: 200,
      headers: this.headerValues(principal),
      body: renderRecord(outcome.record),
    });
    sendAnswer(res, answer);
  }

  @Get()
  @ApiOperation({ summary: "List this project's sessions", description: 'Newest first, cursor paging.' })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: LIST_LIMIT.max, default: LIST_LIMIT.default },
  })
  @ApiQuery({
    name: 'after',
    required: false,
    schema: ID_SCHEMA,
    description:
      'The next_cursor of the previous page: a session of this project (another id: 404 `session_not_found`).',
  })
  @ApiQuery({ name: 'status', required: false, enum: ['active', 'expired', 'ended'] })
  @ApiResponses({
    200: {
      description: '`{ object: "list", data, has_more, next_cursor }`',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: {
              object: { const: 'list' },
              data: { type: 'array', items: { $ref: '#/components/schemas/Session' } },
              has_more: { type: 'boolean' },
              next_cursor: { type: ['string', 'null'] },
            },
          },
        },
      },
    },
    ...errorResponses([...AUTH_ERRORS, 'invalid_body', 'session_not_found', 'service_unavailable']),
  })
  async list(
    @Query() query: Record<string, unknown>,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SessionList> {
    const params = parseListParams(query);
    const { records, hasMore } = await this.queries.execute(new ListSessionsQuery(principal, params));
    this.headers(res, principal);
    return {
      object: 'list',
      data: records.map(renderRecord),
      has_more: hasMore,
      next_cursor: hasMore ? (records.at(-1)?.id ?? null) : null,
    };
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a session' })
  @ApiResponses({ 200: SESSION, ...errorResponses([...AUTH_ERRORS, 'session_not_found', 'service_unavailable']) })
  async get(
    @Param('id') id: string,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SessionResource> {
    const record = await this.queries.execute(new GetSessionQuery(principal, id));
    this.headers(res, principal);
    return renderRecord(record);
  }

  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'End a session', description: 'Later messages get 410 session_ended.' })
  @ApiResponses({
    200: SESSION,
    ...errorResponses([
      ...AUTH_ERRORS,
      'session_not_found',
      'session_expired',
      'session_ended',
      'compute_unavailable',
      'service_unavailable',
    ]),
  })
  async end(
    @Param('id') id: string,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SessionResource> {
    const view = await this.commands.execute(new EndSessionCommand(principal, id));
    this.headers(res, principal);
    return renderView(view);
  }

  @Post(':id/messages')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Send a message to a session',
    description:
      'The history (last 50 messages) reaches the agent automatically. Same shape, credits, headers, streaming and `background` as POST /v1/agent, with object `session.message` and `session_id`. One message at a time: while the previous message runs or waits for tool outputs, 409 `session_busy` (nothing recorded).',
  })
  @ApiBody({ schema: { $ref: '#/components/schemas/AgentRequest' } })
  @ApiIdempotencyKey(
    "A message runs once and enters the conversation once: a retry gets its first stop (a failed run's error included), or with `stream: true` its stored events again from the first; also once the session has ended (a new message then gets 410 `session_ended`).",
  )
  @ApiResponses({
    200: {
      description: 'AgentResponse (session.message)',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/AgentResponse' } }, ...EVENT_STREAM },
    },
    ...errorResponses([
      ...AUTH_ERRORS,
      'invalid_body',
      'missing_message',
      'message_too_long',
      'invalid_capabilities',
      'invalid_tools',
      'invalid_files',
      'stream_not_supported',
      'capability_not_enabled',
      'plan_restricted',
      'insufficient_credits',
      'quota_exceeded',
      'session_not_found',
      'idempotency_conflict',
      'session_busy',
      'session_expired',
      'session_ended',
      'payload_too_large',
      'compute_error',
      'compute_unavailable',
      'service_unavailable',
    ]),
  })
  async message(
    @Param('id') id: string,
    @Body() body: unknown,
    @Headers('idempotency-key') rawKey: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
  ): Promise<void> {
    const startedAt = performance.now();
    const request = parseAgentRequest(body);
    const key = parseIdempotencyKey(rawKey);
    // A stream holds one of the project's open-stream places (429 before anything is recorded).
    await this.runs.holdingStream(principal, answerShape(request) === 'stream', async () => {
      const outcome = await this.commands.execute(
        new SendSessionMessageCommand(principal, id, request, key === undefined ? undefined : { key, body }),
      );
      if (outcome.kind === 'replay') return sendAnswer(res, outcome.answer);
      await this.runs.answer(res, { ...outcome, sessionId: id }, answerShape(request), principal, startedAt);
    });
  }
}
