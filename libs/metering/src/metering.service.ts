import type { DataSource, EntityManager } from 'typeorm';
import {
  EVENT_TYPES,
  TOPICS,
  USAGE_EVENT_TYPE,
  type AgentError,
  type AgentStatus,
  type StopRecord,
  type StopRecorded,
  type UsageEventData,
} from '#libs/contracts';
import { deterministicUuid, EventStore, RequestStream, SessionStream, toCloudEvent } from '#libs/events';
import { agentCapabilityUses, agentRequests, creditsCharged } from '#libs/observability';
import { creditsFor } from './pricing.js';

interface ProjectRow {
  credit_balance: number;
  requests_used: number;
  period_start: Date;
  created_at: Date;
}

interface LedgerRow {
  kind: 'reserve' | 'settle';
  credits: number;
  stop: number | null;
  balance_after: number | null;
}

export type Admission =
  | { ok: true; balance: number; requestsUsed: number }
  | { ok: false; error: AgentError; balance: number; requestsUsed: number; retryAfterSeconds?: number };

/** What the api admits a request with (admitRequest): the money, the caps and the pickup deadline. */
export interface AdmissionRequest {
  readonly requestId: string;
  readonly projectId: string;
  /** The most the run can cost: reserved until its first stop. */
  readonly credits: number;
  readonly monthlyQuota: number;
  /** The workflow must take the request up by then, or its reservation is released. */
  readonly pickupBy: Date;
  /** UTF-8 bytes of input the request stores (files, a long message). */
  readonly inputBytes: number;
  readonly caps: { readonly runsInFlight: number; readonly inputBytesPerDay: number };
}

/** A reservation that has no settlement yet (the reconciler's work list). */
export interface OpenReservation {
  readonly requestId: string;
  readonly projectId: string;
  readonly credits: number;
  readonly reservedAt: Date;
  /** Set for a request the api admitted and no workflow has taken up yet: its pickup deadline. */
  readonly pickupBy?: Date;
}

/** The refusal of a request first taken up after the api stopped waiting for it (and told its caller). */
export const PICKUP_MISSED: AgentError = {
  code: 'compute_unavailable',
  message: 'No agent worker took the request up in time. Nothing was run or charged.',
};

const quotaExceeded = (monthlyQuota: number): AgentError => ({
  code: 'quota_exceeded',
  message: `The monthly request quota of ${monthlyQuota} requests is used up; it resets at the start of the next billing period.`,
});
const insufficientCredits = (credits: number, balance: number): AgentError => ({
  code: 'insufficient_credits',
  message: `This request can cost up to ${credits} credits and the project has ${balance}. Nothing was run.`,
});

/** The cap on input bytes a day (stored input: request files, long messages, large tool outputs). */
const inputTooLarge = (what: string, bytes: number, cap: number): AgentError => ({
  code: 'payload_too_large',
  message: `${what} come to ${bytes} bytes, more than the ${cap} bytes a day the project's plan allows. Nothing was stored or run.`,
});
const inputBytesPerDay = (whose: string, cap: number): AgentError => ({
  code: 'rate_limited',
  message: `The project's stored input (files and tool outputs) of the last 24 hours and ${whose} would pass the ${cap} bytes a day its plan allows. Nothing was stored or run; retry after the number of seconds in Retry-After.`,
});

/** Stops at which the run answered: the charge is 1 + the surcharges of what it used. */
const CHARGEABLE: ReadonlySet<AgentStatus> = new Set(['completed', 'requires_tool_outputs']);

/** Whether a first stop is charged: one at which the run answered, or a cancelled run whose model
 * answered at least once (every model step counts `chat` as used); a failure never is. */
const chargeable = (stop: StopRecord): boolean =>
  CHARGEABLE.has(stop.status) || (stop.status === 'cancelled' && stop.capabilitiesUsed.includes('chat'));

/**
 * The money path, in one place: admission (quota and credit reservation), settlement with the stop
 * event and the usage event in one transaction, releases and reconciliation. Every ledger row and every message on mas.usage.v1 is written here and nowhere else. Each step locks
 * the project row first, so steps of one project are serialised and the balance never races.
 */
