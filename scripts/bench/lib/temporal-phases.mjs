// Where a request's time goes, read from outside: the harness's send and receive times against the
// event times of the workflow's Temporal history (same machine, same clock). The timeline from
// sending to the first stop's Update completing is cut at every history event, and each gap is
// attributed to what the event ends: a workflow task's dispatch or run, an activity's dispatch or
// run. The workflow's shape may change (more local activities, more tasks); the parts follow it.
import { Client, Connection } from '@temporalio/client';
import { agentRequestWorkflowId } from '#libs/contracts';
import { clearTaskQueue } from '#libs/temporal';
import { wallOf } from './http.mjs';

const ms = (ts) =>
  ts ? Number(ts.seconds?.toString?.() ?? ts.seconds ?? 0) * 1000 + (ts.nanos ?? 0) / 1e6 : undefined;

/** The local activity recorded by a marker (Temporal core's marker payload, LocalActivityMarkerData):
 * its type, when the workflow scheduled it (wall clock) and its `complete_time`, if readable. Core
 * writes `complete_time` as the workflow time when the activity was scheduled plus its run time
 * (from its dispatch to this worker's code to its result), and moves the workflow time to it. */
function localActivityOf(event) {
  const payload = event.markerRecordedEventAttributes?.details?.data?.payloads?.[0];
  try {
    const data = JSON.parse(Buffer.from(payload.data).toString('utf8'));
    return {
      type: data.activity_type,
      scheduledAt: timeOf(data.original_schedule_time),
      completeTime: timeOf(data.complete_time),
    };
  } catch {
    return undefined;
  }
}

/** A protobuf Timestamp as JSON (an RFC 3339 string, or `{ seconds, nanos }`) in ms, if readable. */
function timeOf(value) {
  if (typeof value === 'string') return Date.parse(value) || undefined;
  if (value && typeof value === 'object') return ms(value);
  return undefined;
}

/**
 * One request's parts (ms): `{ key: { label, ms } }` plus `total`, or undefined when the history
 * has no completed first-stop Update.
 */
export function phasesOf(events, sentAt, receivedAt) {
  const start = events.find((e) => e.workflowExecutionStartedEventAttributes);
  const answered = events.find((e) => e.workflowExecutionUpdateCompletedEventAttributes);
  if (!start || !answered) return undefined;
  const activityType = new Map();
  for (const e of events) {
    const a = e.activityTaskScheduledEventAttributes;
    if (a) activityType.set(String(e.eventId), a.activityType?.name ?? 'activity');
  }
  const parts = {};
  const add = (key, label, value) => {
    parts[key] ??= { label, ms: 0 };
    parts[key].ms += value;
  };
  const tSent = wallOf(sentAt);
  const tAnswered = ms(answered.eventTime);
  add('api_in', 'api in: HTTP, auth, rate limit, validation, start workflow', ms(start.eventTime) - tSent);
  let previous = ms(start.eventTime);
  let taskStartedAt = previous;
  let taskNo = 0;
  for (let i = events.indexOf(start) + 1; i < events.length; i++) {
    const e = events[i];
    const t = ms(e.eventTime);
    if (t > tAnswered) break;
    const gap = Math.max(0, t - previous);
    previous = Math.max(previous, t);
    if (e.workflowTaskStartedEventAttributes) {
      add('wft_dispatch', 'workflow tasks: dispatch to the worker', gap);
      taskStartedAt = t;
    } else if (e.workflowTaskCompletedEventAttributes) {
      taskNo++;
      // The local activities this task ran are the markers recorded with its completion, in the
      // order they ran (one after the other). Each one's run is a part of its own; what is left of
      // the task is the workflow's activations and core's dispatch of each local activity to the
      // worker's code and of its result back, cut where the first one was scheduled.
      const locals = [];
      let workflowTime = taskStartedAt;
      let attributed = 0; // the task's time given to parts of their own
      let firstScheduled;
      for (let j = i + 1; j < events.length && !events[j].workflowTaskScheduledEventAttributes; j++) {
        const local = events[j].markerRecordedEventAttributes ? localActivityOf(events[j]) : undefined;
        if (!local?.type) continue;
        locals.push(local.type);
        if (local.completeTime === undefined) continue;
        const run = Math.max(0, local.completeTime - workflowTime);
        workflowTime = local.completeTime;
        attributed += run;
        firstScheduled ??= local.scheduledAt;
        add(`local_run:${local.type}`, `local activity ${local.type}: run`, run);
      }
      if (taskNo === 1 && firstScheduled !== undefined) {
        const before = Math.min(gap, Math.max(0, firstScheduled - taskStartedAt));
        add('wft_first_start', 'first workflow task: to its first local activity', before);
        attributed += before;
      }
      const key = taskNo === 1 ? 'wft_first_run' : 'wft_later_run';
      const label = taskNo === 1 ? 'first workflow task' : 'later workflow tasks';
      const rest = attributed > 0 ? ': between and after its local activities (activations, their dispatch)' : ': run';
      add(
        key,
        `${label}${rest}${locals.length ? ` (local: ${locals.join(', ')})` : ''}`,
        Math.max(0, gap - attributed),
      );
    } else if (e.workflowTaskTimedOutEventAttributes || e.workflowTaskFailedEventAttributes) {
      add('wft_lost', 'workflow tasks: timed out or failed', gap);
    } else if (e.activityTaskStartedEventAttributes) {
      add('activity_dispatch', 'activities: dispatch to the worker', gap);
    } else if (
      e.activityTaskCompletedEventAttributes ||
      e.activityTaskFailedEventAttributes ||
      e.activityTaskTimedOutEventAttributes
    ) {
      const attrs =
        e.activityTaskCompletedEventAttributes ??
        e.activityTaskFailedEventAttributes ??
        e.activityTaskTimedOutEventAttributes;
      const type = activityType.get(String(attrs.scheduledEventId)) ?? 'activity';
      add(`activity_run:${type}`, `activity ${type}: run`, gap);
    } else {
      add('server', 'server bookkeeping between events', gap);
    }
  }
  add('api_out', 'api out: Update result to the api, response', wallOf(receivedAt) - tAnswered);
  return { parts, total: wallOf(receivedAt) - tSent, events: events.length, workflowTasks: taskNo };
}

