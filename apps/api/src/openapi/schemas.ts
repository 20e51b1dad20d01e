import { ApiHeader, ApiResponse } from '@nestjs/swagger';
import { CAPABILITIES, ERROR_STATUS, type ErrorCode } from '#libs/contracts';
import { LIMITS } from '../runs/agent-request.validation.js';

/** What `trim()` removes (ECMAScript's WhiteSpace and LineTerminator), spelled out: regex
 * dialects disagree on `\s` (U+FEFF is not white space to Rust's or Python's). */
const WHITE_SPACE = '\\t\\n\\x0b\\x0c\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
/** No unpaired UTF-16 surrogate (it has no UTF-8 form): an ECMA-262 pattern, matched by code point
 * (JSON Schema's `u` flag), so a paired one (an emoji) passes. A pattern of its own, because
 * tooling on UTF-8 regex engines (Rust's, Go's) cannot compile it and drops it: the NUL rule beside
 * it still holds there. */
const NO_LONE_SURROGATE = { pattern: '^[^\\ud800-\\udfff]*$' };
/** Text the api stores and sends on, as textProblem checks: no NUL (PostgreSQL refuses it) and no
 * unpaired surrogate. Patterns without look-around, which every regex dialect takes. */
export const WELL_FORMED_TEXT = { allOf: [{ pattern: '^[^\\x00]*$' }, NO_LONE_SURROGATE] } as const;
/** The same, with at least one character that is not white space. */
export const NOT_BLANK_TEXT = {
  allOf: [{ pattern: `^[^\\x00]*[^\\x00${WHITE_SPACE}][^\\x00]*$` }, NO_LONE_SURROGATE],
} as const;
const TEXT_RULE = 'Well-formed Unicode: no NUL (U+0000) and no unpaired UTF-16 surrogate.';

/** A request or session id in a path: a uuid. Any other value is answered 404, like an unknown id. */
export const ID_SCHEMA = {
  type: 'string',
  format: 'uuid',
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
} as const;

