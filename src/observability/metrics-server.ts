// The worker's Prometheus endpoint: toolgate's own metrics and, when this process installed the
// Temporal runtime with its Prometheus exporter, the SDK's worker metrics, on one GET /metrics.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createNetServer } from 'node:net';
import { Runtime } from '@temporalio/worker';
import type { ToolGateMetrics } from './metrics';

/** Where the endpoint listens: loopback unless a host is configured; off unless a port is. */
export interface MetricsEndpointOptions {
  port: number;
  /** Default 127.0.0.1: a scraper on another host needs `0.0.0.0` (or an address) set on purpose. */
  host?: string;
}

/** A running metrics endpoint; `close()` stops it. */
export interface MetricsEndpoint {
  /** `http://host:port/metrics`, with the port actually bound (port 0 picks a free one). */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves GET /metrics (Prometheus text format): `metrics`' registry, followed by the Temporal SDK's
 * own metrics read from `sdkMetricsUrl` when given (see `installSdkMetrics`). Anything else is 404.
 * A scrape that cannot read the SDK's exporter still answers with toolgate's metrics.
 */
export async function serveMetrics(input: {
  metrics: ToolGateMetrics;
  endpoint: MetricsEndpointOptions;
  sdkMetricsUrl?: string;
}): Promise<MetricsEndpoint> {
  const { registry } = input.metrics;
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    void (async () => {
      const own = await registry.metrics();
      const sdk = input.sdkMetricsUrl ? await readSdkMetrics(input.sdkMetricsUrl) : '';
      response.writeHead(200, { 'content-type': registry.contentType }).end(`${own}\n${sdk}`);
    })().catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(error)}\n`);
    });
  });
  const host = input.endpoint.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(input.endpoint.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readSdkMetrics(url: string): Promise<string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return response.ok ? await response.text() : '';
  } catch {
    return ''; // the SDK's exporter is not up yet (no worker polled) or went away: toolgate's metrics still count
  }
}

/**
 * Installs the Temporal runtime with its Prometheus exporter bound on loopback (a free port), so the
 * SDK's worker metrics (`temporal_*`) can be served through toolgate's endpoint. The runtime can be
 * installed once per process, before any connection: when something installed it already (a test, an
 * embedding program), the SDK's metrics are not exported and the reason says so.
 */
export async function installSdkMetrics(): Promise<
  { ok: true; url: string } | { ok: false; reason: string }
> {
  const port = await freeLoopbackPort();
  const bindAddress = `127.0.0.1:${port}`;
  try {
    Runtime.install({ telemetryOptions: { metrics: { prometheus: { bindAddress } } } });
  } catch (error) {
    return {
      ok: false,
      reason:
        `the Temporal runtime was installed before toolgate's metrics (${(error as Error).message}); ` +
        'install it with telemetryOptions.metrics.prometheus yourself to export the SDK metrics',
    };
  }
  return { ok: true, url: `http://${bindAddress}/metrics` };
}

/** A port free on loopback now (the SDK binds it a moment later; a clash fails the worker's start). */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
