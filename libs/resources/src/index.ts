// The resources as the contract shows them (GET /v1/agent/{id}, GET /v1/sessions/{id}), rendered
// in one place for the api's answers and the worker's webhooks.
export * from './agent-resource.js';
export * from './compute-instance.js';
export * from './session-resource.js';
export * from './content-disposition.js';