export class MeteringService {
  constructor(
    private readonly db: DataSource,
    private readonly events: EventStore,
    /** The request stream's appender (over the same EventStore): accepted and stop events. */
    private readonly requests: RequestStream = new RequestStream(events, new SessionStream(events)),
  ) {}

  /** Counts a request against the monthly quota and reserves `credits`, atomically and once per
   * request id (a retried activity finds its reservation and changes nothing). Past `acceptBy` (the
   * api's pickup deadline) a request not admitted yet is refused without a reservation; one admitted
   * already goes on, however late its step is re-run. */
  async admit(input: {
    requestId: string;
    projectId: string;
    credits: number;
    monthlyQuota: number;
    acceptBy?: number;
  }): Promise<Admission> {
    return this.db.transaction(async (tx) => {
      const { project, ledger } = await this.lockProject(tx, input.projectId, input.requestId);
      if (ledger.reserve) return { ok: true, balance: project.credit_balance, requestsUsed: project.requests_used };
      if (input.acceptBy !== undefined && Date.now() > input.acceptBy) {
        return {
          ok: false,
          error: PICKUP_MISSED,
          balance: project.credit_balance,
          requestsUsed: project.requests_used,
        };
      }
      if (project.requests_used >= input.monthlyQuota) {
        return {
          ok: false,
          error: quotaExceeded(input.monthlyQuota),
          balance: project.credit_balance,
          requestsUsed: project.requests_used,
        };
      }
      if (project.credit_balance < input.credits) {
        return {
          ok: false,
          error: insufficientCredits(input.credits, project.credit_balance),
          balance: project.credit_balance,
          requestsUsed: project.requests_used,
        };
      }
      // The reservation and its ledger row in one statement.
      const [row] = (await tx.query(
        `with reserved as (update projects set credit_balance = credit_balance - $3, requests_used = requests_used + 1 where id = $2 returning credit_balance, requests_used)
         insert into credit_ledger (request_id, kind, project_id, credits, balance_after, reason)
         select $1, 'reserve', $2, $3, credit_balance, 'admission' from reserved
         returning balance_after as credit_balance, (select requests_used from reserved)`,
        [input.requestId, input.projectId, input.credits],
      )) as [{ credit_balance: number; requests_used: number }];
      const balance = row.credit_balance;
      await this.requests.accepted(tx, input.projectId, {
        requestId: input.requestId,
        creditsReserved: input.credits,
        requestsUsed: row.requests_used,
        creditsRemaining: balance,
      });
      return { ok: true, balance, requestsUsed: row.requests_used };
    });
  }

