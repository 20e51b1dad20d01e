export {
  ConfigError,
  DEFAULT_PROJECT_CAPS,
  loadConfig,
  LOG_LEVELS,
  requireTemporalAddress,
  type AppConfig,
  type LogLevelName,
  type ProjectCaps,
} from './config.js';
export { APP_CONFIG, ConfigModule, configFromEnvironment, rawEnvironment } from './config.module.js';
export {
  KAFKA_SASL_MECHANISMS,
  type KafkaSasl,
  type KafkaSaslMechanism,
  type KafkaSecurity,
  type TemporalSecurity,
} from './engines.js';
export { type SmtpSettings } from './smtp.js';
export { kafkaConnectionOptions, temporalConnectionOptions } from './engine-options.js';
