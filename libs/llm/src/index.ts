export { callModel } from './call-model.js';
export { ModelError, type ModelErrorKind } from './model-error.js';
export type { ModelProvider, ModelRequest } from './model-request.js';
export { scriptedTurn } from './scripted.provider.js';
export { redactSecret } from './redact.js';
