import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { METRICS_CONTENT_TYPE, metricsText } from './registry.js';

/** A source of more exposition text to append (the Temporal SDK's own Prometheus endpoint). */
export type ExtraMetrics = () => Promise<string>;

/** Answers GET /metrics with this process's metrics (and `extra`'s); other paths 404. */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, extra?: ExtraMetrics): Promise<void> {
  if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
    return;
  }
  try {
    const [own, more] = await Promise.all([metricsText(), extra ? extra().catch(() => '') : Promise.resolve('')]);
    res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(more ? `${own}\n${more}` : own);
  } catch (e) {
    res
      .writeHead(500, { 'content-type': 'text/plain' })
      .end(`metrics failed: ${e instanceof Error ? e.message : String(e)}\n`);
  }
}

/** An app's /metrics listener, apart from its public port (every app has one: METRICS_HOST and
 * API_, CONSOLE_, WORKER_, RELAY_, PROJECTOR_METRICS_PORT). */
export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Listens on `host`:`port` (AppConfig's metrics.host: loopback unless the deployment says
 * otherwise, e.g. the chart's pods, scraped on their own address) for Prometheus's scrapes. */
export async function startMetricsServer(
  port: number,
  options: { readonly host: string; readonly extra?: ExtraMetrics },
): Promise<MetricsServer> {
  const server = createServer((req, res) => void serveMetrics(req, res, options.extra));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Starts the /metrics listener of an app with a public HTTP server (api, console) beside it, on
 * `port` (0: none), and closes it when that server closes. */
export async function serveMetricsBeside(publicServer: Server, port: number, host: string): Promise<void> {
  if (!port) return;
  const metrics = await startMetricsServer(port, { host });
  publicServer.once('close', () => void metrics.close());
}

/** Reads another Prometheus endpoint's text (the Temporal runtime's), for merging into /metrics. */
export function scrape(url: string): ExtraMetrics {
  return async () => {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return res.ok ? res.text() : '';
  };
}
