import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { ServiceError, type AgentStop } from '#libs/contracts';
import { FileStore } from '#libs/persistence';
import { CurrentPrincipal } from '../auth/api-key.guard.js';
import { parseAgentRequest, parseToolOutputs } from './agent-request.validation.js';
import { renderStop, requireSuccessfulStop, responseFiles, setResponseHeaders, type AgentResponse } from './agent-response.js';
import { StartAgentRequestCommand } from './commands/start-agent-request.command.js';
import { SubmitToolOutputsCommand } from './commands/submit-tool-outputs.command.js';
import { computeInstanceOf } from './compute-instance.js';
import { GetAgentRequestQuery } from './queries/get-agent-request.query.js';

/** `POST /v1/agent`, `POST /v1/agent/{id}/tool-outputs`, `GET /v1/agent/{id}`. */
@Controller('v1/agent')
export class AgentController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly files: FileStore,
  ) {}

  private async render(stop: AgentStop, principal: Principal, startedAt: number): Promise<AgentResponse> {
    const files = await responseFiles(stop, this.files, this.config);
    return renderStop(stop, { object: 'agent.response', computeInstance: computeInstanceOf(this.config), startedAt, plan: principal.project.plan }, files);
  }

  @Post()
  @HttpCode(200)
  async create(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response): Promise<AgentResponse> {
    const startedAt = performance.now();
    const request = parseAgentRequest(body);
    if (request.stream) {
      throw new ServiceError('stream_not_supported', 'Streaming responses are not available on this deployment yet; send `stream: false`.');
    }
    const stop = requireSuccessfulStop(await this.commands.execute(new StartAgentRequestCommand(principal, request, randomUUID())));
    setResponseHeaders(res, stop.requestId, principal, this.config.plans[principal.project.plan].monthlyQuota, stop.requestsUsed);
    return this.render(stop, principal, startedAt);
  }

  @Post(':id/tool-outputs')
  @HttpCode(200)
  async submitToolOutputs(
    @Param('id') id: string,
    @Body() body: unknown,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<AgentResponse> {
    const startedAt = performance.now();
    const outputs = parseToolOutputs(body);
    const stop = requireSuccessfulStop(await this.commands.execute(new SubmitToolOutputsCommand(principal, id, outputs)));
    setResponseHeaders(res, stop.requestId, principal, this.config.plans[principal.project.plan].monthlyQuota, principal.project.requestsUsed);
    return this.render(stop, principal, startedAt);
  }

  @Get(':id')
  async get(@Param('id') id: string, @CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response): Promise<AgentResponse> {
    const startedAt = performance.now();
    const stop = await this.queries.execute(new GetAgentRequestQuery(principal, id));
    setResponseHeaders(res, stop.requestId, principal, this.config.plans[principal.project.plan].monthlyQuota, principal.project.requestsUsed);
    return this.render(stop, principal, startedAt);
  }
}