/** JSON Schemas of the contract's bodies, the single source for the OpenAPI document. */
export const SCHEMAS = {
  AgentRequest: {
    type: 'object',
    required: ['message'],
    properties: {
      message: {
        type: 'string',
        minLength: 1,
        maxLength: LIMITS.messageChars,
        ...NOT_BLANK_TEXT,
        description: `The task or question: not only white space, at most ${LIMITS.messageChars.toLocaleString('en')} characters (code points). ${TEXT_RULE}`,
      },
      capabilities: {
        type: 'array',
        minItems: 1,
        items: { type: 'string', enum: [...CAPABILITIES] },
        description: 'Filter of capabilities; omitted: all enabled on the project that the plan allows.',
      },
      files: { type: 'array', maxItems: LIMITS.files, items: { $ref: '#/components/schemas/InputFile' } },
      stream: {
        type: 'boolean',
        default: false,
        description:
          'Answer as Server-Sent Events (not with tools). A client that drops the stream cancels nothing: GET /v1/agent/{id}/events resumes it.',
      },
      background: {
        type: 'boolean',
        default: false,
        description:
          'Answer at once with `status: "in_progress"` and the id once the run is admitted (a refusal such as 402 `insufficient_credits` is still answered as itself); the run goes on whatever the client does. Follow it with GET /v1/agent/{id} and GET /v1/agent/{id}/events. Not with `stream` (400 `invalid_body`); with `tools`, the pause shows as `requires_tool_outputs` on GET.',
      },
      tools: {
        type: 'array',
        maxItems: LIMITS.tools,
        items: { $ref: '#/components/schemas/ToolDefinition' },
        description: "Each tool's `name` used once (400 `invalid_tools` otherwise).",
      },
    },
    // 400 invalid_body and 400 stream_not_supported.
    allOf: [
      {
        not: {
          required: ['stream', 'background'],
          properties: { stream: { const: true }, background: { const: true } },
        },
      },
      {
        not: {
          required: ['stream', 'tools'],
          properties: { stream: { const: true }, tools: { type: 'array', minItems: 1 } },
        },
      },
    ],
    example: {
      message: 'Summarise the attached notes in three bullet points.',
      capabilities: ['chat', 'documents'],
      files: [{ name: 'notes.md', content: '# Notes\n...' }],
    },
  },
  InputFile: {
    type: 'object',
    required: ['name', 'content'],
    properties: {
      name: {
        type: 'string',
        minLength: 1,
        ...NOT_BLANK_TEXT,
        description: `File name including extension, not only white space. ${TEXT_RULE}`,
      },
      content: {
        type: 'string',
        maxLength: LIMITS.fileBytes,
        ...WELL_FORMED_TEXT,
        description: `Text as is; binary (e.g. PDF) as base64 with a matching extension. At most 1 MB (${LIMITS.fileBytes} bytes) of UTF-8, which \`maxLength\` (in characters) can only bound from above. ${TEXT_RULE}`,
      },
    },
  },
  ToolDefinition: {
    type: 'object',
    required: ['name', 'description', 'parameters'],
    properties: {
      name: { type: 'string', pattern: '^[a-zA-Z0-9_]+$', maxLength: LIMITS.toolName },
      description: {
        type: 'string',
        maxLength: LIMITS.toolDescription,
        ...WELL_FORMED_TEXT,
        description: `At most ${LIMITS.toolDescription} characters (code points). ${TEXT_RULE}`,
      },
      parameters: {
        type: 'object',
        required: ['type'],
        properties: { type: { const: 'object' } },
        propertyNames: { ...WELL_FORMED_TEXT },
        additionalProperties: { $ref: '#/components/schemas/WellFormedJson' },
        description:
          `A JSON Schema whose \`type\` is \`object\`: at most ${LIMITS.toolSchemaBytes / 1024} KB (${LIMITS.toolSchemaBytes} bytes) of JSON, nested at most ` +
          `${LIMITS.toolSchemaDepth} levels of arrays and objects, at most ${LIMITS.toolSchemaObjects} JSON objects (each subschema and each \`properties\` is one); ` +
          `every tool's \`parameters\` together at most ${LIMITS.toolSchemasBytes / 1024} KB. Over a limit: 400 invalid_tools, before the schema is compiled. ` +
          `It must compile as a JSON Schema (draft-07: its \`$ref\`s resolve, its patterns are regular expressions), else 400 invalid_tools. Its keys and strings: ${TEXT_RULE}`,
      },
    },
  },
  WellFormedJson: {
    description: `Any JSON value whose keys and strings are well-formed text. ${TEXT_RULE}`,
    anyOf: [
      { type: ['number', 'boolean', 'null'] },
      { type: 'string', ...WELL_FORMED_TEXT },
      { type: 'array', items: { $ref: '#/components/schemas/WellFormedJson' } },
      {
        type: 'object',
        propertyNames: { ...WELL_FORMED_TEXT },
        additionalProperties: { $ref: '#/components/schemas/WellFormedJson' },
      },
    ],
  },
  ToolCall: {
    type: 'object',
    required: ['id', 'name', 'arguments'],
    properties: {
      id: { type: 'string' },
      name: { type: 'string' },
      arguments: { type: 'object', additionalProperties: true },
    },
  },
  ResponseFile: {
    type: 'object',
    required: ['name', 'content'],
    properties: {
      name: { type: 'string' },
      content: { type: 'string', description: 'Text as is; binary as base64.' },
      url: { type: 'string', format: 'uri' },
    },
  },
  Usage: {
    type: 'object',
    required: ['credits_this_request', 'credits_remaining', 'tokens_used'],
    properties: {
      credits_this_request: { type: 'integer' },
      credits_remaining: { type: 'integer' },
      tokens_used: { type: 'integer' },
    },
  },
  Meta: {
    type: 'object',
    required: ['duration_ms', 'project_id', 'plan'],
    properties: {
      duration_ms: { type: 'integer' },
      project_id: { type: 'string' },
      plan: { type: 'string', enum: ['free', 'starter', 'pro'] },
    },
  },
  AgentResponse: {
    type: 'object',
    required: ['id', 'object', 'status', 'capabilities_used', 'files', 'usage', 'meta', '_compute_instance'],
    properties: {
      id: { type: 'string', format: 'uuid' },
      object: { type: 'string', enum: ['agent.response', 'session.message'] },
      session_id: { type: 'string', format: 'uuid', description: 'Session message responses only.' },
      status: {
        type: 'string',
        enum: ['completed', 'requires_tool_outputs', 'in_progress', 'expired', 'failed', 'cancelled'],
        description:
          'POST answers are `completed` or `requires_tool_outputs` (`in_progress` with `background: true`, `cancelled` from POST /v1/agent/{id}/cancel); GET may show the others.',
      },
      message: { type: 'string', description: 'Present when `status` is `completed`.' },
      tool_calls: {
        type: 'array',
        items: { $ref: '#/components/schemas/ToolCall' },
        description: 'Present when `status` is `requires_tool_outputs`.',
      },
      capabilities_used: { type: 'array', items: { type: 'string', enum: [...CAPABILITIES] } },
      files: { type: 'array', items: { $ref: '#/components/schemas/ResponseFile' } },
      usage: { $ref: '#/components/schemas/Usage' },
      meta: { $ref: '#/components/schemas/Meta' },
      _compute_instance: { type: 'string', description: 'Pass back in tool output submissions.' },
      error: {
        type: 'object',
        description: 'GET of a failed request only.',
        properties: { code: { type: 'string' }, message: { type: 'string' } },
      },
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
        items: {
          type: 'object',
          required: ['tool_call_id', 'output'],
          properties: {
            tool_call_id: { type: 'string', ...WELL_FORMED_TEXT, description: TEXT_RULE },
            output: {
              type: 'string',
              maxLength: LIMITS.toolOutputBytes,
              ...WELL_FORMED_TEXT,
              description: `At most 100 KB (${LIMITS.toolOutputBytes} bytes) of UTF-8 (over it: 400 tool_output_too_large), which \`maxLength\` (in characters) can only bound from above. ${TEXT_RULE}`,
            },
          },
        },
        description: 'Exactly the pending tool calls, each answered once (400 `invalid_tool_outputs` otherwise).',
      },
      _compute_instance: {
        type: 'string',
        minLength: 1,
        description: 'The value of the previous response; another value is answered 404 `context_expired`.',
      },
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
  ServerSentEvent: {
    type: 'object',
    description:
      "One event of a `text/event-stream` answer (contract section 6): `event`, `id` and `data` lines; `data` is a JSON object with the event's `type` and its fields. Comment lines (`: keep-alive`) carry no event.",
    required: ['event', 'id', 'data'],
    properties: {
      event: { type: 'string', enum: ['token', 'tool_start', 'tool_end', 'done', 'error'] },
      id: {
        type: 'string',
        pattern: '^[0-9]+$',
        description: 'Increasing from 1 per request: send the last one as `Last-Event-ID` to resume.',
      },
      data: { type: 'string', contentMediaType: 'application/json' },
    },
  },
  ErrorResponse: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'docs'],
        properties: {
          code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
          message: { type: 'string' },
          docs: { type: 'string', format: 'uri' },
        },
      },
    },
  },
} as const;

