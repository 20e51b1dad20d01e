import { Ajv } from 'ajv';
import {
  CAPABILITIES,
  isCapability,
  ServiceError,
  type Capability,
  type ErrorCode,
  type ToolDefinition,
} from '#libs/contracts';
import { HeldText, textProblem } from '../json-off-thread.js';

/** Limits of DESIGN.md section 7 (sizes in bytes of UTF-8). */
export const LIMITS = {
  messageChars: 100_000,
  files: 20,
  fileBytes: 1_048_576,
  tools: 20,
  toolName: 64,
  toolDescription: 1024,
  /** One tool's `parameters`: bytes of its JSON, levels of nesting, schemas (JSON objects). Ajv's
   * compile time grows faster than linearly with a schema's properties (500 took 0.3 s, 2,500
   * overflowed the stack), so the count bounds the CPU a request can cost; all within what
   * providers take (OpenAI's strict mode: 10 levels). */
  toolSchemaBytes: 16_384,
  toolSchemaDepth: 32,
  toolSchemaObjects: 256,
  /** Every tool's `parameters` together: they travel inline in the workflow's input. */
  toolSchemasBytes: 65_536,
  toolOutputBytes: 102_400,
} as const;

const TOOL_NAME = /^[a-zA-Z0-9_]+$/;

export interface InputFile {
  readonly name: string;
  /** Its content; a long one parsed off the event loop stays on that thread (HeldText). */
  readonly content: string | HeldText;
  /** Its content's UTF-8 bytes, counted once here (8 MB of files took 3-5 ms a count). */
  readonly bytes: number;
}

/** A validated AgentRequest (contract section 2.1); unknown fields are ignored. */
export interface AgentRequestBody {
  readonly message: string;
  readonly capabilities?: readonly Capability[];
  readonly files: readonly InputFile[];
  readonly stream: boolean;
  /** Answer at once with `in_progress`; the run goes on and is followed with GET (DESIGN.md section 9). */
  readonly background: boolean;
  readonly tools: readonly ToolDefinition[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Refuses `text` (`what` names the field) with `code` when it holds what textProblem finds (a
 * HeldText's was found on its thread). */
function requireText(text: string | HeldText, code: ErrorCode, what: string): void {
  const problem = typeof text === 'string' ? textProblem(text) : text.problem;
  if (problem)
    throw new ServiceError(
      code,
      `${what} contains ${problem}; send well-formed Unicode text (binary content as base64).`,
    );
}

/** Every key and string inside a JSON value, without recursion (the body's depth is bounded, but
 * a stack is cheaper than trusting that). */
function requireTextDeep(value: unknown, code: ErrorCode, what: string): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') requireText(v, code, what);
    else if (Array.isArray(v)) for (const item of v) stack.push(item);
    else if (isObject(v)) {
      for (const [key, child] of Object.entries(v)) {
        requireText(key, code, what);
        stack.push(child);
      }
    }
  }
}

/** The body as an object, or invalid_body. */
export function requireObject(body: unknown): Record<string, unknown> {
  if (!isObject(body)) throw new ServiceError('invalid_body', 'The request body must be a JSON object.');
  return body;
}

function parseMessage(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ServiceError('missing_message', '`message` is required and must be a non-empty string.');
  }
  requireText(value, 'invalid_body', '`message`');
  const chars = [...value].length;
  if (chars > LIMITS.messageChars) {
    throw new ServiceError(
      'message_too_long',
      `\`message\` has ${chars} characters; the limit is ${LIMITS.messageChars.toLocaleString('en')}.`,
    );
  }
  return value;
}

function parseCapabilities(value: unknown): Capability[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) {
    throw new ServiceError(
      'invalid_capabilities',
      `\`capabilities\` must be a non-empty array of capability names (${CAPABILITIES.join(', ')}).`,
    );
  }
  const unknown = value.filter((c) => !isCapability(c)).map((c) => (typeof c === 'string' ? c : JSON.stringify(c)));
  if (unknown.length) {
    throw new ServiceError(
      'invalid_capabilities',
      `Unknown capabilities: ${unknown.join(', ')}. Valid capabilities: ${CAPABILITIES.join(', ')}.`,
    );
  }
  return [...new Set(value as Capability[])];
}

function parseFlag(value: unknown, name: 'stream' | 'background'): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new ServiceError('invalid_body', `\`${name}\` must be a boolean.`);
  return value;
}

