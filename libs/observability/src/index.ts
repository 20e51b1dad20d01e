export * from './metrics/registry.js';
export * from './metrics/definitions.js';
export * from './metrics/metrics-server.js';
export * from './metrics/http-metrics.js';
export * from './logging/log-context.js';
export * from './logging/logger.js';
export * from './logging/activity-log-context.js';
export * from './logging/http-logging.js';
