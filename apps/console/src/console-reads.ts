import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { agentRequestStreamId, type AgentRequestStopView, type AgentStatus, type FileRef } from '#libs/contracts';

/** A row of the request-log read model, as the console lists it. */
export interface RequestSummary {
  readonly id: string;
  readonly sessionId: string | null;
  readonly status: AgentStatus;
  readonly capabilities: readonly string[];
  readonly credits: number;
  readonly tokens: number;
  readonly errorCode: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** Where the page after this row starts (`before` of the next page): its exact time and id. */
  readonly cursor: string;
}

/** A place in the requests list, newest first: the rows after (created_at, id) in that order. */
export interface RequestCursor {
  /** created_at to the microsecond, as PostgreSQL keeps it (a Date would round it to the millisecond). */
  readonly at: string;
  readonly id: string;
}

export interface RequestFilters {
  readonly status?: string;
  readonly capability?: string;
  /** Only requests after this one in the list (the next page). */
  readonly before?: RequestCursor;
}

const CURSOR =
  /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** A `before` query parameter as a cursor, or undefined (absent or malformed: the first page). */
export function parseRequestCursor(raw: string | undefined): RequestCursor | undefined {
  const m = raw ? CURSOR.exec(raw) : null;
  return m ? { at: m[1]!, id: m[2]! } : undefined;
}

export interface DayUsage {
  readonly day: string;
  readonly requests: number;
  readonly credits: number;
}

export interface TimelineEvent {
  readonly version: number;
  readonly type: string;
  readonly data: Record<string, unknown>;
  readonly recordedAt: Date;
}

export interface SessionSummary {
  readonly id: string;
  readonly status: string;
  readonly messages: number;
  readonly createdAt: Date;
  readonly lastActivityAt: Date;
  readonly expiresAt: Date;
}

export const PAGE_SIZE = 50;

type RequestRow = {
  request_id: string;
  session_id: string | null;
  status: AgentStatus;
  capabilities: string[];
  credits: number;
  tokens: string;
  error_code: string | null;
  created_at: Date;
  updated_at: Date;
  created_key: string;
};

/** Every column of request_log, and created_at to the microsecond in UTC (the cursor's time). */
const REQUEST_COLUMNS = `*, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_key`;

const summary = (r: RequestRow): RequestSummary => ({
  id: r.request_id,
  sessionId: r.session_id,
  status: r.status,
  capabilities: r.capabilities,
  credits: r.credits,
  tokens: Number(r.tokens),
  errorCode: r.error_code,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  cursor: `${r.created_key}_${r.request_id}`,
});

/**
 * What the console shows, read from the read models the projector builds (request_log,
 * usage_totals, sessions), the content of stops (request_views) and a request's own event stream.
 * Every query names the project: the pages pass the project the signed-in member belongs to.
 */
@Injectable()
export class ConsoleReads {
  constructor(private readonly db: DataSource) {}

  async usageThisPeriod(
    projectId: string,
    periodStart: Date,
  ): Promise<{ requests: number; credits: number; tokens: number }> {
    const [row] = (await this.db.query(
      `select requests, credits, input_tokens + output_tokens as tokens from usage_totals where project_id = $1 and period_start = $2`,
      [projectId, periodStart],
    )) as { requests: number; credits: number; tokens: string }[];
    return { requests: row?.requests ?? 0, credits: row?.credits ?? 0, tokens: Number(row?.tokens ?? 0) };
  }

  /** Requests and credits per UTC day over the last `days` days, every day present. */
  async perDay(projectId: string, days: number): Promise<DayUsage[]> {
    const rows = (await this.db.query(
      `select to_char(d.day, 'YYYY-MM-DD') as day, count(r.request_id)::int as requests, coalesce(sum(r.credits), 0)::int as credits
         from generate_series(date_trunc('day', now() at time zone 'utc') - ($2::int - 1) * interval '1 day', date_trunc('day', now() at time zone 'utc'), interval '1 day') d(day)
         left join request_log r on r.project_id = $1 and date_trunc('day', r.created_at at time zone 'utc') = d.day
        group by d.day order by d.day`,
      [projectId, days],
    )) as DayUsage[];
    return rows;
  }

  async recentFailures(projectId: string, limit = 5): Promise<RequestSummary[]> {
    const rows = (await this.db.query(
      `select ${REQUEST_COLUMNS} from request_log where project_id = $1 and status in ('failed', 'expired') order by updated_at desc limit $2`,
      [projectId, limit],
    )) as RequestRow[];
    return rows.map(summary);
  }

