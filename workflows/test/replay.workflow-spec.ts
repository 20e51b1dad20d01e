import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { historyFromJson, payloadDataConverter } from '#libs/temporal';
import { workflowBundleOptions } from '../../apps/worker/src/workflow-bundle.js';

// The replay corpus: histories of real runs of every workflow type along its paths, recorded by
// `npm run replay:record` (scripts/replay/record.mjs) into test/replay/histories/<set>/, replayed
// here against the current workflow code with the bundle and data converter the worker uses. A
// change to workflow code that a run in flight could not take (a command added, removed or
// reordered without `patched()`) fails here, naming the history, its workflow and the event where
// replay diverged (docs/decisions.md, "Changing workflow code").
//
// In the workflow tier, not the unit tier: it reads the committed histories and runs the Temporal
// SDK's replay worker (its native core), which is I/O the unit tier does not do; it needs no
// server, no database and no network.

const CORPUS = fileURLToPath(new URL('../../test/replay/histories/', import.meta.url));
const KEY = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../test/replay/payload-key.json', import.meta.url)), 'utf8'),
) as { id: string; key: string };

interface ManifestEntry {
  readonly file: string;
  readonly workflowType: string;
  readonly path: string;
  readonly workflowId: string;
}

interface Recorded extends ManifestEntry {
  /** set/workflowType/path.json, under test/replay/histories. */
  readonly name: string;
  readonly json: {
    events: {
      eventId: string;
      eventType: string;
      workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } };
    }[];
  };
}

const jsonFilesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) =>
    statSync(join(dir, name)).isDirectory()
      ? jsonFilesUnder(join(dir, name)).map((f) => `${name}/${f}`)
      : name.endsWith('.json')
        ? [name]
        : [],
  );

/** Every set's histories, as its manifest lists them. */
function corpus(): Recorded[] {
  if (!existsSync(CORPUS)) return [];
  return readdirSync(CORPUS)
    .filter((set) => statSync(join(CORPUS, set)).isDirectory())
    .flatMap((set) => {
      const manifest = JSON.parse(readFileSync(join(CORPUS, set, 'manifest.json'), 'utf8')) as {
        histories: ManifestEntry[];
      };
      return manifest.histories.map((entry) => ({
        ...entry,
        name: `${set}/${entry.file}`,
        json: JSON.parse(readFileSync(join(CORPUS, set, entry.file), 'utf8')) as Recorded['json'],
      }));
    });
}

type HistoryEvent = Recorded['json']['events'][number] & {
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
  markerRecordedEventAttributes?: { markerName?: string; details?: { data?: { payloads?: { data?: string }[] } } };
};

/** A local activity marker's own data (written by the SDK's core in plain JSON, not encrypted). */
const localActivityOf = (event: HistoryEvent): { seq?: number; activity_type?: string } | undefined => {
  const data =
    event.markerRecordedEventAttributes?.markerName === 'core_local_activity'
      ? event.markerRecordedEventAttributes.details?.data?.payloads?.[0]?.data
      : undefined;
  try {
    return data
      ? (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { seq?: number; activity_type?: string })
      : undefined;
  } catch {
    return undefined;
  }
};

/** The event a nondeterminism message names, with its type and what it was: the SDK's core says
 * `HistoryEvent(id: 7, ActivityTaskScheduled)`, or `LocalActivity(2)` for the second local
 * activity (its marker event). */
function divergedAt(message: string, history: Recorded['json']): string {
  const events = history.events as HistoryEvent[];
  const id = /HistoryEvent\(id: (\d+)/.exec(message)?.[1];
  const localSeq = /LocalActivity\((\d+)\)/.exec(message)?.[1];
  const event = id
    ? events.find((e) => e.eventId === id)
    : localSeq
      ? events.find((e) => localActivityOf(e)?.seq === Number(localSeq))
      : undefined;
  if (!event) return id ? `event ${id} (not in the history)` : 'an event the error does not name';
  const what = event.activityTaskScheduledEventAttributes?.activityType?.name ?? localActivityOf(event)?.activity_type;
  return `event ${event.eventId} (${event.eventType}${what ? `, ${localActivityOf(event) ? 'local activity' : 'activity'} ${what}` : ''})`;
}

const histories = corpus();

describe('the replay corpus (test/replay/histories)', () => {
  const outcomes = new Map<string, string | undefined>();

  beforeAll(async () => {
    try {
      Runtime.install({ logger: new DefaultLogger('WARN') });
    } catch {
      // Already installed by an earlier test file in this process.
    }
    const results = Worker.runReplayHistories(
      {
        ...workflowBundleOptions(),
        dataConverter: payloadDataConverter({
          payloadKeys: { current: KEY.id, keys: new Map([[KEY.id, Buffer.from(KEY.key, 'base64')]]) },
        }),
        replayName: 'replay-corpus',
      },
      histories.map((h) => ({ workflowId: h.workflowId, history: historyFromJson(h.json) })),
    );
    // One history at a time, in the order given.
    let i = 0;
    for await (const result of results) {
      const h = histories[i++]!;
      // A nondeterminism error names where the code and the history parted; any other (a payload
      // that does not decrypt, a workflow that throws) is reported as it is.
      const where =
        result.error instanceof DeterminismViolationError
          ? `diverged at ${divergedAt(result.error.message, h.json)}`
          : 'failed to replay';
      outcomes.set(
        h.name,
        result.error ? `${h.name}: ${h.workflowType} (${h.path}) ${where}: ${result.error.message}` : undefined,
      );
    }
  }, 120_000);

  it('holds every workflow type of the bundle, each file listed in its set manifest', async () => {
    // Every workflow the bundle exports (the workflow types the worker registers) has histories.
    const exported = Object.keys(await import('../src/index.js'));
    expect(exported.length).toBeGreaterThan(0);
    expect([...new Set(histories.map((h) => h.workflowType))].sort()).toEqual(exported.sort());
    for (const h of histories)
      expect(h.json.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe(h.workflowType);
    const listed = new Set(histories.map((h) => h.name));
    const sets = readdirSync(CORPUS).filter((set) => statSync(join(CORPUS, set)).isDirectory());
    const onDisk = sets.flatMap((set) =>
      jsonFilesUnder(join(CORPUS, set))
        .filter((f) => f !== 'manifest.json')
        .map((f) => `${set}/${f}`),
    );
    expect(onDisk.filter((f) => !listed.has(f))).toEqual([]);
  });

  it.each(histories.map((h) => [h.name]))('replays %s', (name) => {
    expect(outcomes.has(name)).toBe(true);
    const failure = outcomes.get(name);
    if (failure) throw new Error(failure);
  });
});
