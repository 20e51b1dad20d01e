import { Controller, Get, HttpStatus, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import { checkReadiness, READINESS_PROBES, type Readiness, type ReadinessProbe } from '#libs/health';

const PROBE_TIMEOUT_MS = 2000;

/** Liveness and readiness, outside /v1 and without authentication (for load balancers). */
@Controller()
export class HealthController {
  constructor(@Inject(READINESS_PROBES) private readonly probes: readonly ReadinessProbe[]) {}

  /** The process is alive. */
  @Get('healthz')
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** PostgreSQL, Kafka and Temporal one by one; 503 when any is down. */
  @Get('readyz')
  async readyz(@Res({ passthrough: true }) res: Response): Promise<Readiness> {
    const readiness = await checkReadiness(this.probes, PROBE_TIMEOUT_MS);
    res.status(readiness.status === 'ready' ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE);
    return readiness;
  }
}
