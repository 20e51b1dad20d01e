export { AccountsError, AccountsService, MODEL_PROVIDERS, type ModelConfigInput, type ModelConfigView, type ModelCredentials, type NewProject, type Principal } from './accounts.service.js';
export { AccountsModule } from './accounts.module.js';
export { API_KEY_PREFIX } from './secrets.js';
