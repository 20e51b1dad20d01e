import { Controller, Get, HttpStatus, Inject, Logger, Res } from '@nestjs/common';
import type { Response } from 'express';
import { checkReadiness, READINESS_PROBES, type Readiness, type ReadinessProbe } from '#libs/health';

const PROBE_TIMEOUT_MS = 2000;

/** Liveness and readiness, outside /v1 and without authentication (for load balancers). */
@Controller()
export class HealthController {
  private readonly logger = new Logger('readyz');

  constructor(@Inject(READINESS_PROBES) private readonly probes: readonly ReadinessProbe[]) {}

  /** The process is alive. */
  @Get('healthz')
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** PostgreSQL, Kafka and Temporal one by one; 503 when any is down. */
  @Get('readyz')
  async readyz(@Res({ passthrough: true }) res: Response): Promise<Readiness> {
    const readiness = await checkReadiness(this.probes, PROBE_TIMEOUT_MS, (name, e) =>
      this.logger.warn(`${name} is down: ${e instanceof Error ? e.message : String(e)}`),
    );
    res.status(readiness.status === 'ready' ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE);
    return readiness;
  }
}
