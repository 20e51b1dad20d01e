import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { APP_CONFIG, temporalConnectionOptions, type AppConfig } from '#libs/config';
import { temporalClientTracing } from '#libs/observability';
import type { ReadinessProbe } from '#libs/health';
import { payloadDataConverter } from './payload-codec.js';
import { updateStartInterceptor } from './update-start.js';

/**
 * gRPC's reconnect backoff, capped. grpc-js backs off from 1 s by 1.6x up to 120 s between
 * connection attempts, and a call made while the channel waits fails at once: after an outage of
 * 15 s the api went on answering 502 for up to 17 s after Temporal was serving again. With a 1 s
 * cap (from 100 ms) the channel tries at least every second, so the api recovers within about a
 * second (measured by `npm run drill`, docs/reliability.md).
 */
export const RECONNECT_CHANNEL_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1000,
} as const;

/** The api's Temporal client (also the worker's, for the reconciler's schedule), its payloads
 * encrypted (payload-codec.ts), traced when tracing is on (a span per start, continued by the workflow). The connection is lazy, so the api starts (and /readyz answers
 * 503) while Temporal is down, and connects once it is up. */
@Injectable()
export class TemporalClientService implements OnApplicationShutdown {
  /** Undefined when no Temporal address is configured. */
  readonly connection: Connection | undefined;
  readonly client: Client | undefined;
  private closing = false;
  /** When the last scheduled gRPC retry fires: the SDK's retry timers cannot be cancelled, and
   * one that fires after the channel is closed throws, so shutdown waits for them. */
  private retriesPendingUntil = 0;

  constructor(@Inject(APP_CONFIG) readonly config: AppConfig) {
    const { address, namespace } = config.temporal;
    const retry = defaultGrpcRetryOptions({ maxAttempts: 5, maxIntervalMs: () => 1000 });
    const interceptor = makeGrpcRetryInterceptor({
      retryableDecider: (attempt, status) => !this.closing && retry.retryableDecider(attempt, status),
      delayFunction: (attempt, status) => {
        const delay = retry.delayFunction(attempt, status);
        this.retriesPendingUntil = Math.max(this.retriesPendingUntil, Date.now() + delay);
        return delay;
      },
    });
    this.connection = address
      ? Connection.lazy({
          address,
          ...temporalConnectionOptions(config.engines.temporal),
          connectTimeout: '3 seconds',
          interceptors: [interceptor],
          channelArgs: RECONNECT_CHANNEL_ARGS,
        })
      : undefined;
    this.client =
      this.connection &&
      new Client({
        connection: this.connection,
        namespace,
        dataConverter: payloadDataConverter(config),
        interceptors: { workflow: [...temporalClientTracing(), updateStartInterceptor] },
      });
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    const wait = this.retriesPendingUntil - Date.now();
    if (wait > 0) await sleep(wait + 50);
    await this.connection?.close();
  }
}

/** Answers when Temporal's frontend reports SERVING. Its own connection has no retry interceptor:
 * a probe must fail fast, and a retry timer must not outlive the connection. */
@Injectable()
export class TemporalProbe implements ReadinessProbe, OnApplicationShutdown {
  readonly name = 'temporal';
  private readonly connection: Connection | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    const { address } = config.temporal;
    this.connection = address
      ? Connection.lazy({
          address,
          ...temporalConnectionOptions(config.engines.temporal),
          interceptors: [],
          channelArgs: RECONNECT_CHANNEL_ARGS,
        })
      : undefined;
  }

  async check(signal: AbortSignal): Promise<void> {
    const { connection } = this;
    if (!connection) throw new Error('TEMPORAL_ADDRESS is not configured');
    const response = await connection.withAbortSignal(signal, () => connection.healthService.check({}));
    // 1 = SERVING in grpc.health.v1.HealthCheckResponse.ServingStatus.
    if (response.status !== 1) throw new Error(`health status ${String(response.status)}`);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connection?.close();
  }
}

@Module({ providers: [TemporalClientService, TemporalProbe], exports: [TemporalClientService, TemporalProbe] })
export class TemporalClientModule {}
