export * from './agent.js';
export * from './agent-workflow.js';
export * from './capabilities.js';
export * from './errors.js';
export * from './events.js';
export * from './model-providers.js';
export * from './session-workflow.js';
export * from './topics.js';
