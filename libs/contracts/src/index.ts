export * from './agent.js';
export * from './agent-workflow.js';
export * from './capabilities.js';
export * from './errors.js';
export * from './topics.js';
