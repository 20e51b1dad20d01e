import { Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { endEvents, errorDocsUrl, isErrorCode, ServiceError, type AgentStop } from '#libs/contracts';
import { MeteringService } from '#libs/metering';
import { SseSession, StreamHubService, type SseOptions } from '#libs/streaming';

/** Serves a request's stream events as SSE (agent requests and session messages alike): replay
 * from the store after `afterSeq`, then live until `done` or `error`. */
@Injectable()
export class SseResponder {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly streams: StreamHubService,
    private readonly metering: MeteringService,
  ) {}

  /**
   * Waits, at most `boundMs`, until a started request was admitted (its credits were reserved, so
   * it runs and its stream has something to say) or its first stop came back. Answers the first
   * stop when the request ended without being admitted (refused for quota or credits, or never
   * taken up): the caller answers that as JSON, exactly as for a request without `stream`, before
   * any SSE header is written. Undefined when the request was admitted, or the bound passed.
   * The ledger is read when the process's listener says the request's stream moved (its admission
   * appends to it), and when the first stop comes; it is polled only while there is no listener.
   */
  async unadmittedStop(
    requestId: string,
    firstStop: Promise<AgentStop>,
    boundMs: number,
  ): Promise<{ stop: AgentStop } | { error: unknown } | undefined> {
    let outcome: { stop: AgentStop } | { error: unknown } | undefined;
    firstStop.then(
      (stop) => (outcome = { stop }),
      (error: unknown) => (outcome = { error }),
    );
    const signals = this.streams.signals;
    // The process's listener starts with its first stream; until it listens, the ledger is polled.
    signals.start().catch(() => undefined);
    let wake!: () => void;
    let moved = new Promise<void>((resolve) => (wake = resolve));
    // Subscribed before the first read: an admission committed after it is heard.
    const unsubscribe = signals.subscribe(requestId, (signal) => signal.kind !== 'stored' && wake());
    const deadline = Date.now() + boundMs;
    try {
      for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
        if (await this.metering.isAdmitted(requestId)) return undefined;
        if (outcome) {
          // A run that failed after its admission streams its error event like any other.
          if ('stop' in outcome && outcome.stop.status !== 'failed') return undefined;
          return (await this.metering.isAdmitted(requestId)) ? undefined : outcome;
        }
        const left = deadline - Date.now();
        if (left <= 0) return undefined;
        const timeout = new AbortController();
        await Promise.race([
          sleep(signals.listening ? left : Math.min(pause, left), undefined, { signal: timeout.signal }).catch(
            () => undefined,
          ),
          moved,
          firstStop.catch(() => undefined),
        ]);
        timeout.abort();
        moved = new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      unsubscribe();
    }
  }

  /** `run`, when given, is the request's first stop: a run that cannot finish (Temporal gone)
   * still ends the stream with one error event. `endOf`, when given, reads whether the run has
   * finished: a stream whose store holds no end is ended with it (see SseOptions). */
  async respond(
    res: Response,
    requestId: string,
    projectId: string,
    afterSeq: number,
    run?: Promise<unknown>,
    endOf?: SseOptions['endOf'],
  ): Promise<void> {
    await this.streams.ensureStarted(); // the store covers a late hub
    const docs = (code: string): Record<string, string> =>
      isErrorCode(code) ? { docs: errorDocsUrl(this.config.publicBaseUrl, code) } : {};
    const session = new SseSession(
      res,
      this.streams.hub,
      this.streams.store,
      {
        requestId,
        projectId,
        afterSeq,
        decorate: (e) => (e.type === 'error' ? docs(String(e.data.code)) : {}),
        ...(endOf ? { endOf } : {}),
      },
      this.streams.signals,
    );
    run
      ?.then(
        async (stop) => {
          // A run that ended without its end stored (a session message whose request could not
          // start, or a store that refused the end after the stop was recorded) still ends the
          // stream: its stop's end, unless the store has it already.
          const [end] = stop ? endEvents(stop as AgentStop) : [];
          if (!end || (await this.hasEnded(requestId, projectId))) return;
          session.end(end);
        },
        (e: unknown) => {
          const error =
            e instanceof ServiceError
              ? e
              : new ServiceError('compute_unavailable', 'The compute service could not be reached.');
          session.fail('error', { code: error.code, message: error.message, ...docs(error.code) });
        },
      )
      // The store could not be read: the stream goes on as the store and the hub allow.
      .catch(() => undefined);
    await session.run();
  }

  /** Whether the request's last stored event is its `done` or `error`. */
  private async hasEnded(requestId: string, projectId: string): Promise<boolean> {
    const last = (await this.streams.store.nextSeq(requestId)) - 1;
    if (last < 1) return false;
    const [event] = await this.streams.store.after(requestId, projectId, last - 1, 1);
    return event?.type === 'done' || event?.type === 'error';
  }
}
