// The read side: the projections the projector runs from Kafka into PostgreSQL, their rebuild
// (the operator CLI), and the read models that catch up from the event store.
export { PROJECTIONS } from './projections/index.js';
export { tableName, type Projection, type TableNames } from './projections/projection.js';
export { parseCloudEvent, ProjectionRunner } from './projection-runner.js';
export { rebuildProjection, type RebuildSource } from './rebuild.js';
export { RequestReadModel } from './request-read-model.js';
