export { ConfigError, loadConfig, requireTemporalAddress, type AppConfig } from './config.js';
export { APP_CONFIG, ConfigModule, configFromEnvironment } from './config.module.js';
