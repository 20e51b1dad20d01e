import { randomUUID } from 'node:crypto';
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { errorDocsUrl, isErrorCode, ServiceError } from '#libs/contracts';
import { FileStore } from '#libs/persistence';
import { SseSession, StreamHubService } from '#libs/streaming';
import { parseAgentRequest } from '../agent/agent-request.validation.js';
import { renderStop, requireSuccessfulStop, responseFiles, setResponseHeaders, type AgentResponse } from '../agent/agent-response.js';
import { computeInstanceOf } from '../agent/compute-instance.js';
import { CurrentPrincipal } from '../auth/api-key.guard.js';
import { CreateSessionCommand } from './commands/create-session.command.js';
import { EndSessionCommand } from './commands/end-session.command.js';
import { SendSessionMessageCommand } from './commands/send-session-message.command.js';
import { GetSessionQuery } from './queries/get-session.query.js';
import { ListSessionsQuery } from './queries/list-sessions.query.js';
import { parseListParams, renderRecord, renderView, type SessionList, type SessionResource } from './session-resource.js';

/** `POST /v1/sessions`, `GET /v1/sessions[/{id}]`, `DELETE /v1/sessions/{id}`, `POST /v1/sessions/{id}/messages`. */
@Controller('v1/sessions')
export class SessionsController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly files: FileStore,
    private readonly streams: StreamHubService,
  ) {}

  /** Serves a session message's stream events as SSE, exactly as the agent endpoint does. */
  private async stream(res: Response, requestId: string, principal: Principal, firstStop: Promise<unknown>): Promise<void> {
    await this.streams.hub.start().catch(() => undefined); // the store covers a late hub
    const session = new SseSession(res, this.streams.hub, this.streams.store, {
      requestId,
      projectId: principal.project.id,
      afterSeq: 0,
      decorate: (e) => (e.type === 'error' && isErrorCode(e.data.code) ? { docs: errorDocsUrl(this.config.publicBaseUrl, e.data.code) } : {}),
    });
    // A run that cannot finish (Temporal gone) still ends the stream with one error event.
    firstStop.catch((e: unknown) => {
      const error = e instanceof ServiceError ? e : new ServiceError('compute_unavailable', 'The compute service could not be reached.');
      session.fail('error', { code: error.code, message: error.message, docs: errorDocsUrl(this.config.publicBaseUrl, error.code) });
    });
    await session.run();
  }

  /** The headers of every 200; a session read or change has its own request id. */
  private headers(res: Response, principal: Principal, requestId: string = randomUUID(), requestsUsed = principal.project.requestsUsed): void {
    setResponseHeaders(res, requestId, principal, this.config.plans[principal.project.plan].monthlyQuota, requestsUsed);
  }

  @Post()
  @HttpCode(200)
  async create(@CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response): Promise<SessionResource> {
    const record = await this.commands.execute(new CreateSessionCommand(principal));
    this.headers(res, principal);
    return renderRecord(record);
  }

  @Get()
  async list(@Query() query: Record<string, unknown>, @CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response): Promise<SessionList> {
    const params = parseListParams(query);
    const { records, hasMore } = await this.queries.execute(new ListSessionsQuery(principal, params));
    this.headers(res, principal);
    return { object: 'list', data: records.map(renderRecord), has_more: hasMore, next_cursor: hasMore ? (records.at(-1)?.id ?? null) : null };
  }

  @Get(':id')
  async get(@Param('id') id: string, @CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response): Promise<SessionResource> {
    const record = await this.queries.execute(new GetSessionQuery(principal, id));
    this.headers(res, principal);
    return renderRecord(record);
  }

  @Delete(':id')
  @HttpCode(200)
  async end(@Param('id') id: string, @CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response): Promise<SessionResource> {
    const view = await this.commands.execute(new EndSessionCommand(principal, id));
    this.headers(res, principal);
    return renderView(view);
  }

  @Post(':id/messages')
  @HttpCode(200)
  async message(
    @Param('id') id: string,
    @Body() body: unknown,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<AgentResponse | undefined> {
    const startedAt = performance.now();
    const request = parseAgentRequest(body);
    const accepted = await this.commands.execute(new SendSessionMessageCommand(principal, id, request, randomUUID()));
    if (request.stream) {
      // SSE identical to the agent endpoint (contract 4.4); the quota counter moves when the run
      // is admitted, so until then the headers count this message.
      this.headers(res, principal, accepted.requestId, principal.project.requestsUsed + 1);
      await this.stream(res, accepted.requestId, principal, accepted.firstStop());
      return undefined;
    }
    const stop = requireSuccessfulStop(await accepted.firstStop(), principal);
    this.headers(res, principal, stop.requestId, stop.requestsUsed);
    const files = await responseFiles(stop, this.files, this.config);
    return renderStop(stop, { object: 'session.message', sessionId: id, computeInstance: computeInstanceOf(this.config), startedAt, plan: principal.project.plan }, files);
  }
}
