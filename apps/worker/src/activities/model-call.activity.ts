import { ApplicationFailure, Context } from '@temporalio/activity';
import type { AccountsService } from '#libs/accounts';
import type { AgentActivities, ChatMessage, InputFileRef, ModelStep, ModelTurn } from '#libs/contracts';
import { callModel, ModelError } from '#libs/llm';
import { modelCallDuration, modelCallErrors, modelTokens, requestAttributes, SpanKind, withSpan } from '#libs/observability';
import { ConversationNotFoundError, type BlobStore, type ConversationStore } from '#libs/persistence';
import type { StreamPublisher } from '#libs/streaming';

/** Input files at most this large are put into the conversation whole; larger ones are listed. */
const INLINE_FILE_BYTES = 32 * 1024;

/** The model-call activity: reads the project's model key here, and only here. The conversation
 * and its tools are loaded from the conversation store, and the model's message is stored there;
 * the workflow gets back only what it decides on. */
export class ModelCallActivity {
  constructor(
    private readonly accounts: AccountsService,
    private readonly blobs: BlobStore,
    private readonly stream: StreamPublisher,
    private readonly conversations: ConversationStore,
  ) {}

  readonly emitStreamEvents: AgentActivities['emitStreamEvents'] = async ({ requestId, projectId, events }) => ({
    nextSeq: await this.stream.append(requestId, projectId, events),
  });

  readonly streamedText: AgentActivities['streamedText'] = ({ requestId, projectId, fromSeq }) => this.stream.streamedText(requestId, projectId, fromSeq);

  readonly callModel: AgentActivities['callModel'] = async (input) => {
    const { id, length } = input.conversation;
    // The model's settings and the conversation side by side (two round trips at once).
    const [credentials, conversation] = await Promise.all([
      this.accounts.modelCredentials(input.projectId),
      this.conversations.read(id, input.projectId, length).then(
        (read) => ({ ok: true as const, ...read }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    ]);
    if (!credentials) {
      throw ApplicationFailure.create({ type: 'service_unavailable', message: 'No language model is configured for this project.', nonRetryable: true });
    }
    if (!conversation.ok) {
      if (conversation.error instanceof ConversationNotFoundError) throw ApplicationFailure.create({ type: 'compute_error', message: 'The conversation is no longer stored.', nonRetryable: true });
      throw conversation.error;
    }
    const { messages: stored, tools: offered } = conversation;
    const messages = await this.withFiles(stored, input.files, input.projectId);
    const context = Context.current();
    // A regular activity (streamed runs) heartbeats, so a worker that died is noticed in 30 s; a
    // local one (runs waited for) is kept alive by its workflow task.
    const heartbeat = context.info.isLocal ? undefined : setInterval(() => context.heartbeat(), 5000);
    const timer = modelCallDuration.startTimer({ provider: credentials.provider });
    let answered = false;
    // Streaming: tokens go out as the provider produces them (the first at once, then in small
    // batches); a retried attempt re-sends the same seqs, which readers keep only once.
    const writer = input.stream && input.streamSeq !== undefined ? this.stream.tokenWriter(input.requestId, input.projectId, input.streamSeq) : undefined;
    try {
      const spanAttributes = { ...requestAttributes(input), 'gen_ai.system': credentials.provider, 'gen_ai.request.model': credentials.model };
      const turn: ModelTurn = await withSpan('model call', SpanKind.CLIENT, spanAttributes, () =>
        callModel({
          provider: credentials.provider,
          model: credentials.model,
          baseUrl: credentials.baseUrl,
          apiKey: credentials.apiKey,
          settings: credentials.settings,
          awsCredentials: credentials.awsCredentials,
          messages,
          tools: offered.map(({ name, description, parameters }) => ({ name, description, parameters })),
          signal: context.cancellationSignal,
          ...(writer ? { onToken: (text: string) => writer.push(text) } : {}),
        }),
      );
      answered = true;
      timer({ outcome: 'ok' });
      modelTokens.inc({ provider: credentials.provider, type: 'input' }, turn.usage.inputTokens);
      modelTokens.inc({ provider: credentials.provider, type: 'output' }, turn.usage.outputTokens);
      if (writer) await writer.close();
      // Stored at the next seq; a retried attempt replaces an earlier attempt's message, so the
      // stored message is the one this result describes.
      await this.conversations.put(id, input.projectId, length, [{ role: 'assistant', content: turn.content, ...(turn.toolCalls.length ? { toolCalls: turn.toolCalls } : {}) }], context.info.attempt);
      const custom = new Set(offered.filter((t) => t.custom).map((t) => t.name));
      const step: ModelStep = {
        ...(turn.toolCalls.length === 0 ? { reply: turn.content } : {}),
        // The caller receives its own tools' calls; built-in calls' arguments stay in the store.
        toolCalls: turn.toolCalls.map((c) => (custom.has(c.name) ? c : { id: c.id, name: c.name })),
        usage: turn.usage,
        ...(writer ? { streamed: writer.seq - (input.streamSeq ?? 0) } : {}),
      };
      return step;
    } catch (e) {
      const reason = e instanceof ModelError && !e.retryable ? 'permanent' : 'retryable';
      if (!answered) {
        timer({ outcome: `${reason}_error` });
        modelCallErrors.inc({ provider: credentials.provider, reason });
      }
      if (e instanceof ModelError && !e.retryable) {
        throw ApplicationFailure.create({ type: 'compute_error', message: e.message, nonRetryable: true });
      }
      // Retryable (429, 5xx, unreachable): the activity's retry policy backs off and tries again.
      throw ApplicationFailure.create({ type: 'model_unavailable', message: e instanceof Error ? e.message : String(e) });
    } finally {
      clearInterval(heartbeat);
    }
  };

  /** Input files reach the model whatever the capabilities: small ones whole, larger ones listed
   * (the documents capability's read_file tool reads them). */
  private async withFiles(messages: ChatMessage[], files: readonly InputFileRef[], projectId: string): Promise<ChatMessage[]> {
    if (files.length === 0) return messages;
    const parts: string[] = ['The user attached these files:'];
    for (const file of files) {
      if (file.bytes <= INLINE_FILE_BYTES) {
        const blob = await this.blobs.get(file.blobId, projectId);
        parts.push(`--- ${file.name} (${file.bytes} bytes) ---\n${blob?.content ?? '[expired]'}\n--- end of ${file.name} ---`);
      } else {
        parts.push(`- ${file.name} (${file.bytes} bytes; too large to include, read it with the read_file tool if offered)`);
      }
    }
    return [{ role: 'system', content: parts.join('\n') }, ...messages];
  }
}
