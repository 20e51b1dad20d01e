export { callModel } from './call-model.js';
export { ModelError, type ModelErrorKind } from './model-error.js';
export type { ModelProvider, ModelRequest } from './model-request.js';
export { modelTargetProblem, type ModelTarget } from './model-targets.js';
export { scriptedTurn } from './scripted.provider.js';
