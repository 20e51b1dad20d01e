import { randomUUID } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import {
  SEARCH_ATTRIBUTES,
  ServiceError,
  SESSION_LIMITS,
  sessionWorkflowId,
  type SessionWorkflowInput,
} from '#libs/contracts';
import { addLogContext } from '#libs/observability';
import { TemporalClientService } from '#libs/temporal';
import type { StoredAnswer } from '../../runs/idempotency.js';
import { RunGateway } from '../../runs/run-gateway.js';
import { fromTemporalError, requireTemporal } from '../../runs/temporal-errors.js';
import { withinPickup } from '../session-temporal.js';
import type { SessionRecord } from '#libs/resources';
import { SessionsRepository } from '../sessions.repository.js';
import { CreateSessionCommand, type CreateSessionOutcome } from './create-session.command.js';

@CommandHandler(CreateSessionCommand)
export class CreateSessionHandler implements ICommandHandler<CreateSessionCommand> {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporal: TemporalClientService,
    private readonly sessions: SessionsRepository,
    private readonly runs: RunGateway,
  ) {}

  async execute({ principal, idempotency }: CreateSessionCommand): Promise<CreateSessionOutcome> {
    const { project } = principal;
    // Sessions are for accounts that have purchased credits; the free plan has none (DESIGN.md 4 and 7).
    if (project.plan === 'free' || !project.creditsPurchased) {
      throw new ServiceError(
        'plan_restricted',
        'Sessions are available only to accounts that have purchased credits. Purchase credits to start a session.',
      );
    }
    const { client, connection } = requireTemporal(this.temporal);

    // With a key, the session's id is the claim's request id: every attempt creates the same session.
    const claim = await this.runs.claim(principal, idempotency?.key, 'POST /v1/sessions', idempotency?.body);
    if (claim?.answer) return { kind: 'replay', answer: claim.answer };
    const save = (answer: StoredAnswer): Promise<StoredAnswer> => this.runs.save(claim, answer);

    const now = Date.now();
    const idleTimeoutMs = this.config.sessions.idleTimeoutMs;
    const record: SessionRecord = {
      id: claim?.requestId ?? randomUUID(),
      projectId: project.id,
      status: 'active',
      messageCount: 0,
      createdAt: new Date(now),
      lastActivityAt: new Date(now),
      expiresAt: new Date(now + idleTimeoutMs),
    };
    addLogContext({ session_id: record.id });
    const input: SessionWorkflowInput = { sessionId: record.id, projectId: project.id, createdAt: now, idleTimeoutMs };
    const plan = this.config.plans[project.plan];
    const capabilities = project.capabilities.filter((c) => plan.capabilities.includes(c));
    const created = await this.sessions.createWithinLimit(record, SESSION_LIMITS.activePerProject, async () => {
      try {
        await withinPickup(connection, this.config.temporal.pickupTimeoutMs, () =>
          client.workflow.start('sessionWorkflow', {
            workflowId: sessionWorkflowId(record.id),
            taskQueue: this.config.temporal.taskQueue,
            args: [input],
            // A retry whose first attempt started the workflow but did not commit the row joins it;
            // a session's id never serves a second run.
            workflowIdConflictPolicy: 'USE_EXISTING',
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            typedSearchAttributes: [
              { key: SEARCH_ATTRIBUTES.projectId, value: project.id },
              { key: SEARCH_ATTRIBUTES.agentStatus, value: 'active' },
              { key: SEARCH_ATTRIBUTES.capabilities, value: capabilities },
            ],
          }),
        );
      } catch (e) {
        if (e instanceof WorkflowExecutionAlreadyStartedError) {
          throw new ServiceError(
            'session_ended',
            'A session started by an earlier attempt with this Idempotency-Key has already closed. Start a new session with another key.',
          );
        }
        throw fromTemporalError(e, 'compute_unavailable');
      }
    });
    if (created === 'limit') {
      // Not saved: nothing was created, so a retry with the key may create the session later.
      throw new ServiceError(
        'session_limit_reached',
        `The project already has ${SESSION_LIMITS.activePerProject} active sessions. End one with DELETE /v1/sessions/{id} or let one expire.`,
      );
    }
    return { kind: 'created', record: created, save };
  }
}
