import {
  BLOB_MARKER,
  type AgentError,
  type ChatMessage,
  type ConversationActivities,
  type ConversationSlice,
  type OfferedTool,
  type TextRef,
} from '#libs/contracts';
import type { BlobStore, ConversationStore } from '#libs/persistence';

interface OpenConversation {
  projectId: string;
  conversationId: string;
  tools: readonly OfferedTool[];
  history?: ConversationSlice;
  message: TextRef;
}

/** The conversation writes of requests and sessions (libs/persistence's ConversationStore owns the
 * tables). Each is idempotent, so a retried local activity changes nothing twice. */
export class ConversationActivityHandlers {
  constructor(
    private readonly conversations: ConversationStore,
    private readonly blobs: BlobStore,
  ) {}

  /** Creates a request's conversation (part of beginRequest): the tools offered, the history copied
   * from a slice of the session's conversation, then the user message (read from the blob store when
   * stored there). Idempotent; answers the conversation's length, or why it cannot be opened. */
  async open({
    projectId,
    conversationId,
    tools,
    history,
    message,
  }: OpenConversation): Promise<{ ok: true; length: number } | { ok: false; error: AgentError }> {
    const text = 'text' in message ? message.text : (await this.blobs.get(message.blobId, projectId))?.content;
    if (text === undefined)
      return {
        ok: false,
        error: {
          code: 'compute_error',
          message: 'The message is no longer stored (it expired before the request ran).',
        },
      };
    const user: ChatMessage = { role: 'user', content: text };
    const copied = history ? Math.max(0, history.to - history.from) : 0;
    if (!history || copied === 0) {
      // A request without history: the conversation and its message in one statement.
      await this.conversations.open(conversationId, projectId, tools, [user]);
      return { ok: true, length: 1 };
    }
    await this.conversations.open(conversationId, projectId, tools);
    await this.conversations.copy(history.id, projectId, history.from, history.to, conversationId, 0);
    await this.conversations.put(conversationId, projectId, copied, [user]);
    return { ok: true, length: copied + 1 };
  }

  readonly appendMessages: ConversationActivities['appendMessages'] = async ({
    projectId,
    conversationId,
    at,
    messages,
  }) => {
    await this.conversations.put(
      conversationId,
      projectId,
      at,
      await Promise.all(messages.map((m) => this.withBlobText(m, projectId))),
    );
  };

  readonly appendExchange: ConversationActivities['appendExchange'] = async ({
    projectId,
    sessionId,
    at,
    requestId,
    userSeq,
    keep,
  }) => {
    const user = await this.conversations.message(requestId, projectId, userSeq);
    const reply = await this.conversations.message(requestId, projectId);
    // Two messages are always written, so the session's length stays the count of stored messages.
    const missing = '[this message is no longer stored]';
    await this.conversations.open(sessionId, projectId);
    await this.conversations.put(sessionId, projectId, at, [
      { role: 'user', content: user?.message.content ?? missing },
      { role: 'assistant', content: reply?.message.content ?? missing },
    ]);
    await this.conversations.forgetBefore(sessionId, projectId, at + 2 - keep);
  };

  /** A tool output the api stored by reference enters the conversation as its text. */
  private async withBlobText(message: ChatMessage, projectId: string): Promise<ChatMessage> {
    if (message.role !== 'tool') return message;
    const ref = BLOB_MARKER.exec(message.content);
    if (!ref?.[1]) return message;
    const blob = await this.blobs.get(ref[1], projectId);
    return { ...message, content: blob?.content ?? '[the stored tool output has expired]' };
  }
}
