import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
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

/** The /metrics listener of an app that serves no HTTP otherwise (worker, relay, projector). */
export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Listens on `port` (all interfaces, like the api) for Prometheus's scrapes. */
export async function startMetricsServer(port: number, extra?: ExtraMetrics): Promise<MetricsServer> {
  const server = createServer((req, res) => void serveMetrics(req, res, extra));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve());
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

/** Reads another Prometheus endpoint's text (the Temporal runtime's), for merging into /metrics. */
export function scrape(url: string): ExtraMetrics {
  return async () => {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return res.ok ? res.text() : '';
  };
}
