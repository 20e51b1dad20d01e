import { Controller, Get, HttpStatus, Logger, Res } from '@nestjs/common';
import type { Response } from 'express';
import { checkReadiness, type Readiness } from '#libs/health';
import { PostgresProbe } from '#libs/persistence';

const PROBE_TIMEOUT_MS = 2000;

/** Liveness and readiness for the load balancer and Kubernetes' probes (no session needed). The
 * console needs PostgreSQL only: it never talks to Kafka or Temporal. */
@Controller()
export class HealthController {
  private readonly logger = new Logger('readyz');

  constructor(private readonly postgres: PostgresProbe) {}

  /** The process is alive. */
  @Get('healthz')
  healthz(@Res({ passthrough: true }) res: Response): { status: 'ok' } {
    res.setHeader('Cache-Control', 'no-store');
    return { status: 'ok' };
  }

  /** PostgreSQL answers; 503 otherwise. */
  @Get('readyz')
  async readyz(@Res({ passthrough: true }) res: Response): Promise<Readiness> {
    const readiness = await checkReadiness([this.postgres], PROBE_TIMEOUT_MS, (name, e) =>
      this.logger.warn(`${name} is down: ${e instanceof Error ? e.message : String(e)}`),
    );
    res
      .status(readiness.status === 'ready' ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE)
      .setHeader('Cache-Control', 'no-store');
    return readiness;
  }
}
