import { CancellationScope, patched } from '@temporalio/workflow';
import type { ChatMessage, ConversationRef, FileRef, InputFileRef, ModelStep } from '#libs/contracts';
import * as acts from './proxies.js';

/**
 * A request's handle on its conversation in the conversation store: the id and the length, kept in
 * step with what the activities stored. Messages never pass through the workflow: the activities
 * load what they need and store what they produce at the seq the workflow gives them.
 */
export class StoredConversation {
  private ref: ConversationRef;
  private readonly long: ReturnType<typeof acts.longActivities>;

  /** `longActivityTaskQueue`: where its streamed model calls and built-in tools run (the run's input). */
  constructor(
    private readonly requestId: string,
    private readonly projectId: string,
    longActivityTaskQueue?: string,
  ) {
    this.ref = { id: requestId, length: 0 };
    this.long = acts.longActivities(longActivityTaskQueue);
  }

  /** The conversation as beginRequest opened it (tools, the session's history, the user message). */
  opened(length: number): this {
    this.ref = { ...this.ref, length };
    return this;
  }

  async append(messages: readonly ChatMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await acts.appendMessages({
      projectId: this.projectId,
      conversationId: this.ref.id,
      at: this.ref.length,
      messages,
    });
    this.grow(messages.length);
  }

  /** One model call on the conversation so far; its assistant message is stored at `seq`. */
  async callModel(options: {
    files: readonly InputFileRef[];
    stream: boolean;
    streamSeq: number;
  }): Promise<{ step: ModelStep; seq: number }> {
    const { files, stream, streamSeq } = options;
    const call = stream ? this.long.callModelStreaming : acts.callModel;
    const step = await call({
      requestId: this.requestId,
      projectId: this.projectId,
      conversation: this.ref,
      files,
      stream,
      ...(stream ? { streamSeq } : {}),
    });
    return { step, seq: this.grow(1) };
  }

  /** Runs the built-in call `callId` of the assistant message at `callSeq`; its output is stored next. */
  async runTool(
    callSeq: number,
    callId: string,
    files: readonly InputFileRef[],
  ): Promise<{ ok: boolean; files: readonly FileRef[] }> {
    const result = await this.long.runBuiltinTool({
      requestId: this.requestId,
      projectId: this.projectId,
      conversationId: this.ref.id,
      callSeq,
      callId,
      at: this.ref.length,
      files,
    });
    this.grow(1);
    return result;
  }

  /** Counts `count` stored messages; returns the seq of the first. */
  private grow(count: number): number {
    const at = this.ref.length;
    this.ref = { ...this.ref, length: at + count };
    return at;
  }
}

/** The partial message of a request cancelled in the middle of a model call: the tokens that call
 * had streamed (from `fromSeq`, the seq of its first token, on); '' for a request that does not
 * stream (its tokens are nowhere but in the aborted call). Guarded by a patch: a request cancelled
 * before this existed replays without the activity. */
export async function streamedSoFar(
  input: { requestId: string; projectId: string; stream: boolean },
  fromSeq: number,
): Promise<string> {
  if (!input.stream || !patched('cancel-keeps-streamed-tokens')) return '';
  return CancellationScope.nonCancellable(() =>
    acts.streamedText({ requestId: input.requestId, projectId: input.projectId, fromSeq }),
  );
}
