export { ConfigError, loadConfig, requireTemporalAddress, type AppConfig } from './config.js';
export { APP_CONFIG, ConfigModule, configFromEnvironment, rawEnvironment } from './config.module.js';
