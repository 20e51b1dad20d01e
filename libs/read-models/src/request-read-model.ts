import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import {
  agentRequestStreamId,
  EVENT_TYPES,
  type AgentRequestStopView,
  type AgentStop,
  type FileRef,
} from '#libs/contracts';
import { pastRetention, requestStateFromRow, RequestStream, type RequestRow, type RequestState } from '#libs/events';

/**
 * Agent requests as GET /v1/agent/{id} shows them: the figures from the request-log read model
 * (the request-log projection), caught up from the event store when the projector has not yet
 * applied the stream's latest events (so a stop the caller was answered with is readable at once),
 * and the stop's content from `request_views`, written with the stop event. Nothing here asks
 * Temporal, so a request stays readable after the namespace's retention has removed its workflow.
 */
@Injectable()
export class RequestReadModel {
  constructor(
    private readonly db: DataSource,
    private readonly requests: RequestStream,
  ) {}

  /** The request's latest state as an AgentStop; undefined when it has no events yet. */
  async find(requestId: string): Promise<AgentStop | undefined> {
    // The row, its stream's version, the view of the row's stop and the request's generated files:
    // one round trip when the read model is current.
    const rows: (Partial<RequestRow> & {
      stream_version: number | null;
      stop_view: AgentRequestStopView | null;
      generated: FileRef[];
    })[] = await this.db.query(
      `select st.version as stream_version, r.*, v.view as stop_view,
              (select coalesce(json_agg(json_build_object('id', f.id, 'name', f.name) order by f.created_at, f.id), '[]')
                 from generated_files f where f.request_id = k.id) as generated
         from (select $1::uuid as id) k left join request_log r on r.request_id = k.id
              left join streams st on st.stream_id = $2
              left join request_views v on v.request_id = k.id and v.stop = r.stop`,
      [requestId, agentRequestStreamId(requestId)],
    );
    const row = rows[0];
    const projected = row?.request_id ? requestStateFromRow(row as RequestRow) : undefined;
    const current = !row?.stream_version || (projected && projected.version >= row.stream_version);
    const state = current ? projected : await this.requests.state(this.db.manager, requestId, projected);
    if (!state || pastRetention(state.updatedAt)) return undefined;
    const files = row?.generated ?? [];
    return this.stopOf(state, current ? { view: row?.stop_view ?? undefined, files } : { files });
  }

  /**
   * The stop that followed tool outputs the request took (a tool-outputs-submitted event lists
   * exactly `toolCallIds`), when it is the request's latest stop: the answer of a submission whose
   * Update Temporal dropped when the workflow task that took it was retried (a cancellation that
   * arrived meanwhile, say) and the retried task ended the run before the Update came back.
   */
  async stopAfterToolOutputs(requestId: string, toolCallIds: readonly string[]): Promise<AgentStop | undefined> {
    const rows: { stop: number }[] = await this.db.query(
      `select (data->>'stop')::int as stop from events where stream_id = $1 and type = $2 and (data->'toolCallIds') @> $3::jsonb and $3::jsonb @> (data->'toolCallIds')`,
      [agentRequestStreamId(requestId), EVENT_TYPES.agentRequestToolOutputsSubmitted, JSON.stringify(toolCallIds)],
    );
    if (rows.length === 0) return undefined;
    const latest = await this.find(requestId);
    return latest && latest.status !== 'in_progress' && latest.stop === rows[0]!.stop + 1 ? latest : undefined;
  }

  /** The last stop at which the request paused for tool outputs (what a submission answers), or
   * undefined when it never paused or is not this project's. */
  async lastPause(requestId: string, projectId: string): Promise<number | undefined> {
    const rows: { stop: number | null }[] = await this.db.query(
      `select max(stop) as stop from request_views where request_id = $1 and project_id = $2 and jsonb_array_length(coalesce(view->'toolCalls', '[]'::jsonb)) > 0`,
      [requestId, projectId],
    );
    return rows[0]?.stop ?? undefined;
  }

  /** The request as it stood at `state` (its last stop's content included): what GET shows, and
   * what a webhook of that stop carries. `read`: what was read already with the state (the stop's
   * view, the request's generated files). */
  async stopOf(
    state: RequestState,
    read: { view?: AgentRequestStopView | undefined; files?: readonly FileRef[] } = {},
  ): Promise<AgentStop> {
    const requestId = state.requestId;
    const viewRead = 'view' in read;
    const views: { view: AgentRequestStopView }[] =
      !viewRead && state.stop > 0
        ? await this.db.query(`select view from request_views where request_id = $1 and stop = $2`, [
            requestId,
            state.stop,
          ])
        : [];
    const view = viewRead ? read.view : views[0]?.view;
    const paused = state.status === 'requires_tool_outputs';
    const files: readonly FileRef[] =
      view?.files ??
      read.files ??
      (await this.db.query(`select id, name from generated_files where request_id = $1 order by created_at, id`, [
        requestId,
      ]));
    return {
      requestId: state.requestId,
      projectId: state.projectId,
      status: state.status,
      stop: state.stop,
      ...((state.status === 'completed' || state.status === 'cancelled') && view?.message !== undefined
        ? { message: view.message }
        : {}),
      ...(paused && view?.toolCalls ? { toolCalls: view.toolCalls } : {}),
      capabilitiesUsed: state.capabilitiesUsed,
      files,
      tokensUsed: state.legTokens,
      creditsThisRequest: state.legCredits,
      creditsRemaining: state.creditsRemaining,
      requestsUsed: view?.requestsUsed ?? state.requestsUsed,
      ...(view?.error
        ? { error: view.error }
        : state.errorCode
          ? { error: { code: state.errorCode, message: 'The agent run failed.' } }
          : {}),
      ...(state.sessionId ? { sessionId: state.sessionId } : {}),
    } as AgentStop;
  }
}
