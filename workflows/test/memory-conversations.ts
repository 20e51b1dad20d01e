import {
  BLOB_MARKER,
  offeredTools,
  type AgentActivities,
  type AgentError,
  type ChatMessage,
  type ModelTurn,
  type OfferedTool,
  type ToolCall,
  type ToolSpec,
} from '#libs/contracts';

/** What admission answers (libs/metering's, in memory). */
type Admission =
  | { ok: true; balance: number; requestsUsed: number }
  | { ok: false; error: AgentError; balance: number; requestsUsed: number };

/** The model of a workflow test: a pure function of the conversation and the tools. */
export type TestModel = (input: {
  requestId: string;
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[];
}) => ModelTurn | Promise<ModelTurn>;

/** In-memory stand-ins of the activities that touch the conversation store (the real ones are
 * apps/worker's, tested end to end): conversations in a Map, the model and the built-in tools as
 * given. `conversations` lets a test read what was stored. */
export function memoryConversations(options: {
  model: TestModel;
  runTool?: (call: ToolCall) => { ok: boolean; output: string };
}): {
  conversations: Map<string, { tools: readonly OfferedTool[]; messages: (ChatMessage | undefined)[] }>;
  activities: Pick<AgentActivities, 'appendMessages' | 'appendExchange' | 'callModel' | 'runBuiltinTool'>;
  /** beginRequest over these conversations, admitting as `admit` answers (no built-in tools). */
  beginRequest: (
    admit: (input: Parameters<AgentActivities['beginRequest']>[0]) => Promise<Admission>,
  ) => AgentActivities['beginRequest'];
} {
  const conversations = new Map<string, { tools: readonly OfferedTool[]; messages: (ChatMessage | undefined)[] }>();
  const blobs = new Map<string, string>();
  const get = (id: string) => {
    const c = conversations.get(id);
    if (!c) throw new Error(`no conversation ${id}`);
    return c;
  };
  const put = (id: string, at: number, messages: readonly ChatMessage[]) =>
    messages.forEach((m, i) => (get(id).messages[at + i] = m));
  const load = (id: string, length: number): ChatMessage[] => {
    const messages = get(id).messages.slice(0, length);
    if (messages.length !== length || messages.some((m) => m === undefined))
      throw new Error(`conversation ${id} has fewer than ${length} messages`);
    return messages as ChatMessage[];
  };
  const open = (id: string, tools: readonly OfferedTool[] = []) =>
    void (conversations.has(id) || conversations.set(id, { tools, messages: [] }));
  return {
    conversations,
    beginRequest: (admit) => async (input) => {
      const admission = await admit(input);
      if (!admission.ok) return admission;
      const { requestId, customTools, history, message } = input;
      open(requestId, offeredTools(customTools, []));
      const copied =
        history && history.to > history.from ? get(history.id).messages.slice(history.from, history.to) : [];
      put(requestId, 0, copied as ChatMessage[]);
      put(requestId, copied.length, [
        { role: 'user', content: 'text' in message ? message.text : (blobs.get(message.blobId) ?? '') },
      ]);
      return { ...admission, builtin: [], notes: [], length: copied.length + 1 };
    },
    activities: {
      appendMessages: async ({ conversationId, at, messages }) =>
        put(
          conversationId,
          at,
          messages.map((m) =>
            m.role === 'tool' && BLOB_MARKER.test(m.content) ? { ...m, content: `[blob ${m.content}]` } : m,
          ),
        ),
      appendExchange: async ({ sessionId, at, requestId, userSeq }) => {
        open(sessionId);
        const request = get(requestId).messages;
        put(sessionId, at, [
          { role: 'user', content: request[userSeq]!.content },
          { role: 'assistant', content: request.at(-1)!.content },
        ]);
      },
      callModel: async ({ requestId, conversation }) => {
        const { tools } = get(conversation.id);
        const turn = await options.model({
          requestId,
          messages: load(conversation.id, conversation.length),
          tools: tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
        });
        put(conversation.id, conversation.length, [
          { role: 'assistant', content: turn.content, ...(turn.toolCalls.length ? { toolCalls: turn.toolCalls } : {}) },
        ]);
        const custom = new Set(tools.filter((t) => t.custom).map((t) => t.name));
        return {
          ...(turn.toolCalls.length === 0 ? { reply: turn.content } : {}),
          toolCalls: turn.toolCalls.map((c) => (custom.has(c.name) ? c : { id: c.id, name: c.name })),
          usage: turn.usage,
        };
      },
      runBuiltinTool: async ({ conversationId, callSeq, callId, at }) => {
        const stored = get(conversationId).messages[callSeq];
        const call = stored?.role === 'assistant' ? stored.toolCalls?.find((c) => c.id === callId) : undefined;
        if (!call) throw new Error(`no call ${callId} at ${callSeq}`);
        const result = options.runTool?.(call) ?? { ok: false, output: `no ${call.name}` };
        put(conversationId, at, [{ role: 'tool', toolCallId: call.id, name: call.name, content: result.output }]);
        return { ok: result.ok, files: [] };
      },
    },
  };
}
