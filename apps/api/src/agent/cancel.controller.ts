import { Body, Controller, Headers, HttpCode, Param, Post, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import { FINAL_STATUSES, type AgentStop } from '#libs/contracts';
import { CurrentPrincipal } from '../auth/api-key.guard.js';
import { ApiIdempotencyKey, ApiResponses, errorResponses } from '../openapi/schemas.js';
import { sendAnswer, withRequestId } from '../runs/answers.js';
import { parseIdempotencyKey } from '../runs/idempotency.js';
import { GetAgentRequestQuery } from '../runs/queries/get-agent-request.query.js';
import { RunGateway } from '../runs/run-gateway.js';
import { CancelAgentRequestCommand } from './commands/cancel-agent-request.command.js';
import { notCancellable } from './commands/cancel-agent-request.handler.js';

/** `POST /v1/agent/{id}/cancel` (DESIGN.md section 9). */
@ApiTags('agent')
@ApiBearerAuth()
@Controller('v1/agent')
export class CancelController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly runs: RunGateway,
  ) {}

  @Post(':id/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Cancel a request',
    description:
      'Cancels a request that is running or waiting for tool outputs (a one-shot request or a session message; the session goes on). Its model call is aborted; it is charged by what ran: 1 + the surcharges of the capabilities used if the model answered at least once before its first stop, else 0. Answers with the AgentResponse, status `cancelled` and the partial `message`; a stream open on it ends with an `error` event of code `request_cancelled`.',
  })
  @ApiParam({ name: 'id', description: "The request id (a session message's id too)." })
  @ApiIdempotencyKey('A cancellation that succeeded is replayed, even after the request has become not cancellable.')
  @ApiResponses({
    200: {
      description: 'AgentResponse with status `cancelled`',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/AgentResponse' } } },
    },
    ...errorResponses([
      'invalid_api_key',
      'rate_limited',
      'invalid_body',
      'request_not_found',
      'request_not_cancellable',
      'idempotency_conflict',
      'payload_too_large',
      'compute_unavailable',
      'service_unavailable',
    ]),
  })
  async cancel(
    @Param('id') id: string,
    @Body() body: unknown,
    @Headers('idempotency-key') rawKey: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
  ): Promise<void> {
    const startedAt = performance.now();
    const key = parseIdempotencyKey(rawKey);
    // 404 for an unknown id or another project's request, before the key is claimed.
    const current: AgentStop = await this.queries.execute(new GetAgentRequestQuery(principal, id));
    const claim = await this.runs.claim(principal, key, `POST /v1/agent/${id}/cancel`, body);
    if (claim?.answer) return sendAnswer(res, claim.answer);
    if (FINAL_STATUSES.has(current.status)) throw notCancellable();
    let stop: AgentStop;
    try {
      stop = await this.commands.execute(new CancelAgentRequestCommand(principal, id));
    } catch (e) {
      throw withRequestId(e, id);
    }
    // The cancelled stop with the partial message it kept. Cancelling is not a new request: the
    // quota counter has not moved.
    await this.runs.send(
      res,
      claim,
      await this.runs.stopAnswer(stop, principal, startedAt, principal.project.requestsUsed),
    );
  }
}
