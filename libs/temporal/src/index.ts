export { TemporalClientModule, TemporalClientService, TemporalProbe } from './temporal-client.module.js';
