import { Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { errorDocsUrl, isErrorCode, ServiceError } from '#libs/contracts';
import { SseSession, StreamHubService } from '#libs/streaming';

/** Serves a request's stream events as SSE (agent requests and session messages alike): replay
 * from the store after `afterSeq`, then live until `done` or `error`. */
@Injectable()
export class SseResponder {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly streams: StreamHubService,
  ) {}

  /** Whether the project has stream events for this request (within retention). */
  exists(requestId: string, projectId: string): Promise<boolean> {
    return this.streams.store.exists(requestId, projectId);
  }

  /** `run`, when given, is the request's first stop: a run that cannot finish (Temporal gone)
   * still ends the stream with one error event. */
  async respond(res: Response, requestId: string, projectId: string, afterSeq: number, run?: Promise<unknown>): Promise<void> {
    await this.streams.ensureStarted(); // the store covers a late hub
    const docs = (code: string): Record<string, string> => (isErrorCode(code) ? { docs: errorDocsUrl(this.config.publicBaseUrl, code) } : {});
    const session = new SseSession(res, this.streams.hub, this.streams.store, {
      requestId,
      projectId,
      afterSeq,
      decorate: (e) => (e.type === 'error' ? docs(String(e.data.code)) : {}),
    });
    run?.catch((e: unknown) => {
      const error = e instanceof ServiceError ? e : new ServiceError('compute_unavailable', 'The compute service could not be reached.');
      session.fail('error', { code: error.code, message: error.message, ...docs(error.code) });
    });
    await session.run();
  }
}
