export * from './errors.js';
export * from './topics.js';
