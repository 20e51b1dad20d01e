import type { ErrorCode } from './errors.js';

/** ToolDefinition, contract section 2.3 (validated by the api). */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** A JSON Schema object with `type: "object"`. */
  readonly parameters: Record<string, unknown>;
}

/** ToolCall, contract section 2.5. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/** One message of a conversation with the model, provider-neutral. */
export type ChatMessage =
  | { readonly role: 'system'; readonly content: string }
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string; readonly toolCalls?: readonly ToolCall[] }
  | { readonly role: 'tool'; readonly toolCallId: string; readonly name: string; readonly content: string };

/** A tool as offered to the model (custom or built-in). */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
}

/** What one model call produced. */
export interface ModelTurn {
  /** Text of the reply (may be empty when the model only calls tools). */
  readonly content: string;
  readonly toolCalls: readonly ToolCall[];
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number };
  /** The provider's model name as it reported it. */
  readonly model: string;
  /** Stream events the call published (token events), when it streamed. */
  readonly streamed?: number;
}

/** ResponseFile, contract section 2.6. */
export interface ResponseFile {
  readonly name: string;
  readonly content: string;
  readonly url?: string;
}

/** A generated file as workflows carry it: by reference (claim check); the api adds the content. */
export interface FileRef {
  readonly id: string;
  readonly name: string;
}

export type AgentStatus = 'in_progress' | 'requires_tool_outputs' | 'completed' | 'expired' | 'failed' | 'cancelled';

/** The statuses after which a request never changes again. */
export const FINAL_STATUSES: ReadonlySet<AgentStatus> = new Set(['completed', 'expired', 'failed', 'cancelled']);

/** An input file after the api stored it: the workflow carries only the reference (claim check). */
export interface InputFileRef {
  readonly name: string;
  readonly blobId: string;
  readonly bytes: number;
}

/** The error of a failed run, in contract terms. */
export interface AgentError {
  readonly code: ErrorCode;
  readonly message: string;
}

/** SSE event types (contract section 6). */
export type StreamEventType = 'token' | 'tool_start' | 'tool_end' | 'done' | 'error';

/** One event of a streamed request; `seq` is its SSE `id`, increasing from 1 per request. */
export interface StreamEvent {
  readonly seq: number;
  readonly type: StreamEventType;
  readonly data: Record<string, unknown>;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID (request, session, file and key ids are). */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
