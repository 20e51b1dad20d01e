import type { DataSource, EntityManager } from 'typeorm';
import { EVENT_TYPES, type AgentError } from '#libs/contracts';
import { deterministicUuid, EventStore } from '#libs/events';
import { currentPeriod } from './billing-period.js';

/** Requests per sliding minute per project (contract section 8). */
export const RATE_LIMIT_PER_MINUTE = 60;

interface ProjectRow {
  credit_balance: number;
  requests_used: number;
  period_start: Date;
}

export type Admission =
  | { ok: true; balance: number; requestsUsed: number }
  | { ok: false; error: AgentError; balance: number; requestsUsed: number };

/** Quota, credits and the rate limit, kept in PostgreSQL so every api replica and worker agree. */
export class MeteringService {
  private readonly events = new EventStore();

  constructor(private readonly db: DataSource) {}

  /** Counts a request against the monthly quota and reserves `credits`, atomically and once per
   * request id (a retried activity finds its reservation and changes nothing). */
  async admit(input: { requestId: string; projectId: string; credits: number; monthlyQuota: number }): Promise<Admission> {
    return this.db.transaction(async (tx) => {
      const project = await this.lockProject(tx, input.projectId);
      const already: unknown[] = await tx.query(`select 1 from credit_ledger where request_id = $1 and kind = 'reserve'`, [input.requestId]);
      if (already.length) return { ok: true, balance: project.credit_balance, requestsUsed: project.requests_used };
      if (project.requests_used >= input.monthlyQuota) {
        return {
          ok: false,
          error: { code: 'quota_exceeded', message: `The monthly request quota of ${input.monthlyQuota} requests is used up; it resets at the start of the next billing period.` },
          balance: project.credit_balance,
          requestsUsed: project.requests_used,
        };
      }
      if (project.credit_balance < input.credits) {
        return {
          ok: false,
          error: { code: 'insufficient_credits', message: `This request can cost up to ${input.credits} credits and the project has ${project.credit_balance}. Nothing was run.` },
          balance: project.credit_balance,
          requestsUsed: project.requests_used,
        };
      }
      const [row] = (await tx.query(
        `update projects set credit_balance = credit_balance - $2, requests_used = requests_used + 1 where id = $1 returning credit_balance, requests_used`,
        [input.projectId, input.credits],
      )) as [[ProjectRow], number];
      await tx.query(`insert into credit_ledger (request_id, kind, project_id, credits) values ($1, 'reserve', $2, $3)`, [input.requestId, input.projectId, input.credits]);
      await this.events.append(tx, `agent-request-${input.requestId}`, 0, [
        {
          eventId: deterministicUuid(input.requestId, EVENT_TYPES.agentRequestAccepted),
          type: EVENT_TYPES.agentRequestAccepted,
          data: { requestId: input.requestId, creditsReserved: input.credits, requestsUsed: row[0].requests_used },
          metadata: { projectId: input.projectId, correlationId: input.requestId, causationId: input.requestId },
        },
      ]);
      return { ok: true, balance: row[0].credit_balance, requestsUsed: row[0].requests_used };
    });
  }

  /** Settles a reservation to the actual charge, returning the difference; once per request id. */
  async settle(input: { requestId: string; projectId: string; reserved: number; charged: number }): Promise<{ balance: number; settledNow: boolean }> {
    return this.db.transaction(async (tx) => {
      const inserted: unknown[] = await tx.query(
        `insert into credit_ledger (request_id, kind, project_id, credits) values ($1, 'settle', $2, $3) on conflict do nothing returning 1`,
        [input.requestId, input.projectId, input.charged],
      );
      if (inserted.length === 0) {
        const [row] = (await tx.query(`select credit_balance from projects where id = $1`, [input.projectId])) as ProjectRow[];
        return { balance: row?.credit_balance ?? 0, settledNow: false };
      }
      const refund = Math.max(0, input.reserved - input.charged);
      const [rows] = (await tx.query(`update projects set credit_balance = credit_balance + $2 where id = $1 returning credit_balance`, [input.projectId, refund])) as [ProjectRow[], number];
      const balance = rows[0]?.credit_balance ?? 0;
      // The row lock taken by the update serialises writers of the project stream.
      await this.events.append(tx, `project-${input.projectId}`, 'any', [
        {
          eventId: deterministicUuid(input.requestId, EVENT_TYPES.projectCreditsCharged),
          type: EVENT_TYPES.projectCreditsCharged,
          data: { requestId: input.requestId, reserved: input.reserved, charged: input.charged, balance },
          metadata: { projectId: input.projectId, correlationId: input.requestId, causationId: input.requestId },
        },
      ]);
      return { balance, settledNow: true };
    });
  }

  /** Records one request against the project's sliding minute; true when it is within the limit.
   * An advisory lock per project makes the count exact across api replicas. */
  async hitRateLimit(projectId: string): Promise<{ allowed: boolean; retryAfterSeconds: number }> {
    return this.db.transaction(async (tx) => {
      await tx.query(`select pg_advisory_xact_lock(hashtextextended($1, 0))`, [projectId]);
      await tx.query(`delete from rate_limit_hits where project_id = $1 and at < clock_timestamp() - interval '60 seconds'`, [projectId]);
      const rows: { n: string; oldest: Date | null }[] = await tx.query(
        `select count(*) as n, min(at) as oldest from rate_limit_hits where project_id = $1`,
        [projectId],
      );
      const count = Number(rows[0]?.n ?? 0);
      await tx.query(`insert into rate_limit_hits (project_id) values ($1)`, [projectId]);
      if (count < RATE_LIMIT_PER_MINUTE) return { allowed: true, retryAfterSeconds: 0 };
      const oldest = rows[0]?.oldest ?? new Date();
      const retryAfterSeconds = Math.max(1, Math.ceil((oldest.getTime() + 60_000 - Date.now()) / 1000));
      return { allowed: false, retryAfterSeconds };
    });
  }

  /** The quota as the X-RateLimit-* headers report it, rolling the period over when it has ended. */
  async quotaStatus(projectId: string, monthlyQuota: number): Promise<{ limit: number; remaining: number; resetAt: Date }> {
    return this.db.transaction(async (tx) => {
      const project = await this.lockProject(tx, projectId);
      const { end } = currentPeriod(project.period_start, new Date());
      return { limit: monthlyQuota, remaining: Math.max(0, monthlyQuota - project.requests_used), resetAt: end };
    });
  }

  /** Locks the project row and rolls its billing period over if the period has ended. */
  private async lockProject(tx: EntityManager, projectId: string): Promise<ProjectRow> {
    const rows: ProjectRow[] = await tx.query(`select credit_balance, requests_used, period_start from projects where id = $1 for update`, [projectId]);
    const project = rows[0];
    if (!project) throw new Error(`project ${projectId} does not exist`);
    const { start } = currentPeriod(project.period_start, new Date());
    if (start.getTime() !== project.period_start.getTime()) {
      // A new period: the quota counter starts again.
      await tx.query(`update projects set requests_used = 0, period_start = $2 where id = $1`, [projectId, start]);
      project.requests_used = 0;
      project.period_start = start;
    }
    return project;
  }
}
