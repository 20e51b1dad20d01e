export { ConfigError, loadConfig, LOG_LEVELS, requireTemporalAddress, type AppConfig, type LogLevelName } from './config.js';
export { APP_CONFIG, ConfigModule, configFromEnvironment, rawEnvironment } from './config.module.js';
