import type { ChatMessage, ModelTurn, ToolCall, ToolSpec } from '#libs/contracts';
import { isRecord } from './json.js';
import type { ModelRequest } from './model-request.js';

/** What the scripted model reads: the conversation and the offered tools. */
export type ScriptedInput = Pick<ModelRequest, 'model' | 'messages' | 'tools'>;

/** Pause between streamed words, so a person watching `curl -N` sees the tokens arrive one by one. */
const STREAM_WORD_PAUSE_MS = 10;

/** The offline model: the turn of `scriptedTurn`, streamed word by word to `onToken`. */
export async function callScripted(req: ModelRequest): Promise<ModelTurn> {
  req.signal?.throwIfAborted();
  const turn = scriptedTurn(req);
  if (req.onToken) {
    for (const token of tokensOf(turn.content)) {
      req.signal?.throwIfAborted();
      req.onToken(token);
      // Pause between tokens, as a network stream would, so consumers see them arrive one by one.
      await new Promise((resolve) => setTimeout(resolve, STREAM_WORD_PAUSE_MS));
    }
  }
  return turn;
}

/**
 * The scripted model's reply, a pure function of the conversation (rules in the lib README):
 * 1. after tool results: call the named tools again while the user asked for more `rounds:N`,
 *    otherwise summarise the results (`Tool results: name: content; ...`);
 * 2. when the last user message names offered tools (whole word): call them, arguments from the
 *    JSON object written right after the name or else built from the tool's schema;
 * 3. otherwise echo the user: `You said: "..."`.
 */
export function scriptedTurn(req: ScriptedInput): ModelTurn {
  const messages = req.messages;
  const lastUser = lastIndexWhere(messages, (m) => m.role === 'user');
  const userText = lastUser >= 0 ? messages[lastUser]!.content : '';
  const callsSoFar = messages.reduce((n, m) => n + (m.role === 'assistant' ? (m.toolCalls?.length ?? 0) : 0), 0);
  const named = namedToolCalls(userText, req.tools, callsSoFar);

  let content = '';
  let toolCalls: ToolCall[] = [];
  if (messages.at(-1)?.role === 'tool') {
    const roundsDone = messages
      .slice(lastUser + 1)
      .filter((m) => m.role === 'assistant' && (m.toolCalls?.length ?? 0) > 0).length;
    if (named.length > 0 && roundsDone < requestedRounds(userText)) toolCalls = named;
    else content = summary(messages);
  } else if (named.length > 0) {
    toolCalls = named;
  } else {
    content = userText ? `You said: "${userText}"` : 'Hello from the scripted model.';
  }

  return {
    content,
    toolCalls,
    usage: {
      inputTokens: messages.reduce(
        (n, m) => n + countWords(m.content) + callWords(m.role === 'assistant' ? (m.toolCalls ?? []) : []),
        0,
      ),
      outputTokens: countWords(content) + callWords(toolCalls),
    },
    model: req.model || 'scripted',
  };
}

/** Splits text into words with their trailing white space, so the tokens concatenate to the text. */
export function tokensOf(text: string): string[] {
  if (text === '') return [];
  return text.match(/\s*\S+\s*/g) ?? [text];
}

/** The scripted model's token count: whitespace-separated words. */
export function countWords(text: string): number {
  return text.split(/\s+/).filter((w) => w !== '').length;
}

function callWords(calls: readonly ToolCall[]): number {
  return calls.reduce((n, c) => n + countWords(`${c.name} ${JSON.stringify(c.arguments)}`), 0);
}

function lastIndexWhere<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i]!)) return i;
  return -1;
}

// `rounds:3` in the user message asks for three rounds of tool calls before the summary.
function requestedRounds(userText: string): number {
  const match = /\brounds?\s*[:=]\s*(\d+)/i.exec(userText);
  return match ? Number(match[1]) : 1;
}

function summary(messages: readonly ChatMessage[]): string {
  const results: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'tool') break;
    results.unshift(`${m.name}: ${m.content}`);
  }
  return `Tool results: ${results.join('; ')}`;
}

/** The offered tools the text names, in the order it names them, with deterministic ids. */
function namedToolCalls(text: string, tools: readonly ToolSpec[], callsSoFar: number): ToolCall[] {
  const found: { at: number; end: number; tool: ToolSpec }[] = [];
  for (const tool of tools) {
    if (!tool.name) continue;
    // Tool names may hold `-` and `_`, so they are part of the word (`web-search` is not `web`).
    const pattern = new RegExp(`(?<![A-Za-z0-9_-])${escapeRegExp(tool.name)}(?![A-Za-z0-9_-])`);
    const match = pattern.exec(text);
    if (match) found.push({ at: match.index, end: match.index + tool.name.length, tool });
  }
  found.sort((a, b) => a.at - b.at);
  return found.map(({ end, tool }, i) => ({
    id: `call_${callsSoFar + i + 1}`,
    name: tool.name,
    arguments: jsonObjectAt(text, end) ?? argumentsFromSchema(tool.parameters, text),
  }));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The JSON object starting at `from` (after white space), if one is there and parses. */
export function jsonObjectAt(text: string, from: number): Record<string, unknown> | undefined {
  let i = from;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  if (text[i] !== '{') return undefined;
  let depth = 0;
  let inString = false;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (inString) {
      if (c === '\\') j++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) {
      try {
        const parsed: unknown = JSON.parse(text.slice(i, j + 1));
        return isRecord(parsed) ? parsed : undefined;
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/**
 * Arguments that satisfy a JSON schema's required properties: `default`, `const` or the first
 * `enum` value when given, else strings get the user's message, numbers 0 (or a positive
 * `minimum`), booleans false, arrays [], objects their own required properties, null null.
 */
export function argumentsFromSchema(schema: unknown, userText: string): Record<string, unknown> {
  const value = valueFor(isRecord(schema) ? { type: 'object', ...schema } : { type: 'object' }, userText);
  return isRecord(value) ? value : {};
}

function valueFor(schema: unknown, userText: string): unknown {
  if (!isRecord(schema)) return userText;
  if ('default' in schema) return schema['default'];
  if ('const' in schema) return schema['const'];
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return schema['enum'][0] as unknown;
  const declared = schema['type'];
  const type = Array.isArray(declared) ? (declared.find((t) => t !== 'null') ?? 'null') : declared;
  switch (type) {
    case 'number':
    case 'integer':
      return typeof schema['minimum'] === 'number' && schema['minimum'] > 0 ? schema['minimum'] : 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'null':
      return null;
    case 'object': {
      const properties = isRecord(schema['properties']) ? schema['properties'] : {};
      const required = Array.isArray(schema['required'])
        ? schema['required'].filter((r): r is string => typeof r === 'string')
        : [];
      return Object.fromEntries(required.map((name) => [name, valueFor(properties[name], userText)]));
    }
    default:
      return userText;
  }
}
