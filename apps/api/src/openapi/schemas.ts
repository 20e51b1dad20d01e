import { ApiHeader, ApiResponse } from '@nestjs/swagger';
import { CAPABILITIES, ERROR_STATUS, type ErrorCode } from '#libs/contracts';
import { LIMITS } from '../runs/agent-request.validation.js';

/** JSON Schemas of the contract's bodies, the single source for the OpenAPI document. */
export const SCHEMAS = {
  AgentRequest: {
    type: 'object',
    required: ['message'],
    properties: {
      message: { type: 'string', minLength: 1, maxLength: LIMITS.messageChars, description: 'The task or question (not only white space).' },
      capabilities: { type: 'array', minItems: 1, items: { type: 'string', enum: [...CAPABILITIES] }, description: 'Filter of capabilities; omitted: all enabled on the project that the plan allows.' },
      files: { type: 'array', maxItems: LIMITS.files, items: { $ref: '#/components/schemas/InputFile' } },
      stream: { type: 'boolean', default: false, description: 'Answer as Server-Sent Events (not with tools). A client that drops the stream cancels nothing: GET /v1/agent/{id}/events resumes it.' },
      background: {
        type: 'boolean',
        default: false,
        description: 'Answer at once with `status: "in_progress"` and the id once the run is admitted (a refusal such as 402 `insufficient_credits` is still answered as itself); the run goes on whatever the client does. Follow it with GET /v1/agent/{id} and GET /v1/agent/{id}/events. Not with `stream` (400 `invalid_body`); with `tools`, the pause shows as `requires_tool_outputs` on GET.',
      },
      tools: { type: 'array', maxItems: LIMITS.tools, items: { $ref: '#/components/schemas/ToolDefinition' } },
    },
    example: { message: 'Summarise the attached notes in three bullet points.', capabilities: ['chat', 'documents'], files: [{ name: 'notes.md', content: '# Notes\n...' }] },
  },
  InputFile: {
    type: 'object',
    required: ['name', 'content'],
    properties: {
      name: { type: 'string', description: 'File name including extension.' },
      content: { type: 'string', description: 'Text as is; binary (e.g. PDF) as base64 with a matching extension. At most 1 MB of UTF-8.' },
    },
  },
  ToolDefinition: {
    type: 'object',
    required: ['name', 'description', 'parameters'],
    properties: {
      name: { type: 'string', pattern: '^[a-zA-Z0-9_]+$', maxLength: LIMITS.toolName },
      description: { type: 'string', maxLength: LIMITS.toolDescription },
      parameters: {
        type: 'object',
        description:
          `A JSON Schema whose \`type\` is \`object\`: at most ${LIMITS.toolSchemaBytes / 1024} KB (${LIMITS.toolSchemaBytes} bytes) of JSON, nested at most ` +
          `${LIMITS.toolSchemaDepth} levels of arrays and objects, at most ${LIMITS.toolSchemaObjects} JSON objects (each subschema and each \`properties\` is one); ` +
          `every tool's \`parameters\` together at most ${LIMITS.toolSchemasBytes / 1024} KB. Over a limit: 400 invalid_tools, before the schema is compiled.`,
        additionalProperties: true,
      },
    },
  },
  ToolCall: {
    type: 'object',
    required: ['id', 'name', 'arguments'],
    properties: { id: { type: 'string' }, name: { type: 'string' }, arguments: { type: 'object', additionalProperties: true } },
  },
  ResponseFile: {
    type: 'object',
    required: ['name', 'content'],
    properties: { name: { type: 'string' }, content: { type: 'string', description: 'Text as is; binary as base64.' }, url: { type: 'string', format: 'uri' } },
  },
  Usage: {
    type: 'object',
    required: ['credits_this_request', 'credits_remaining', 'tokens_used'],
    properties: { credits_this_request: { type: 'integer' }, credits_remaining: { type: 'integer' }, tokens_used: { type: 'integer' } },
  },
  Meta: {
    type: 'object',
    required: ['duration_ms', 'project_id', 'plan'],
    properties: { duration_ms: { type: 'integer' }, project_id: { type: 'string' }, plan: { type: 'string', enum: ['free', 'starter', 'pro'] } },
  },
  AgentResponse: {
    type: 'object',
    required: ['id', 'object', 'status', 'capabilities_used', 'files', 'usage', 'meta', '_compute_instance'],
    properties: {
      id: { type: 'string', format: 'uuid' },
      object: { type: 'string', enum: ['agent.response', 'session.message'] },
      session_id: { type: 'string', format: 'uuid', description: 'Session message responses only.' },
      status: { type: 'string', enum: ['completed', 'requires_tool_outputs', 'in_progress', 'expired', 'failed', 'cancelled'], description: 'POST answers are `completed` or `requires_tool_outputs` (`in_progress` with `background: true`, `cancelled` from POST /v1/agent/{id}/cancel); GET may show the others.' },
      message: { type: 'string', description: 'Present when `status` is `completed`.' },
      tool_calls: { type: 'array', items: { $ref: '#/components/schemas/ToolCall' }, description: 'Present when `status` is `requires_tool_outputs`.' },
      capabilities_used: { type: 'array', items: { type: 'string', enum: [...CAPABILITIES] } },
      files: { type: 'array', items: { $ref: '#/components/schemas/ResponseFile' } },
      usage: { $ref: '#/components/schemas/Usage' },
      meta: { $ref: '#/components/schemas/Meta' },
      _compute_instance: { type: 'string', description: 'Pass back in tool output submissions.' },
      error: { type: 'object', description: 'GET of a failed request only.', properties: { code: { type: 'string' }, message: { type: 'string' } } },
    },
    example: {
      id: '3b0f6e52-1c4d-4a8e-9d57-1f2e3d4c5b6a',
      object: 'agent.response',
      status: 'completed',
      message: 'Here is the summary...',
      capabilities_used: ['chat'],
      files: [],
      usage: { credits_this_request: 1, credits_remaining: 99, tokens_used: 512 },
      meta: { duration_ms: 840, project_id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d', plan: 'pro' },
      _compute_instance: 'default/mas-agent',
    },
  },
  ToolOutputsRequest: {
    type: 'object',
    required: ['tool_outputs', '_compute_instance'],
    properties: {
      tool_outputs: {
        type: 'array',
        minItems: 1,
        items: { type: 'object', required: ['tool_call_id', 'output'], properties: { tool_call_id: { type: 'string' }, output: { type: 'string', description: 'At most 100 KB of UTF-8.' } } },
      },
      _compute_instance: { type: 'string' },
    },
  },
  Session: {
    type: 'object',
    required: ['id', 'object', 'status', 'created_at', 'last_activity_at', 'expires_at', 'message_count'],
    properties: {
      id: { type: 'string', format: 'uuid' },
      object: { const: 'session' },
      status: { type: 'string', enum: ['active', 'expired', 'ended'] },
      created_at: { type: 'integer', description: 'Unix seconds.' },
      last_activity_at: { type: 'integer', description: 'Unix seconds.' },
      expires_at: { type: 'integer', description: 'Unix seconds: 30 minutes after the last activity while active.' },
      message_count: { type: 'integer' },
    },
  },
  ErrorResponse: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'docs'],
        properties: { code: { type: 'string', enum: Object.keys(ERROR_STATUS) }, message: { type: 'string' }, docs: { type: 'string', format: 'uri' } },
      },
    },
  },
} as const;