function parseFiles(value: unknown): InputFile[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw new ServiceError('invalid_files', '`files` must be an array of { name, content } objects.');
  if (value.length > LIMITS.files)
    throw new ServiceError('invalid_files', `At most ${LIMITS.files} files per request; got ${value.length}.`);
  return value.map((file, i) => {
    if (
      !isObject(file) ||
      typeof file.name !== 'string' ||
      !(typeof file.content === 'string' || file.content instanceof HeldText) ||
      file.name.trim() === ''
    ) {
      throw new ServiceError(
        'invalid_files',
        `files[${i}] needs a non-empty string \`name\` and a string \`content\`.`,
      );
    }
    requireText(file.name, 'invalid_files', `files[${i}].name`);
    requireText(file.content, 'invalid_files', `files[${i}].content`);
    const bytes = typeof file.content === 'string' ? Buffer.byteLength(file.content, 'utf8') : file.content.bytes;
    if (bytes > LIMITS.fileBytes) {
      throw new ServiceError(
        'invalid_files',
        `files[${i}] ("${file.name}") is ${bytes} bytes; the limit is 1 MB (${LIMITS.fileBytes} bytes).`,
      );
    }
    return { name: file.name, content: file.content, bytes };
  });
}

// Checks customer schemas against the JSON Schema meta-schema. `validateSchema` keeps nothing of
// the schema it checks: this instance only ever holds the meta-schema.
const metaSchema = new Ajv({ strict: false, allErrors: false });

/** Whether a customer schema is a JSON Schema Ajv can compile (its `$ref`s resolve, its patterns
 * are regular expressions). Compiled in an instance of its own that is dropped at once, so
 * nothing is retained across requests and one schema's `$id` never meets another's. */
