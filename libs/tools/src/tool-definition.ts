import type { Capability } from '#libs/contracts';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import {
  errorMessage,
  toolError,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
  type ToolSpec,
} from './tool.js';

// One instance for all specs: compiling a schema is costly, validating is cheap. Only the
// built-in tools' specs come here, a fixed set compiled once at load and keyed by name; customer
// schemas never do (the api compiles each in an instance of its own, dropped after the request).
const ajv = new Ajv({ allErrors: true, strict: true });
const validators = new Map<string, ValidateFunction>();

function validatorFor(spec: ToolSpec): ValidateFunction {
  let validate = validators.get(spec.name);
  if (!validate) {
    validate = ajv.compile(spec.parameters);
    validators.set(spec.name, validate);
  }
  return validate;
}

function describeError(e: ErrorObject): string {
  const at = e.instancePath === '' ? 'arguments' : `arguments${e.instancePath.replaceAll('/', '.')}`;
  if (e.keyword === 'additionalProperties')
    return `${at} has an unknown property "${String(e.params['additionalProperty'])}"`;
  if (e.keyword === 'required')
    return `${at} is missing the required property "${String(e.params['missingProperty'])}"`;
  if (e.keyword === 'enum') return `${at} must be one of ${JSON.stringify(e.params['allowedValues'])}`;
  return `${at} ${e.message ?? 'is invalid'}`;
}

/** Checks the model's arguments against the spec; the error lists every problem in words. */
export function validateToolArguments<A>(
  spec: ToolSpec,
  args: unknown,
): { ok: true; value: A } | { ok: false; error: string } {
  const validate = validatorFor(spec);
  if (validate(args)) return { ok: true, value: args as A };
  const problems = [...new Set((validate.errors ?? []).map(describeError))];
  return { ok: false, error: `Invalid arguments for ${spec.name}: ${problems.join('; ')}.` };
}

/** Builds a ToolDefinition whose `run` validates arguments and turns any unexpected throw into `ok: false`. */
export function defineTool<A, O>(
  capability: Capability,
  spec: ToolSpec,
  execute: (args: A, context: ToolContext<O>) => Promise<ToolResult>,
): ToolDefinition<O> {
  validatorFor(spec);
  return {
    name: spec.name,
    capability,
    spec,
    async run(args: unknown, context: ToolContext<O> = {}): Promise<ToolResult> {
      const checked = validateToolArguments<A>(spec, args);
      if (!checked.ok) return toolError(checked.error);
      if (context.signal?.aborted) return toolError(`${spec.name} was cancelled before it started.`);
      try {
        return await execute(checked.value, context);
      } catch (e) {
        return toolError(`${spec.name} failed unexpectedly: ${errorMessage(e)}`);
      }
    },
  };
}
