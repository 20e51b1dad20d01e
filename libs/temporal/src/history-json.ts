import { createRequire } from 'node:module';
import proto from '@temporalio/proto';

type History = proto.temporal.api.history.v1.IHistory;
interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): History | null;
}

// protobufjs's JSON codec as @temporalio/proto's own copy of protobufjs provides it. The SDK's
// historyToJSON and historyFromJSON (@temporalio/common/lib/proto-utils) take it from
// @temporalio/common's copy instead, and the lockfile gives each Temporal package a copy of its own
// (protobufjs 7 is hoisted for another dependency): theirs throw "type must be a Type" here.
const { toJson, fromJson } = createRequire(createRequire(import.meta.url).resolve('@temporalio/proto'))(
  'protobufjs/ext/protojson',
) as ProtoJson;
const HistoryType = proto.temporal.api.history.v1.History;

/** A workflow history (as `WorkflowHandle.fetchHistory()` returns it) in Temporal's history JSON,
 * the format of `temporal workflow show --output json` and of the Temporal UI's download. */
export function historyToJson(history: History): unknown {
  return toJson(HistoryType, HistoryType.fromObject(history));
}

/** A history in Temporal's history JSON, for `Worker.runReplayHistories`. */
export function historyFromJson(json: unknown): History {
  const history = fromJson(HistoryType, json, { ignoreUnknownFields: true });
  if (!history) throw new TypeError('not a workflow history');
  return history;
}