/** The `text/event-stream` content of a streamed answer: its events, each as ServerSentEvent. */
export const EVENT_STREAM = {
  'text/event-stream': { schema: { $ref: '#/components/schemas/ServerSentEvent' } },
} as const;

/** The error responses of an operation, grouped by status, each listing its codes. */
export function errorResponses(
  codes: readonly ErrorCode[],
): Record<number, { description: string; content: Record<string, unknown> }> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      {
        description: list.map((c) => `\`${c}\``).join(', '),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } },
      },
    ]),
  );
}

/** Documents several responses of an operation at once (status to OpenAPI response object). */
export function ApiResponses(list: Record<number, object>): MethodDecorator {
  return (target, key, descriptor) => {
    for (const [status, response] of Object.entries(list))
      ApiResponse({ status: Number(status), ...response })(target, key, descriptor);
  };
}

/** The Idempotency-Key header of every POST (DESIGN.md section 9); `replays` says what a retry gets. */
export function ApiIdempotencyKey(replays: string): MethodDecorator {
  return ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    // What an HTTP header can carry (Latin-1) without a control character, and no white space at
    // either end (HTTP drops it, which would change the key).
    schema: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      pattern: '^[!-~\\u00a0-\\u00ff](?:[ -~\\u00a0-\\u00ff]*[!-~\\u00a0-\\u00ff])?$',
    },
    description:
      'Makes a retry safe. Scoped to the project and kept 24 hours: the same key with the same endpoint and the same parsed JSON body returns the first answer (status, headers and body) instead of doing the work again; ' +
      'a duplicate sent while the first is still running waits for its answer. The same key with another body or on another endpoint is 409 `idempotency_conflict`. ' +
      'An empty key, one over 255 characters or one with control characters is 400 `invalid_body` (the pattern: Latin-1, which is what a header carries, without control characters, and no white space at either end, which HTTP drops); a request refused by its 400 or 403 checks records nothing. ' +
      replays,
  });
}
