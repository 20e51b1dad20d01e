import type { Gauge } from 'prom-client';
import { counter, gauge, histogram } from './registry.js';

// Every metric of the service, named by Prometheus's conventions (`mas_` prefix, base units,
// `_total` counters); docs/operations.md lists them with their alerts. Labels stay bounded: routes
// are templates, never paths; no project, request or user ids.

/** The api's HTTP requests by route template and status; `_count` is the request count. */
export const httpRequestDuration = histogram({
  name: 'mas_http_request_duration_seconds',
  help: 'Time from an HTTP request arriving to its response finishing (a stream: its whole life), by method, route template and status code.',
  labelNames: ['method', 'route', 'status_code'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
});

/** Agent-request stops (each run's end: completed, requires_tool_outputs, failed, cancelled, expired). */
export const agentRequests = counter({
  name: 'mas_agent_requests_total',
  help: 'Agent-request runs by how they stopped (a request that pauses for tool outputs and then completes counts twice).',
  labelNames: ['outcome'] as const,
});

/** The capabilities each stopped run used (one increment per capability; `none` when it used none). */
export const agentCapabilityUses = counter({
  name: 'mas_agent_capability_uses_total',
  help: 'Capabilities used by agent-request runs, by outcome and capability (none: the run stopped before calling the model).',
  labelNames: ['outcome', 'capability'] as const,
});

/** Credits settled (charged) at runs' stops. */
export const creditsCharged = counter({
  name: 'mas_credits_charged_total',
  help: 'Credits charged to projects at settled stops, by plan.',
  labelNames: ['plan'] as const,
});

/** Model calls by provider and outcome (ok, retryable_error, permanent_error). */
export const modelCallDuration = histogram({
  name: 'mas_model_call_duration_seconds',
  help: 'Duration of one call to a language model (one activity attempt), by provider and outcome.',
  labelNames: ['provider', 'outcome'] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
});

/** Tokens the models reported, by provider and type (input, output). */
export const modelTokens = counter({
  name: 'mas_model_tokens_total',
  help: 'Tokens reported by language models, by provider and type (input or output).',
  labelNames: ['provider', 'type'] as const,
});

/** Failed model calls by provider and reason (retryable: 429, 5xx, unreachable; permanent: anything else). */
export const modelCallErrors = counter({
  name: 'mas_model_call_errors_total',
  help: 'Failed calls to language models, by provider and reason (retryable or permanent).',
  labelNames: ['provider', 'reason'] as const,
});

/** Built-in tool runs by tool and outcome (ok, error). */
export const toolRuns = counter({
  name: 'mas_tool_runs_total',
  help: 'Built-in tool runs, by tool and outcome (ok, or error: the tool reported an error to the model).',
  labelNames: ['tool', 'outcome'] as const,
});

/** The outbox gauges, read from PostgreSQL at each scrape of a relay; created by the relay only,
 * so that no other app reports an outbox of 0. */
export function outboxGauges(): { pendingRows: Gauge; oldestPendingAge: Gauge } {
  return {
    pendingRows: gauge({ name: 'mas_outbox_pending_rows', help: 'Outbox rows not yet published to Kafka.' }),
    oldestPendingAge: gauge({
      name: 'mas_outbox_oldest_pending_age_seconds',
      help: 'Age of the oldest outbox row not yet published to Kafka (0 when none is pending).',
    }),
  };
}

/** Outbox rows the relay published, by topic. */
export const outboxPublished = counter({
  name: 'mas_outbox_published_total',
  help: 'Outbox rows published to Kafka by this relay, by topic.',
  labelNames: ['topic'] as const,
});

/** How far each projection's consumer group is behind its topic (read at each scrape of the projector). */
export const projectorLag = gauge({
  name: 'mas_projector_consumer_lag_messages',
  help: 'Messages on the topic that the projection consumer group has not committed yet, summed over partitions.',
  labelNames: ['group', 'topic'] as const,
});

/** Events the projector handled, by projection and result (applied, duplicate, other). */
export const projectorEvents = counter({
  name: 'mas_projector_events_total',
  help: 'Events handled by the projector, by projection and result (applied; duplicate: applied before; other: of a stream or type the projection does not read).',
  labelNames: ['projection', 'result'] as const,
});

/** Runs the api found unable to make progress because their workflow task keeps failing on the
 * workers (non-determinism after a deploy, a bug in workflow code), by workflow type and Temporal's
 * cause; counted each time the api reports one (a 502 after waiting on the run, or a GET). */
export const workflowTasksFailing = counter({
  name: 'mas_workflow_task_failing_total',
  help: 'Reports of a run whose workflow task keeps failing on the workers (a 502 that waited on it, or a GET of it), by workflow type and WorkflowTaskFailedCause.',
  labelNames: ['workflow_type', 'cause'] as const,
});
