import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Client, Connection } from '@temporalio/client';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import type { ReadinessProbe } from '#libs/health';

/** The api's Temporal client. The connection is lazy, so the api starts (and /readyz answers
 * 503) while Temporal is down, and connects once it is up. */
@Injectable()
export class TemporalClientService implements OnApplicationShutdown {
  readonly connection: Connection;
  readonly client: Client;

  constructor(@Inject(APP_CONFIG) readonly config: AppConfig) {
    this.connection = Connection.lazy({ address: config.temporal.address });
    this.client = new Client({ connection: this.connection, namespace: config.temporal.namespace });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connection.close();
  }
}

/** Answers when Temporal's frontend reports SERVING. Its own connection has no retry interceptor:
 * a probe must fail fast, and a retry timer must not outlive the connection. */
@Injectable()
export class TemporalProbe implements ReadinessProbe, OnApplicationShutdown {
  readonly name = 'temporal';
  private readonly connection: Connection;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.connection = Connection.lazy({ address: config.temporal.address, interceptors: [] });
  }

  async check(signal: AbortSignal): Promise<void> {
    const { connection } = this;
    const response = await connection.withAbortSignal(signal, () => connection.healthService.check({}));
    // 1 = SERVING in grpc.health.v1.HealthCheckResponse.ServingStatus.
    if (response.status !== 1) throw new Error(`health status ${String(response.status)}`);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connection.close();
  }
}

@Module({ providers: [TemporalClientService, TemporalProbe], exports: [TemporalClientService, TemporalProbe] })
export class TemporalClientModule {}