  /**
   * Admission in the api (DESIGN.md section 10), before any workflow starts, in one round trip (the
   * admit_request function, migration 1763700000056): the project row locked, its billing period
   * rolled over by PostgreSQL's clock and only forward, then the quota, the credits and the caps (runs in flight: the project's open
   * reservations; input bytes admitted in the last 24 hours) decided, and the reservation made with
   * its pickup deadline. Idempotent by request id: a retry of an admitted request is admitted
   * without a second reservation (and its pickup deadline moves to the later one). A refusal
   * reserves and records nothing. The request's accepted event is written when its workflow takes it
   * up (pickUp).
   */
  async admitRequest(input: AdmissionRequest): Promise<Admission> {
    const [row] = (await this.db.query(
      `select outcome, credit_balance, requests_used, retry_after from admit_request($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        input.projectId,
        input.requestId,
        input.credits,
        input.monthlyQuota,
        // The previous release's period argument: PostgreSQL's clock decides now (issue 44).
        null,
        input.pickupBy,
        input.inputBytes,
        input.caps.runsInFlight,
        input.caps.inputBytesPerDay,
      ],
    )) as [{ outcome: string; credit_balance: number; requests_used: number; retry_after: number }];
    const figures = { balance: row.credit_balance, requestsUsed: row.requests_used };
    const refused = (error: AgentError, retryAfterSeconds?: number): Admission => ({
      ok: false,
      error,
      ...figures,
      ...(retryAfterSeconds ? { retryAfterSeconds } : {}),
    });
    switch (row.outcome) {
      case 'admitted':
        return { ok: true, ...figures };
      case 'quota_exceeded':
        return refused(quotaExceeded(input.monthlyQuota));
      case 'insufficient_credits':
        return refused(insufficientCredits(input.credits, row.credit_balance));
      case 'runs_in_flight':
        return refused(
          {
            code: 'rate_limited',
            message: `The project has ${input.caps.runsInFlight} runs in flight (agent requests and session messages not yet at their first stop), its plan's cap. Nothing was run; retry once one has answered.`,
          },
          row.retry_after,
        );
      case 'input_too_large':
        return refused(inputTooLarge("The request's input files", input.inputBytes, input.caps.inputBytesPerDay));
      case 'input_bytes_per_day':
        return refused(inputBytesPerDay("this request's", input.caps.inputBytesPerDay), row.retry_after);
      default:
        throw new Error(`admit_request answered an unknown outcome "${row.outcome}"`);
    }
  }

  /**
   * The workflow takes up a request the api admitted (admitRequest), once: in one transaction its
   * reservation is marked taken up and its accepted event written. Past the reservation's pickup
   * deadline, or the workflow's own (`acceptBy`, the deadline of the attempt that started it: a
   * retry that joined the workflow moved the reservation's later; each caller was told
   * compute_unavailable at its own), or once the reconciler released it, a
   * request not taken up yet is refused without running (the reservation released here if it is
   * still open); one taken up already goes on, however late its step is re-run.
   */
  async pickUp(input: { requestId: string; projectId: string; acceptBy?: number }): Promise<Admission> {
    return this.db.transaction(async (tx) => {
      const { project, ledger } = await this.lockProject(tx, input.projectId, input.requestId);
      const figures = { balance: project.credit_balance, requestsUsed: project.requests_used };
      // The reservation, marked taken up in the same statement when it is open and not past its
      // deadline (PostgreSQL's clock decides, under the project's lock the reconciler takes too).
      const [row] = (await tx.query(
        `with r as (select pickup_by, picked_up_at, requests_used, balance_after, credits, settled_at from credit_ledger where request_id = $1 and kind = 'reserve'),
              taken as (update credit_ledger l set picked_up_at = now() from r
                         where l.request_id = $1 and l.kind = 'reserve' and r.picked_up_at is null and r.settled_at is null and (r.pickup_by is null or r.pickup_by >= now())
                           and ($2::timestamptz is null or $2 >= now())
                         returning 1)
         select r.picked_up_at, r.requests_used, r.balance_after, r.credits, exists (select 1 from taken) as taken from r`,
        [input.requestId, input.acceptBy === undefined ? null : new Date(input.acceptBy)],
      )) as {
        picked_up_at: Date | null;
        requests_used: number | null;
        balance_after: number;
        credits: number;
        taken: boolean;
      }[];
      if (!row) return { ok: false, error: PICKUP_MISSED, ...figures };
      const admitted = {
        ok: true as const,
        balance: row.balance_after,
        requestsUsed: row.requests_used ?? project.requests_used,
      };
      // Taken up already (a re-run of the step, also after its first stop settled): it goes on.
      if (row.picked_up_at) return admitted;
      if (!row.taken) {
        // Released before any workflow took it up (the reconciler), or past its deadline: released here.
        if (ledger.settle) return { ok: false, error: PICKUP_MISSED, ...figures };
        const balance = await this.settle(tx, input.requestId, input.projectId, row.credits, 0, {
          stop: null,
          reason: 'release',
        });
        await this.appendCharge(tx, input.requestId, input.projectId, row.credits, 0, balance);
        return { ok: false, error: PICKUP_MISSED, balance, requestsUsed: project.requests_used };
      }
      await this.requests.accepted(tx, input.projectId, {
        requestId: input.requestId,
        creditsReserved: row.credits,
        requestsUsed: admitted.requestsUsed,
        creditsRemaining: admitted.balance,
      });
      return admitted;
    });
  }

  /**
   * Counts the bytes a tool-outputs submission stores (its outputs kept as blobs) against the
   * project's cap on input bytes a day, the cap admission counts a request's input files against,
   * in one statement under the project row's lock (count_tool_output_bytes, migration
   * 1763700000056): concurrent submissions cannot all pass. Refused like admission (413 for one
   * submission over the cap, 429 with Retry-After past it); counted, `id` names the count for
   * `releaseToolOutputBytes`. The bytes leave the count after 24 hours, as a request's do.
   */
  async countToolOutputBytes(input: {
    id: string;
    projectId: string;
    bytes: number;
    inputBytesPerDay: number;
  }): Promise<{ ok: true } | { ok: false; error: AgentError; retryAfterSeconds?: number }> {
    const [row] = (await this.db.query(`select outcome, retry_after from count_tool_output_bytes($1, $2, $3, $4)`, [
      input.projectId,
      input.id,
      input.bytes,
      input.inputBytesPerDay,
    ])) as [{ outcome: string; retry_after: number }];
    switch (row.outcome) {
      case 'counted':
        return { ok: true };
      case 'input_too_large':
        return { ok: false, error: inputTooLarge('The tool outputs', input.bytes, input.inputBytesPerDay) };
      case 'input_bytes_per_day':
        return {
          ok: false,
          error: inputBytesPerDay("these tool outputs'", input.inputBytesPerDay),
          retryAfterSeconds: row.retry_after,
        };
      default:
        throw new Error(`count_tool_output_bytes answered an unknown outcome "${row.outcome}"`);
    }
  }

  /** Gives back the bytes of a tool-outputs submission that was refused (its blobs deleted), as
   * `unadmit` gives back a refused session message's. */
  async releaseToolOutputBytes(input: { id: string; projectId: string }): Promise<void> {
    await this.db.query(`delete from tool_output_bytes where id = $1 and project_id = $2`, [input.id, input.projectId]);
  }

  /**
   * Undoes the admission of a request that certainly never started (a session refused its message):
   * its reservation row goes, its credits and its count against the quota come back, and nothing
   * is left that names it (admission writes no event). A reservation taken up or settled is left as
   * it is. True when this call undid it.
   */
  async unadmit(input: { requestId: string; projectId: string }): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `with locked as (select period_start from projects where id = $2 for update),
            gone as (delete from credit_ledger l using locked
                      where l.request_id = $1 and l.kind = 'reserve' and l.project_id = $2 and l.picked_up_at is null and l.settled_at is null
                      returning l.credits, l.created_at >= locked.period_start as this_period)
       update projects p set credit_balance = p.credit_balance + gone.credits, requests_used = case when gone.this_period then greatest(p.requests_used - 1, 0) else p.requests_used end
         from gone where p.id = $2 returning 1`,
      [input.requestId, input.projectId],
    );
    return rows.length > 0;
  }

  /**
   * Records a stop of a request, once. In one transaction: the stop is claimed (its view row); the
   * first stop that finds the reservation open settles it (the charge: 1 + the surcharges of the
   * capabilities used, at most what was reserved; 0 when the run failed), the stop event is
   * appended, and the usage event carrying the settled credits and the leg's tokens is queued for
   * mas.usage.v1. A stop recorded already (a re-run of the step, whatever outcome it brings: a
   * workflow task retried after this committed) records nothing and answers the stop as first
   * recorded, which the caller adopts (DESIGN.md section 10, "a stop is recorded once").
   */
  async recordStop(input: StopRecord): Promise<StopRecorded> {
    const { answer, recorded, settled } = await this.db.transaction(async (tx) => {
      const { project, ledger } = await this.lockProject(tx, input.projectId, input.requestId);
      if (!(await this.requests.claimStop(tx, input))) {
        const first = await this.requests.recordedStop(tx, input.requestId, input.stop);
        if (!first) throw new Error(`stop ${input.stop} of request ${input.requestId} has a view but no stop event`);
        const adopted: StopRecorded = {
          creditsThisRequest: first.creditsCharged,
          creditsRemaining: first.creditsRemaining ?? project.credit_balance,
          recorded: {
            status: first.status as StopRecord['status'],
            capabilitiesUsed: first.capabilitiesUsed,
            tokensUsed: first.inputTokens + first.outputTokens,
            view: first.view,
          },
        };
        return { answer: adopted, recorded: false, settled: 0 };
      }
      let charged = 0;
      let balance = project.credit_balance;
      let settlement: { charged: number; reserved: number } | undefined;
      if (ledger.reserve && !ledger.settle) {
        charged = chargeable(input)
          ? Math.min(creditsFor(input.capabilitiesUsed, input.surcharges), ledger.reserve.credits)
          : 0;
        balance = await this.settle(tx, input.requestId, input.projectId, ledger.reserve.credits, charged, {
          stop: input.stop,
          reason: 'stop',
        });
        settlement = { charged, reserved: ledger.reserve.credits };
      }

      // The stop event, through the request stream's one appender, in this transaction.
      const event = await this.requests.stop(tx, input, charged, balance);
      if (settlement)
        await this.appendCharge(tx, input.requestId, input.projectId, settlement.reserved, settlement.charged, balance);
      if (charged > 0 || input.inputTokens + input.outputTokens > 0) {
        const usage: UsageEventData = {
          project_id: input.projectId,
          request_id: input.requestId,
          session_id: input.sessionId ?? null,
          kind: input.stop === 1 ? 'initial' : 'continuation',
          status: input.status,
          credits: charged,
          input_tokens: input.inputTokens,
          output_tokens: input.outputTokens,
          capabilities: input.capabilitiesUsed,
          plan: input.plan,
          billing_period_start: project.period_start.toISOString(),
          occurred_at: event.recordedAt,
        };
        const usageId = deterministicUuid(input.requestId, input.stop, USAGE_EVENT_TYPE);
        await this.events.enqueue(
          tx,
          TOPICS.usage,
          input.projectId,
          usageId,
          toCloudEvent({
            id: usageId,
            type: USAGE_EVENT_TYPE,
            subject: `agent-request-${input.requestId}`,
            time: new Date(event.recordedAt),
            data: usage,
            projectId: input.projectId,
            correlationId: input.requestId,
            causationId: event.eventId,
          }),
        );
      }
      return {
        answer: { creditsThisRequest: charged, creditsRemaining: balance },
        recorded: true,
        settled: settlement?.charged ?? 0,
      };
    });
    // Counted once the transaction has committed, and only by the recording that claimed the stop.
    if (recorded) countStop(input, settled);
    return answer;
  }

  /** Gives a request's whole reservation back when it ends without a settled stop; a settled or
   * never-admitted request is left as it is. True when this call released it. */
  async release(input: {
    requestId: string;
    projectId: string;
    reason: 'release' | 'reconciled';
    untakenOnly?: boolean;
  }): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const { ledger } = await this.lockProject(tx, input.projectId, input.requestId);
      if (!ledger.reserve || ledger.settle) return false;
      if (input.untakenOnly) {
        // A reservation the api made: released only when no workflow took it up by its deadline
        // (pickUp refuses from then on), checked under the project's lock that pickUp takes too and
        // by the same clock (PostgreSQL's).
        const [row] = (await tx.query(
          `select 1 from credit_ledger where request_id = $1 and kind = 'reserve' and picked_up_at is null and pickup_by < now()`,
          [input.requestId],
        )) as unknown[];
        if (!row) return false;
      }
      const balance = await this.settle(tx, input.requestId, input.projectId, ledger.reserve.credits, 0, {
        stop: null,
        reason: input.reason,
      });
      await this.appendCharge(tx, input.requestId, input.projectId, ledger.reserve.credits, 0, balance);
      if (input.reason === 'reconciled') {
        await this.events.append(tx, `project-${input.projectId}`, 'any', [
          {
            eventId: deterministicUuid(input.requestId, EVENT_TYPES.ledgerReconciled),
            type: EVENT_TYPES.ledgerReconciled,
            data: { requestId: input.requestId, released: ledger.reserve.credits, balance },
            metadata: { projectId: input.projectId, correlationId: input.requestId, causationId: input.requestId },
          },
        ]);
      }
      return true;
    });
  }

  /** Reservations without a settlement made before `before`: never checked first, then the ones
   * checked longest ago (the reconciler's list; `markChecked` moves a running one to the back).
   * Read from the partial index of open reservations (credit_ledger_open_idx, in this order; a
   * settlement sets `settled_at` on the reservation by trigger, migration 1763700000030): its cost
   * follows the open reservations, not the ledger. */
  async openReservations(before: Date, limit: number): Promise<OpenReservation[]> {
    const rows: {
      request_id: string;
      project_id: string;
      credits: number;
      created_at: Date;
      pickup_by: Date | null;
      picked_up_at: Date | null;
    }[] = await this.db.query(
      `select r.request_id, r.project_id, r.credits, r.created_at, r.pickup_by, r.picked_up_at from credit_ledger r
        where r.kind = 'reserve' and r.settled_at is null and r.created_at < $1
          and not exists (select 1 from credit_ledger s where s.request_id = r.request_id and s.kind = 'settle')
        order by r.checked_at nulls first, r.created_at limit $2`,
      [before, limit],
    );
    return rows.map((r) => ({
      requestId: r.request_id,
      projectId: r.project_id,
      credits: r.credits,
      reservedAt: r.created_at,
      ...(r.pickup_by && !r.picked_up_at ? { pickupBy: r.pickup_by } : {}),
    }));
  }

  /** Whether the request was admitted: its reservation (or its settlement) is in the ledger. */
  async isAdmitted(requestId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(`select 1 from credit_ledger where request_id = $1 limit 1`, [
      requestId,
    ]);
    return rows.length > 0;
  }

  /** Notes that the reconciler found this reservation's workflow still running. */
  async markChecked(requestId: string): Promise<void> {
    await this.db.query(`update credit_ledger set checked_at = now() where request_id = $1 and kind = 'reserve'`, [
      requestId,
    ]);
  }

  /** The settlement row and the refund of what was reserved beyond the charge; the new balance. */
  private async settle(
    tx: EntityManager,
    requestId: string,
    projectId: string,
    reserved: number,
    charged: number,
    how: { stop: number | null; reason: 'stop' | 'release' | 'reconciled' },
  ): Promise<number> {
    const [row] = (await tx.query(
      `with refunded as (update projects set credit_balance = credit_balance + $4 where id = $2 returning credit_balance)
       insert into credit_ledger (request_id, kind, project_id, credits, stop, balance_after, reason)
       select $1, 'settle', $2, $3, $5, credit_balance, $6 from refunded returning balance_after`,
      [requestId, projectId, charged, reserved - charged, how.stop, how.reason],
    )) as [{ balance_after: number }];
    return row.balance_after;
  }

  private async appendCharge(
    tx: EntityManager,
    requestId: string,
    projectId: string,
    reserved: number,
    charged: number,
    balance: number,
  ): Promise<void> {
    // The project row lock taken first serialises writers of the project stream.
    await this.events.append(tx, `project-${projectId}`, 'any', [
      {
        eventId: deterministicUuid(requestId, EVENT_TYPES.projectCreditsCharged),
        type: EVENT_TYPES.projectCreditsCharged,
        data: { requestId, reserved, charged, balance },
        metadata: { projectId, correlationId: requestId, causationId: requestId },
      },
    ]);
  }

  /** Locks the project row, rolls its billing period over if PostgreSQL's clock is past it (only
   * forward: migration 1763700000056), and reads the request's ledger rows, in one round trip. */
  private async lockProject(
    tx: EntityManager,
    projectId: string,
    requestId: string,
  ): Promise<{ project: ProjectRow; ledger: { reserve?: LedgerRow; settle?: LedgerRow } }> {
    // One round trip (the lock_project function, migration 1763700000019): the row lock, then the
    // ledger read by a statement of its own, which sees what the lock's previous holder committed.
    const rows: (ProjectRow & { ledger: LedgerRow[] | null })[] = await tx.query(
      `select credit_balance, requests_used, period_start, ledger, created_at from lock_project($1, $2)`,
      [projectId, requestId],
    );
    const project = rows[0];
    if (!project) throw new Error(`project ${projectId} does not exist`);
    const ledger = project.ledger ?? [];
    return {
      project,
      ledger: { reserve: ledger.find((r) => r.kind === 'reserve'), settle: ledger.find((r) => r.kind === 'settle') },
    };
  }
}

/** The metrics of a recorded stop: its outcome, the capabilities it used, the credits it settled. */
function countStop(input: StopRecord, settled: number): void {
  agentRequests.inc({ outcome: input.status });
  for (const capability of input.capabilitiesUsed.length > 0 ? input.capabilitiesUsed : ['none'])
    agentCapabilityUses.inc({ outcome: input.status, capability });
  if (settled > 0) creditsCharged.inc({ plan: input.plan }, settled);
}
