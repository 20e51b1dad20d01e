import { Logger } from '@nestjs/common';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import { agentRequestWorkflowId, EVENT_TYPES, sessionWorkflowId, type ReconcilerActivities as Contract } from '#libs/contracts';
import { deterministicUuid, type EventStore } from '#libs/events';
import type { MeteringService } from '#libs/metering';

/** Rows looked at per pass; the next pass takes the rest. */
const BATCH = 200;

/** Finds money and session slots held by workflows that are gone, and gives them back. */
export class ReconcilerActivities {
  private readonly logger = new Logger('reconciler');

  constructor(
    private readonly metering: MeteringService,
    private readonly db: DataSource,
    private readonly events: EventStore,
    private readonly temporal: Client,
  ) {}

  readonly reconcile: Contract['reconcile'] = async ({ graceSeconds }) => {
    const before = new Date(Date.now() - graceSeconds * 1000);
    let reservationsReleased = 0;
    let creditsReleased = 0;
    const open = await this.metering.openReservations(before, BATCH);
    for (const r of open) {
      if (!(await this.closed(agentRequestWorkflowId(r.requestId)))) continue;
      if (await this.metering.release({ requestId: r.requestId, projectId: r.projectId, reason: 'reconciled' })) {
        reservationsReleased += 1;
        creditsReleased += r.credits;
        this.logger.warn(`released ${r.credits} credits reserved by request ${r.requestId}, whose workflow closed without settling`);
      }
    }

    let sessionsFreed = 0;
    const active: { id: string; project_id: string }[] = await this.db.query(
      `select id, project_id from sessions where status = 'active' and created_at < $1 order by created_at limit $2`,
      [before, BATCH],
    );
    for (const s of active) {
      if (!(await this.closed(sessionWorkflowId(s.id)))) continue;
      if (await this.freeSession(s.id, s.project_id)) {
        sessionsFreed += 1;
        this.logger.warn(`session ${s.id} was active but its workflow had closed: marked ended`);
      }
    }
    return { reservationsChecked: open.length, reservationsReleased, creditsReleased, sessionsChecked: active.length, sessionsFreed };
  };

  /** Whether the workflow has closed (or is gone past retention). Unknown (Temporal unreachable)
   * counts as open: the next pass looks again. */
  private async closed(workflowId: string): Promise<boolean> {
    try {
      const description = await this.temporal.workflow.getHandle(workflowId).describe();
      return description.status.name !== 'RUNNING';
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return true;
      this.logger.warn(`could not describe ${workflowId}: ${e instanceof Error ? e.message : String(e)}`);
      return false;
    }
  }

  private async freeSession(sessionId: string, projectId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // An UPDATE ... RETURNING answers [rows, count] through TypeORM's pg driver.
      const [rows] = (await tx.query(
        `update sessions set status = 'ended', expires_at = now(), revision = revision + 1 where id = $1 and status = 'active' returning 1`,
        [sessionId],
      )) as [unknown[], number];
      if (rows.length === 0) return false;
      await this.events.append(tx, `session-${sessionId}`, 'any', [
        {
          eventId: deterministicUuid(sessionId, EVENT_TYPES.sessionReconciled),
          type: EVENT_TYPES.sessionReconciled,
          data: { sessionId, status: 'ended' },
          metadata: { projectId, correlationId: sessionId, causationId: sessionId },
        },
      ]);
      return true;
    });
  }
}