/** A Temporal client for reading histories and cleaning up after the run. */
export async function openTemporal({ address, namespace }) {
  const connection = await Connection.connect({ address, connectTimeout: '5 seconds' });
  const client = new Client({ connection, namespace });
  return {
    /** The parts of each sample `{ id, sentAt, receivedAt }`; unreadable histories are skipped. */
    async phases(samples, maxMs = 20_000) {
      const out = [];
      const deadline = Date.now() + maxMs;
      for (const s of samples) {
        if (Date.now() > deadline) break;
        try {
          const history = await client.workflow.getHandle(agentRequestWorkflowId(s.id)).fetchHistory();
          const p = phasesOf(history.events ?? [], s.sentAt, s.receivedAt);
          if (p) out.push(p);
        } catch {
          // A history that cannot be read is one sample fewer, not a broken benchmark.
        }
      }
      return out;
    },
    /** Terminates this run's workflows that are still open (bounded), e.g. after a failed tool
     * round, and deletes its reconciler schedule. */
    terminateOpen: (taskQueue) => clearTaskQueue(client, taskQueue, 'npm run bench finished'),
    /** Custom search attributes as `Name=Type` for `temporal server start-dev --search-attribute`. */
    async searchAttributes() {
      const types = { 1: 'Text', 2: 'Keyword', 3: 'Int', 4: 'Double', 5: 'Bool', 6: 'Datetime', 7: 'KeywordList' };
      const res = await connection.operatorService.listSearchAttributes({ namespace });
      return Object.entries(res.customAttributes ?? {}).map(([name, type]) => `${name}=${types[type] ?? 'Keyword'}`);
    },
    close: () => connection.close(),
  };
}

/** Connects to a Temporal frontend, retrying until it answers or `timeoutMs` passed. */
export async function waitForTemporal({ address, namespace, timeoutMs = 30_000 }) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const t = await openTemporal({ address, namespace });
      await t.searchAttributes();
      return t;
    } catch (e) {
      if (Date.now() > deadline)
        throw new Error(
          `Temporal at ${address} did not answer within ${timeoutMs / 1000} s: ${e instanceof Error ? e.message : String(e)}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** Per part: label and summary over the samples (a part missing from a sample counts as 0). */
export function phaseTable(samples, summarise) {
  const keys = [];
  const labels = new Map();
  for (const s of samples) {
    for (const [key, part] of Object.entries(s.parts)) {
      if (!labels.has(key)) keys.push(key);
      // The longest label names the most local activities seen.
      if ((labels.get(key) ?? '').length < part.label.length) labels.set(key, part.label);
    }
  }
  const order = [
    'api_in',
    'wft_dispatch',
    'wft_first_start',
    'wft_first_run',
    'activity_dispatch',
    'wft_later_run',
    'wft_lost',
    'server',
    'api_out',
  ];
  const rank = (k) =>
    order.includes(k) ? order.indexOf(k) : k.startsWith('local_run:') ? 2.5 : k.startsWith('activity_run:') ? 4.5 : 7.5;
  return keys
    .sort((a, b) => rank(a) - rank(b))
    .map((key) => ({ key, label: labels.get(key), ...summarise(samples.map((s) => s.parts[key]?.ms ?? 0)) }))
    .concat([{ key: 'total', label: 'total (send to response)', ...summarise(samples.map((s) => s.total)) }]);
}
