export { createKafka } from './kafka.js';
export { KafkaModule } from './kafka.module.js';
export { KafkaProbe } from './kafka.probe.js';
