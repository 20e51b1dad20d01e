import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { endSessionUpdate, sessionWorkflowId } from '#libs/contracts';
import { SessionEndRequests } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';

/** How often waiting session ends are looked for (one query on a table that is usually empty). */
const POLL_MS = 2000;
/** gRPC NOT_FOUND: an Update sent to a closed workflow. */
const NOT_FOUND = 5;

/**
 * Carries out the session ends the console asked for (`session_end_requests`, docs/console.md):
 * sends each session workflow the end Update the api's DELETE /v1/sessions/{id} sends, and marks
 * the request done once the workflow has recorded the end, or has refused it (the session had
 * already ended or expired), or is closed. Anything else (Temporal unreachable, no worker took
 * the Update in time) keeps the request for the next poll, so nothing asked for is lost. Several
 * workers may send the same end: the workflow ends a session once; a later Update is refused.
 */
@Injectable()
export class SessionEndService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('session-end');
  private readonly client: Client;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;

  constructor(
    private readonly requests: SessionEndRequests,
    temporal: TemporalClientService,
  ) {
    if (!temporal.client) throw new Error('ending sessions needs TEMPORAL_ADDRESS');
    this.client = temporal.client;
  }

  onApplicationBootstrap(): void {
    this.running = this.loop();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      try {
        await this.endWaiting();
      } catch (e) {
        this.logger.warn(
          `could not read the session ends to carry out (retrying): ${e instanceof Error ? e.message : String(e)}`,
        );
      }
      await sleep(POLL_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
    }
  }

  /** Carries out every waiting end once; the number carried out. */
  async endWaiting(): Promise<number> {
    let done = 0;
    for (const request of await this.requests.waiting()) {
      if (this.stopping.signal.aborted) break;
      try {
        await this.client.workflow
          .getHandle(sessionWorkflowId(request.sessionId))
          .executeUpdate(endSessionUpdate, { args: [{ projectId: request.projectId }] });
      } catch (e) {
        if (!settled(e)) {
          const reason = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
          this.logger.warn(
            `session ${request.sessionId}: the end could not be sent (kept for the next try): ${reason}`,
          );
          await this.requests.failed(request.sessionId, reason);
          continue;
        }
      }
      await this.requests.done(request.sessionId);
      done += 1;
    }
    return done;
  }
}

/** Whether an Update's failure leaves nothing to do: the workflow refused it (the session is no
 * longer active) or is closed (its session ended or expired; the reconciler frees what it held). */
function settled(e: unknown): boolean {
  if (e instanceof WorkflowUpdateFailedError || e instanceof WorkflowNotFoundError) return true;
  const code = (e as { code?: unknown } | null)?.code ?? (e as { cause?: { code?: unknown } } | null)?.cause?.code;
  return code === NOT_FOUND || /already completed/i.test(e instanceof Error ? e.message : '');
}
