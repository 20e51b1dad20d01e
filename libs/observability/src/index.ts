export * from './tracing/index.js';