/** The error responses of an operation, grouped by status, each listing its codes. */
export function errorResponses(codes: readonly ErrorCode[]): Record<number, { description: string; content: Record<string, unknown> }> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      { description: list.map((c) => `\`${c}\``).join(', '), content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } } },
    ]),
  );
}

/** Documents several responses of an operation at once (status to OpenAPI response object). */
export function ApiResponses(list: Record<number, object>): MethodDecorator {
  return (target, key, descriptor) => {
    for (const [status, response] of Object.entries(list)) ApiResponse({ status: Number(status), ...response })(target, key, descriptor);
  };
}

/** The Idempotency-Key header of every POST (DESIGN.md section 9); `replays` says what a retry gets. */
export function ApiIdempotencyKey(replays: string): MethodDecorator {
  return ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    schema: { type: 'string', minLength: 1, maxLength: 255 },
    description:
      'Makes a retry safe. Scoped to the project and kept 24 hours: the same key with the same endpoint and the same parsed JSON body returns the first answer (status, headers and body) instead of doing the work again; ' +
      'a duplicate sent while the first is still running waits for its answer. The same key with another body or on another endpoint is 409 `idempotency_conflict`. ' +
      'An empty key, one over 255 characters or one with control characters is 400 `invalid_body`; a request refused by its 400 or 403 checks records nothing. ' +
      replays,
  });
}
