export { TemporalClientModule, TemporalClientService, TemporalProbe } from './temporal-client.module.js';
export { updateStartInterceptor, withUpdateStart, UPDATE_START, type UpdateStart } from './update-start.js';
export {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  METADATA_ENCRYPTION_KEY_ID,
  payloadDataConverter,
  payloadFromJson,
  payloadToJson,
  type JsonPayload,
} from './payload-codec.js';
export { clearTaskQueue } from './task-queue-leftovers.js';
export { historyFromJson, historyToJson } from './history-json.js';
export {
  describeDeployment,
  promoteBuild,
  runsByBuild,
  waitForBuild,
  type BuildRuns,
  type DeploymentBuild,
  type DeploymentState,
} from './worker-deployment.js';
