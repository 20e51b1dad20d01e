import { createRequire } from 'node:module';
import { createTraceState, trace, type Attributes, type HrTime, type SpanContext } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type {
  Next,
  WorkflowClientInterceptor,
  WorkflowStartInput,
  WorkflowStartUpdateWithStartInput,
} from '@temporalio/client';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInboundCallsInterceptor, InjectedSinks, WorkerOptions } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import { activeTracing, requestAttributes } from './tracing.js';

/** The workflow interceptors of Temporal's OpenTelemetry package (a module of the workflow bundle):
 * a span per workflow run, Update and activity scheduled, continuing the client's context. */
const WORKFLOW_INTERCEPTORS_MODULE = createRequire(import.meta.url).resolve(
  '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors',
);

const AGENT_REQUEST_PREFIX = 'agent-request-';

/** request_id and project_id from a workflow's id and its ProjectId search attribute. */
function workflowAttributes(workflowId: string, projectId: unknown): Attributes {
  return requestAttributes({
    requestId: workflowId.startsWith(AGENT_REQUEST_PREFIX) ? workflowId.slice(AGENT_REQUEST_PREFIX.length) : undefined,
    projectId: Array.isArray(projectId) ? projectId[0] : projectId,
  });
}

function startAttributes(options: WorkflowStartInput['options']): Attributes {
  const typed = options.typedSearchAttributes;
  const pairs = Array.isArray(typed) ? typed : (typed?.getAll() ?? []);
  const projectId = pairs.find((p) => p.key.name === 'ProjectId')?.value;
  return workflowAttributes(options.workflowId, projectId);
}

/** Sets request_id and project_id on the span that is active when a workflow is started (the
 * HTTP span outside Temporal's interceptor, the client's span inside it). */
const annotateStart: WorkflowClientInterceptor = {
  async start(input: WorkflowStartInput, next: Next<WorkflowClientInterceptor, 'start'>) {
    trace.getActiveSpan()?.setAttributes(startAttributes(input.options));
    return next(input);
  },
  async startUpdateWithStart(
    input: WorkflowStartUpdateWithStartInput,
    next: Next<WorkflowClientInterceptor, 'startUpdateWithStart'>,
  ) {
    trace.getActiveSpan()?.setAttributes(startAttributes(input.workflowStartOptions));
    return next(input);
  },
};

/** The Temporal client's tracing interceptors: a span per start, Update, signal and query, whose
 * context travels to the workflow in its headers. None with tracing off. */
export function temporalClientTracing(): WorkflowClientInterceptor[] {
  if (!activeTracing()) return [];
  return [annotateStart, new OpenTelemetryWorkflowClientInterceptor(), annotateStart];
}

/** Sets request_id and project_id (from the activity's one object argument) on its span. */
const annotateActivity: ActivityInboundCallsInterceptor = {
  async execute(input, next) {
    const arg = input.args[0];
    if (typeof arg === 'object' && arg !== null)
      trace.getActiveSpan()?.setAttributes(requestAttributes(arg as { requestId?: unknown; projectId?: unknown }));
    return next(input);
  },
};

/** A span as the workflow sandbox serialises it. The interceptors' package runs OpenTelemetry's
 * SDK 1.x inside the bundle (parentSpanId, instrumentationLibrary); the exporters of this process
 * are SDK 2.x (parentSpanContext, instrumentationScope). */
interface SandboxSpan {
  name: string;
  kind: ReadableSpan['kind'];
  spanContext: Omit<SpanContext, 'traceState'> & { traceState?: string };
  parentSpanId?: string;
  parentSpanContext?: SpanContext;
  startTime: HrTime;
  endTime: HrTime;
  status: ReadableSpan['status'];
  attributes: Attributes;
  links: ReadableSpan['links'];
  events: ReadableSpan['events'];
  duration: HrTime;
  ended: boolean;
  droppedAttributesCount?: number;
  droppedEventsCount?: number;
  droppedLinksCount?: number;
  instrumentationLibrary?: ReadableSpan['instrumentationScope'];
  instrumentationScope?: ReadableSpan['instrumentationScope'];
}

/** A workflow's span as this process's SDK reads it, with the request's attributes. */
function fromSandbox(span: SandboxSpan, info: WorkflowInfo, resource: ReadableSpan['resource']): ReadableSpan {
  const { traceState, ...rest } = span.spanContext;
  const spanContext: SpanContext = { ...rest, ...(traceState ? { traceState: createTraceState(traceState) } : {}) };
  const parentSpanContext =
    span.parentSpanContext ??
    (span.parentSpanId
      ? { traceId: spanContext.traceId, spanId: span.parentSpanId, traceFlags: spanContext.traceFlags }
      : undefined);
  return {
    name: span.name,
    kind: span.kind,
    spanContext: () => spanContext,
    ...(parentSpanContext ? { parentSpanContext } : {}),
    startTime: span.startTime,
    endTime: span.endTime,
    status: span.status,
    attributes: {
      ...span.attributes,
      workflow_id: info.workflowId,
      ...workflowAttributes(info.workflowId, info.searchAttributes?.['ProjectId']),
    },
    links: span.links,
    events: span.events,
    duration: span.duration,
    ended: span.ended,
    resource,
    instrumentationScope: span.instrumentationScope ??
      span.instrumentationLibrary ?? { name: '@temporalio/interceptors-opentelemetry' },
    droppedAttributesCount: span.droppedAttributesCount ?? 0,
    droppedEventsCount: span.droppedEventsCount ?? 0,
    droppedLinksCount: span.droppedLinksCount ?? 0,
  };
}

/**
 * The worker's tracing options: Temporal's OpenTelemetry interceptors for activities (a span per
 * execution, continuing the workflow's context) and for workflows (bundled), and the `exporter`
 * sink through which the sandbox hands its spans to this process's span processor. Empty with
 * tracing off: the bundle then has no tracing code at all.
 */
export function temporalWorkerTracing(): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  const tracing = activeTracing();
  if (!tracing) return {};
  const sinks: InjectedSinks<{ exporter: { export(spans: SandboxSpan[]): void } }> = {
    exporter: {
      export: {
        fn: (info, spans) =>
          spans.forEach((span) => tracing.processor.onEnd(fromSandbox(span, info, tracing.resource))),
      },
    },
  };
  return {
    interceptors: {
      workflowModules: [WORKFLOW_INTERCEPTORS_MODULE],
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
        () => ({ inbound: annotateActivity }),
      ],
    },
    sinks,
  };
}
