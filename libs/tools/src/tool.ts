import type { Capability } from '#libs/contracts';

/** A JSON Schema for a tool's arguments; the model is offered only object schemas. */
export interface ToolParametersSchema {
  readonly type: 'object';
  readonly properties: Readonly<Record<string, unknown>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean;
  readonly [keyword: string]: unknown;
}

/** What the model is offered for one tool (OpenAI function-calling style). */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: ToolParametersSchema;
}

/** An input file of the request or a file a tool generated; binary content is base64. */
export interface ToolFile {
  readonly name: string;
  readonly content: string;
  readonly encoding: 'utf8' | 'base64';
  readonly mediaType: string;
}

/** What a tool returns: text the model reads (bounded), or a clear error the model sees. */
export type ToolResult =
  | { readonly ok: true; readonly output: string; readonly files?: readonly ToolFile[] }
  | { readonly ok: false; readonly error: string };

/** Per-call context: the request's input files, operator options and cancellation. */
export interface ToolContext<O = unknown> {
  readonly inputFiles?: readonly ToolFile[];
  readonly options?: O;
  /** Aborted when the caller (e.g. a cancelled activity) gives up; tools stop as soon as they can. */
  readonly signal?: AbortSignal;
}

/** A built-in tool: its spec, the capability that offers it, and a runner that never throws. */
export interface ToolDefinition<O = unknown> {
  readonly name: string;
  readonly capability: Capability;
  readonly spec: ToolSpec;
  /** Validates `args` against `spec.parameters`, then runs; failures come back as `ok: false`. */
  run(args: unknown, context?: ToolContext<O>): Promise<ToolResult>;
}

/** A successful result. */
export function toolOk(output: string, files?: readonly ToolFile[]): ToolResult {
  return files && files.length > 0 ? { ok: true, output, files } : { ok: true, output };
}

/** A failed result with the message the model sees. */
export function toolError(error: string): ToolResult {
  return { ok: false, error };
}

/** Cuts `text` to `maxChars`, saying so, so no tool output grows without bound. */
export function boundText(text: string, maxChars: number, hint = ''): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[truncated: ${text.length - maxChars} more characters not shown${hint ? `; ${hint}` : ''}]`;
}

/** The message of anything thrown, for results the model reads. */
export function errorMessage(e: unknown): string {
  // Duck-typed: errors from Node internals may come from another realm (e.g. under a test runner's VM).
  if (typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string')
    return (e as { message: string }).message;
  return typeof e === 'string' ? e : (JSON.stringify(e) ?? String(e));
}

/** Operator options laid over defaults; an option left undefined keeps its default. */
export function withDefaults<T extends object>(defaults: Required<T>, options: T | undefined): Required<T> {
  const given = Object.entries(options ?? {}).filter(([, value]) => value !== undefined);
  return { ...defaults, ...Object.fromEntries(given) } as Required<T>;
}
