import { Logger } from '@nestjs/common';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import { agentRequestWorkflowId, sessionWorkflowId, type ReconcilerActivities as Contract } from '#libs/contracts';
import type { SessionStream } from '#libs/events';
import type { MeteringService } from '#libs/metering';

/** Rows looked at per pass; the next pass takes the rest. */
const BATCH = 200;

/** Finds money and session slots held by workflows that are gone, and gives them back. */
export class ReconcilerActivities {
  private readonly logger = new Logger('reconciler');

  constructor(
    private readonly metering: MeteringService,
    private readonly db: DataSource,
    private readonly sessions: SessionStream,
    private readonly temporal: Client,
  ) {}

  readonly reconcile: Contract['reconcile'] = async ({ graceSeconds }) => {
    const before = new Date(Date.now() - graceSeconds * 1000);
    let reservationsReleased = 0;
    let creditsReleased = 0;
    const open = await this.metering.openReservations(before, BATCH);
    for (const r of open) {
      // One item that fails (a database blip) must not end the pass for the others.
      await this.each(`reservation of request ${r.requestId}`, async () => {
        // Admitted by the api and not taken up by a workflow yet: left alone until its pickup
        // deadline has passed (a workflow that takes it up later refuses it, so none can start it
        // behind the release). Past it, released unless its workflow runs: a worker of the previous
        // release takes such a request up without marking it, and its run settles it.
        if (r.pickupBy && r.pickupBy >= new Date()) return this.metering.markChecked(r.requestId);
        if (!(await this.closed(agentRequestWorkflowId(r.requestId)))) return this.metering.markChecked(r.requestId);
        if (
          await this.metering.release({
            requestId: r.requestId,
            projectId: r.projectId,
            reason: 'reconciled',
            ...(r.pickupBy ? { untakenOnly: true } : {}),
          })
        ) {
          reservationsReleased += 1;
          creditsReleased += r.credits;
          this.logger.warn(
            `released ${r.credits} credits reserved by request ${r.requestId}, whose workflow ${r.pickupBy ? 'did not take it up by its pickup deadline' : 'closed without settling'}`,
          );
        }
      });
    }

    let sessionsFreed = 0;
    // The slots are what the limit counts: one held by a closed workflow is given back.
    const active = await this.sessions.slotsToCheck(this.db, before, BATCH);
    for (const s of active) {
      await this.each(`slot of session ${s.sessionId}`, async () => {
        if (!(await this.closed(sessionWorkflowId(s.sessionId)))) return;
        if (await this.db.transaction((tx) => this.sessions.reconciled(tx, s.sessionId, s.projectId))) {
          sessionsFreed += 1;
          this.logger.warn(`session ${s.sessionId} was active but its workflow had closed: marked ended`);
        }
      });
    }
    return {
      reservationsChecked: open.length,
      reservationsReleased,
      creditsReleased,
      sessionsChecked: active.length,
      sessionsFreed,
    };
  };

  private async each(what: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (e) {
      this.logger.warn(
        `could not reconcile the ${what} (the next pass tries again): ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

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
}