  async requests(projectId: string, filters: RequestFilters): Promise<RequestSummary[]> {
    const rows = (await this.db.query(
      `select ${REQUEST_COLUMNS} from request_log
        where project_id = $1 and ($2::text is null or status = $2) and ($3::text is null or $3 = any(capabilities))
          and ($4::timestamptz is null or (created_at, request_id) < ($4::timestamptz, $5::uuid))
        order by created_at desc, request_id desc limit $6`,
      [
        projectId,
        filters.status ?? null,
        filters.capability ?? null,
        filters.before?.at ?? null,
        filters.before?.id ?? null,
        PAGE_SIZE,
      ],
    )) as RequestRow[];
    return rows.map(summary);
  }

  /** One request of the project, its events in order and the content of its stops; null when it is not the project's. */
  /** One request: its figures, its events, the content of its stops, and its generated files (the
   * last stop's, or, as GET /v1/agent/{id} reads them, the request's in `generated_files`). */
  async request(
    projectId: string,
    requestId: string,
  ): Promise<{
    request: RequestSummary;
    events: TimelineEvent[];
    stops: Map<number, AgentRequestStopView>;
    files: readonly FileRef[];
  } | null> {
    const [row] = (await this.db.query(
      `select ${REQUEST_COLUMNS} from request_log where request_id = $1 and project_id = $2`,
      [requestId, projectId],
    )) as RequestRow[];
    if (!row) return null;
    const events = (await this.db.query(
      `select version, type, data, recorded_at from events where stream_id = $1 order by version`,
      [agentRequestStreamId(requestId)],
    )) as { version: number; type: string; data: Record<string, unknown>; recorded_at: Date }[];
    const views = (await this.db.query(
      `select stop, view from request_views where request_id = $1 and project_id = $2 order by stop`,
      [requestId, projectId],
    )) as { stop: number; view: AgentRequestStopView }[];
    const last = views.at(-1)?.view;
    const files: readonly FileRef[] =
      last?.files ??
      (await this.db.query(
        `select id, name from generated_files where request_id = $1 and project_id = $2 order by created_at, id`,
        [requestId, projectId],
      ));
    return {
      request: summary(row),
      events: events.map((e) => ({ version: e.version, type: e.type, data: e.data, recordedAt: e.recorded_at })),
      stops: new Map(views.map((v) => [v.stop, v.view])),
      files,
    };
  }

  async sessions(projectId: string): Promise<SessionSummary[]> {
    const rows = (await this.db.query(
      `select id, status, message_count, created_at, last_activity_at, expires_at from sessions where project_id = $1 order by created_at desc, id desc limit $2`,
      [projectId, PAGE_SIZE],
    )) as {
      id: string;
      status: string;
      message_count: number;
      created_at: Date;
      last_activity_at: Date;
      expires_at: Date;
    }[];
    return rows.map((r) => ({
      id: r.id,
      status: r.status,
      messages: r.message_count,
      createdAt: r.created_at,
      lastActivityAt: r.last_activity_at,
      expiresAt: r.expires_at,
    }));
  }

  async session(projectId: string, sessionId: string): Promise<SessionSummary | null> {
    const rows = (await this.db.query(
      `select id, status, message_count, created_at, last_activity_at, expires_at from sessions where id = $1 and project_id = $2`,
      [sessionId, projectId],
    )) as {
      id: string;
      status: string;
      message_count: number;
      created_at: Date;
      last_activity_at: Date;
      expires_at: Date;
    }[];
    const r = rows[0];
    return r
      ? {
          id: r.id,
          status: r.status,
          messages: r.message_count,
          createdAt: r.created_at,
          lastActivityAt: r.last_activity_at,
          expiresAt: r.expires_at,
        }
      : null;
  }

  /** The requests of one session (its messages' runs), newest first. */
  async sessionRequests(projectId: string, sessionId: string): Promise<RequestSummary[]> {
    const rows = (await this.db.query(
      `select ${REQUEST_COLUMNS} from request_log where project_id = $1 and session_id = $2 order by created_at desc, request_id limit $3`,
      [projectId, sessionId, PAGE_SIZE],
    )) as RequestRow[];
    return rows.map(summary);
  }
}
