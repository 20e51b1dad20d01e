import { ApplicationFailure, Context } from '@temporalio/activity';
import type { AccountsService } from '#libs/accounts';
import type { AgentActivities, ChatMessage, InputFileRef, ModelStep, ModelTurn, ToolCall } from '#libs/contracts';
import { callModel, ModelError } from '#libs/llm';
import {
  modelCallDuration,
  modelCallErrors,
  modelTokens,
  requestAttributes,
  SpanKind,
  withSpan,
} from '#libs/observability';
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

  readonly emitStreamEvents: AgentActivities['emitStreamEvents'] = async ({
    requestId,
    projectId,
    events,
    fromSeq,
  }) => ({
    nextSeq: await this.stream.append(requestId, projectId, events, fromSeq),
  });

  readonly streamedText: AgentActivities['streamedText'] = ({ requestId, projectId, fromSeq }) =>
    this.stream.streamedText(requestId, projectId, fromSeq);

  readonly callModel: AgentActivities['callModel'] = async (input) => {
    const { id, length } = input.conversation;
    const streaming = input.stream && input.streamSeq !== undefined;
    // The model's settings, the conversation and (streaming) the stream's next free seq side by
    // side (round trips at once).
    const [credentials, conversation, nextSeq] = await Promise.all([
      this.accounts.modelCredentials(input.projectId),
      this.conversations.read(id, input.projectId, length).then(
        (read) => ({ ok: true as const, ...read }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
      streaming ? this.stream.nextSeq(input.requestId) : Promise.resolve(undefined),
    ]);
    if (!credentials) {
      throw ApplicationFailure.create({
        type: 'service_unavailable',
        message: 'No language model is configured for this project.',
        nonRetryable: true,
      });
    }
    if (!conversation.ok) {
      if (conversation.error instanceof ConversationNotFoundError)
        throw ApplicationFailure.create({
          type: 'compute_error',
          message: 'The conversation is no longer stored.',
          nonRetryable: true,
        });
      throw conversation.error;
    }
    const { messages: stored, tools: offered, answered: stepAnswered } = conversation;
    const custom = new Set(offered.filter((t) => t.custom).map((t) => t.name));
    // The step was answered already (an activity retried after the answer was stored, or a
    // workflow task retried after this local activity ran): the stored answer is the step's, and
    // the customer's model is not called, nor paid, twice (DESIGN.md section 10).
    if (stepAnswered?.message.role === 'assistant')
      return modelStep(
        stepAnswered.message,
        stepAnswered.step.usage,
        custom,
        stepAnswered.step.streamedTo,
        input.streamSeq,
      );
    const messages = await this.withFiles(stored, input.files, input.projectId);
    const context = Context.current();
    // A regular activity (streamed runs) heartbeats, so a worker that died is noticed in 30 s; a
    // local one (runs waited for) is kept alive by its workflow task.
    const heartbeat = context.info.isLocal ? undefined : setInterval(() => context.heartbeat(), 5000);
    const timer = modelCallDuration.startTimer({ provider: credentials.provider });
    let answered = false;
    // Streaming: tokens go out as the provider produces them (the first at once, then in small
    // batches), numbered after every event stored for the request: an attempt after one that
    // failed half-way never reuses its seqs (a seq never carries two contents); the step's
    // `streamed` moves the workflow past all of them.
    const writer = streaming
      ? this.stream.tokenWriter(input.requestId, input.projectId, Math.max(input.streamSeq!, nextSeq ?? 0))
      : undefined;
    try {
      const spanAttributes = {
        ...requestAttributes(input),
        'gen_ai.system': credentials.provider,
        'gen_ai.request.model': credentials.model,
      };
      const turn: ModelTurn = await withSpan('model call', SpanKind.CLIENT, spanAttributes, () =>
        callModel({
          provider: credentials.provider,
          model: credentials.model,
          baseUrl: credentials.baseUrl,
          apiKey: credentials.apiKey,
          settings: credentials.settings,
          awsCredentials: credentials.awsCredentials,
          allowHosts: credentials.allowHosts,
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
      // Stored at the next seq with its figures: from here on, a re-run of this step reads it back.
      const message = {
        role: 'assistant' as const,
        content: turn.content,
        ...(turn.toolCalls.length ? { toolCalls: turn.toolCalls } : {}),
      };
      await this.conversations.put(id, input.projectId, length, [message], context.info.attempt, {
        usage: turn.usage,
        ...(writer ? { streamedTo: writer.seq } : {}),
      });
      return modelStep(message, turn.usage, custom, writer?.seq, input.streamSeq);
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
      throw ApplicationFailure.create({
        type: 'model_unavailable',
        message: e instanceof Error ? e.message : String(e),
      });
    } finally {
      clearInterval(heartbeat);
    }
  };

  /** Input files reach the model whatever the capabilities: small ones whole, larger ones listed
   * (the documents capability's read_file tool reads them). */
  private async withFiles(
    messages: ChatMessage[],
    files: readonly InputFileRef[],
    projectId: string,
  ): Promise<ChatMessage[]> {
    if (files.length === 0) return messages;
    const parts: string[] = ['The user attached these files:'];
    for (const file of files) {
      if (file.bytes <= INLINE_FILE_BYTES) {
        const blob = await this.blobs.get(file.blobId, projectId);
        parts.push(
          `--- ${file.name} (${file.bytes} bytes) ---\n${blob?.content ?? '[expired]'}\n--- end of ${file.name} ---`,
        );
      } else {
        parts.push(
          `- ${file.name} (${file.bytes} bytes; too large to include, read it with the read_file tool if offered)`,
        );
      }
    }
    return [{ role: 'system', content: parts.join('\n') }, ...messages];
  }
}

/** The step the workflow decides on, from the model's stored message: the reply when it called no
 * tools; the caller's own tools' calls whole, built-in calls by reference (their arguments stay in
 * the store); the tokens; and, streaming, how far the call moved the stream's seq. */
function modelStep(
  message: { readonly content: string; readonly toolCalls?: readonly ToolCall[] },
  usage: ModelStep['usage'],
  custom: ReadonlySet<string>,
  streamedTo: number | undefined,
  streamSeq: number | undefined,
): ModelStep {
  const calls = message.toolCalls ?? [];
  return {
    ...(calls.length === 0 ? { reply: message.content } : {}),
    toolCalls: calls.map((c) => (custom.has(c.name) ? c : { id: c.id, name: c.name })),
    usage,
    ...(streamedTo !== undefined && streamSeq !== undefined ? { streamed: streamedTo - streamSeq } : {}),
  };
}