function schemaProblem(schema: Record<string, unknown>): string | undefined {
  try {
    if (!metaSchema.validateSchema(schema)) {
      const problem = metaSchema.errorsText(metaSchema.errors, { dataVar: 'schema' });
      metaSchema.errors = null;
      return problem;
    }
    new Ajv({ strict: false, allErrors: false, validateSchema: false, addUsedSchema: false }).compile(schema);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/** Why a tool's `parameters` is over the limits on its nesting or its count of schemas, counted
 * without recursion and stopping at the first limit passed; undefined if it is within both. */
function schemaShapeProblem(schema: Record<string, unknown>, at: string): string | undefined {
  let objects = 0;
  const stack: [unknown, number][] = [[schema, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (depth > LIMITS.toolSchemaDepth)
      return `${at} nests arrays and objects more than ${LIMITS.toolSchemaDepth} levels deep.`;
    if (!Array.isArray(v) && ++objects > LIMITS.toolSchemaObjects) {
      return `${at} has more than ${LIMITS.toolSchemaObjects} schemas (JSON objects); the limit is ${LIMITS.toolSchemaObjects}.`;
    }
    for (const child of Object.values(v as object))
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return undefined;
}

function parseTools(value: unknown): ToolDefinition[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ServiceError('invalid_tools', '`tools` must be an array of tool definitions.');
  if (value.length > LIMITS.tools)
    throw new ServiceError('invalid_tools', `At most ${LIMITS.tools} tools per request; got ${value.length}.`);
  const names = new Set<string>();
  let schemasBytes = 0;
  return value.map((tool, i) => {
    const at = `tools[${i}]`;
    if (!isObject(tool))
      throw new ServiceError('invalid_tools', `${at} must be an object with name, description and parameters.`);
    const { name, description, parameters } = tool;
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      throw new ServiceError('invalid_tools', `${at}.name must match ^[a-zA-Z0-9_]+$.`);
    }
    if (name.length > LIMITS.toolName)
      throw new ServiceError(
        'invalid_tools',
        `${at}.name is ${name.length} characters; the limit is ${LIMITS.toolName}.`,
      );
    if (names.has(name)) throw new ServiceError('invalid_tools', `${at}.name "${name}" is used by another tool.`);
    names.add(name);
    if (typeof description !== 'string')
      throw new ServiceError('invalid_tools', `${at}.description is required and must be a string.`);
    requireText(description, 'invalid_tools', `${at}.description`);
    // Characters are code points, as for `message` (and JSON Schema's maxLength): an emoji is one.
    const descriptionChars = [...description].length;
    if (descriptionChars > LIMITS.toolDescription) {
      throw new ServiceError(
        'invalid_tools',
        `${at}.description is ${descriptionChars} characters; the limit is ${LIMITS.toolDescription}.`,
      );
    }
    if (!isObject(parameters) || parameters.type !== 'object') {
      throw new ServiceError(
        'invalid_tools',
        `${at}.parameters must be a JSON Schema object whose "type" is "object".`,
      );
    }
    // The limits before anything walks the schema deeply or compiles it (issue 28).
    const bytes = Buffer.byteLength(JSON.stringify(parameters));
    if (bytes > LIMITS.toolSchemaBytes) {
      throw new ServiceError(
        'invalid_tools',
        `${at}.parameters is ${bytes} bytes of JSON; the limit is 16 KB (${LIMITS.toolSchemaBytes} bytes).`,
      );
    }
    schemasBytes += bytes;
    if (schemasBytes > LIMITS.toolSchemasBytes) {
      const total = value.reduce(
        (sum: number, t: unknown) =>
          sum + (isObject(t) && isObject(t.parameters) ? Buffer.byteLength(JSON.stringify(t.parameters)) : 0),
        0,
      );
      throw new ServiceError(
        'invalid_tools',
        `The tools' parameters together are ${total} bytes of JSON; the limit is 64 KB (${LIMITS.toolSchemasBytes} bytes).`,
      );
    }
    const shape = schemaShapeProblem(parameters, `${at}.parameters`);
    if (shape) throw new ServiceError('invalid_tools', shape);
    requireTextDeep(parameters, 'invalid_tools', `${at}.parameters`);
    const problem = schemaProblem(parameters);
    if (problem) throw new ServiceError('invalid_tools', `${at}.parameters is not a valid JSON Schema: ${problem}.`);
    return { name, description, parameters };
  });
}

/** Validates an AgentRequest (or a session message) exactly as the contract says, before anything runs. */
export function parseAgentRequest(body: unknown): AgentRequestBody {
  const b = requireObject(body);
  const message = parseMessage(b.message);
  const capabilities = parseCapabilities(b.capabilities);
  const stream = parseFlag(b.stream, 'stream');
  const background = parseFlag(b.background, 'background');
  if (stream && background) {
    throw new ServiceError(
      'invalid_body',
      '`background: true` cannot be combined with `stream: true`: a background request answers at once; follow its events with GET /v1/agent/{id}/events.',
    );
  }
  const files = parseFiles(b.files);
  const tools = parseTools(b.tools);
  if (stream && tools.length > 0) {
    throw new ServiceError(
      'stream_not_supported',
      '`stream: true` cannot be combined with `tools`: custom tool calls are returned as JSON. Send `stream: false`.',
    );
  }
  return { message, capabilities, files, stream, background, tools };
}

export interface ToolOutputsBody {
  readonly outputs: readonly { readonly toolCallId: string; readonly output: string }[];
  readonly computeInstance: string;
}

/** Validates a tool-outputs submission (contract section 4.2). */
export function parseToolOutputs(body: unknown): ToolOutputsBody {
  const b = requireObject(body);
  const list = b.tool_outputs;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ServiceError(
      'invalid_tool_outputs',
      '`tool_outputs` must be a non-empty array of { tool_call_id, output } objects.',
    );
  }
  const outputs = list.map((item, i) => {
    if (!isObject(item) || typeof item.tool_call_id !== 'string' || typeof item.output !== 'string') {
      throw new ServiceError(
        'invalid_tool_outputs',
        `tool_outputs[${i}] needs a string \`tool_call_id\` and a string \`output\`.`,
      );
    }
    requireText(item.tool_call_id, 'invalid_tool_outputs', `tool_outputs[${i}].tool_call_id`);
    requireText(item.output, 'invalid_tool_outputs', `tool_outputs[${i}].output`);
    return { toolCallId: item.tool_call_id, output: item.output };
  });
  if (typeof b._compute_instance !== 'string' || b._compute_instance === '') {
    throw new ServiceError(
      'invalid_tool_outputs',
      '`_compute_instance` is required: pass the value from the previous response.',
    );
  }
  outputs.forEach((o, i) => {
    const bytes = Buffer.byteLength(o.output, 'utf8');
    if (bytes > LIMITS.toolOutputBytes) {
      throw new ServiceError(
        'tool_output_too_large',
        `tool_outputs[${i}].output is ${bytes} bytes; the limit is 100 KB (${LIMITS.toolOutputBytes} bytes).`,
      );
    }
  });
  return { outputs, computeInstance: b._compute_instance };
}

/** Which capabilities a request may use: the plan is checked before the project (DESIGN.md section 7). */
export function resolveCapabilities(
  requested: readonly Capability[] | undefined,
  planName: string,
  planAllows: readonly Capability[],
  enabled: readonly Capability[],
  hasCustomTools: boolean,
): Capability[] {
  if (requested) {
    const forbidden = requested.filter((c) => !planAllows.includes(c));
    if (forbidden.length) {
      throw new ServiceError(
        'plan_restricted',
        `The ${planName} plan does not include: ${forbidden.join(', ')}. Upgrade the plan to use ${forbidden.length > 1 ? 'them' : 'it'}.`,
      );
    }
    const notEnabled = requested.filter((c) => !enabled.includes(c));
    if (notEnabled.length) {
      throw new ServiceError(
        'capability_not_enabled',
        `Capabilities not enabled on this project: ${notEnabled.join(', ')}.`,
      );
    }
  }
  // With custom tools only chat applies (contract 2.1).
  if (hasCustomTools) return ['chat'];
  const offered = requested ?? enabled.filter((c) => planAllows.includes(c));
  return CAPABILITIES.filter((c) => offered.includes(c));
}
