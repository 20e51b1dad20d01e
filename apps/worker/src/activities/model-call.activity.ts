import { ApplicationFailure, Context } from '@temporalio/activity';
import type { AccountsService } from '#libs/accounts';
import { BLOB_MARKER, type AgentActivities, type ChatMessage, type InputFileRef, type ModelTurn } from '#libs/contracts';
import { callModel, ModelError } from '#libs/llm';
import type { BlobStore } from '#libs/persistence';
import type { StreamPublisher } from '#libs/streaming';

/** Input files at most this large are put into the conversation whole; larger ones are listed. */
const INLINE_FILE_BYTES = 32 * 1024;

/** The model-call activity: reads the project's model key here, and only here. */
export class ModelCallActivity {
  constructor(
    private readonly accounts: AccountsService,
    private readonly blobs: BlobStore,
    private readonly stream: StreamPublisher,
  ) {}

  readonly emitStreamEvents: AgentActivities['emitStreamEvents'] = async ({ requestId, projectId, events }) => ({
    nextSeq: await this.stream.append(requestId, projectId, events),
  });

  readonly callModel: AgentActivities['callModel'] = async (input) => {
    const credentials = await this.accounts.modelCredentials(input.projectId);
    if (!credentials) {
      throw ApplicationFailure.create({ type: 'service_unavailable', message: 'No language model is configured for this project.', nonRetryable: true });
    }
    const messages = await this.withFiles(await this.resolveBlobs(input.messages, input.projectId), input.files, input.projectId);
    const context = Context.current();
    const heartbeat = setInterval(() => context.heartbeat(), 5000);
    // Streaming: tokens go out as the provider produces them (the first at once, then in small
    // batches); a retried attempt re-sends the same seqs, which readers keep only once.
    const writer = input.stream && input.streamSeq !== undefined ? this.stream.tokenWriter(input.requestId, input.projectId, input.streamSeq) : undefined;
    try {
      const turn: ModelTurn = await callModel({
        provider: credentials.provider,
        model: credentials.model,
        baseUrl: credentials.baseUrl,
        apiKey: credentials.apiKey,
        messages,
        tools: input.tools,
        signal: context.cancellationSignal,
        ...(writer ? { onToken: (text: string) => writer.push(text) } : {}),
      });
      if (!writer) return turn;
      await writer.close();
      return { ...turn, streamed: writer.seq - (input.streamSeq ?? 0) };
    } catch (e) {
      if (e instanceof ModelError && !e.retryable) {
        throw ApplicationFailure.create({ type: 'compute_error', message: e.message, nonRetryable: true });
      }
      // Retryable (429, 5xx, unreachable): the activity's retry policy backs off and tries again.
      throw ApplicationFailure.create({ type: 'model_unavailable', message: e instanceof Error ? e.message : String(e) });
    } finally {
      clearInterval(heartbeat);
    }
  };

  private async resolveBlobs(messages: readonly ChatMessage[], projectId: string): Promise<ChatMessage[]> {
    return Promise.all(
      messages.map(async (m) => {
        if (m.role !== 'tool') return m;
        const ref = BLOB_MARKER.exec(m.content);
        if (!ref?.[1]) return m;
        const blob = await this.blobs.get(ref[1], projectId);
        return { ...m, content: blob?.content ?? '[the stored tool output has expired]' };
      }),
    );
  }

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
