import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from './cli-context';
import { commandAction, configOf, connectionSettings } from './cli-context';
import { startToolGateWorker } from '../start-worker';
import type { LoadedConfig } from '../config';
import type { MetricsEndpointOptions } from '../observability/metrics-server';
import { installSdkMetrics } from '../observability/metrics-server';
import { tracingFromConfig } from '../observability/tracing';
import { ConfigurationError } from '../policy/load-policy';

type WorkerOptions = GlobalOptions & { metricsPort?: string };

/** Adds `worker`: runs a toolgate worker for the config's tools until it is shut down. */
export function addWorkerCommand(program: Command, context: CliContext): void {
  program
    .command('worker')
    .description("run a worker for the config's tools and policy until it is stopped (Ctrl-C)")
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics on GET /metrics at this port (default: $TOOLGATE_METRICS_PORT, else config metrics.port, else off)',
    )
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        workerCommand({ options: command.optsWithGlobals<WorkerOptions>(), context }),
      ),
    );
}

async function workerCommand(input: { options: WorkerOptions; context: CliContext }): Promise<number> {
  const { output } = input.context;
  const config = configOf(input.options);
  const target = connectionSettings(input.options, config);
  const metrics = metricsEndpointOf({ options: input.options, config, env: process.env });
  // Before any connection: the Temporal runtime (and its Prometheus exporter) is installed once per process.
  const sdk = metrics ? await installSdkMetrics() : undefined;
  if (sdk && !sdk.ok) output.error(`the Temporal SDK's metrics are not exported: ${sdk.reason}`);
  const tracing = tracingFromConfig({
    ...(config.tracing ? { config: config.tracing } : {}),
    env: process.env,
    defaultServiceName: 'toolgate-worker',
  });
  try {
    const started = await startToolGateWorker({
      config,
      target,
      metrics: metrics ?? false,
      ...(sdk?.ok ? { sdkMetricsUrl: sdk.url } : {}),
      ...(tracing ? { tracing } : {}),
    });
    output.error(
      `toolgate worker on task queue "${target.taskQueue}" at ${target.address}, policy ${started.policy.version}` +
        (started.minter ? '' : ' (no minter key: writes carry no credential)') +
        (started.metrics ? `, metrics at ${started.metrics.url}` : '') +
        (tracing ? ', traces exported over OTLP' : ''),
    );
    await started.run();
  } finally {
    await tracing?.shutdown();
  }
  return 0;
}

/** The metrics endpoint: `--metrics-port`, else TOOLGATE_METRICS_PORT, else the config's; off without a port; host from TOOLGATE_METRICS_HOST, else the config's, else loopback. */
function metricsEndpointOf(input: {
  options: WorkerOptions;
  config: LoadedConfig;
  env: NodeJS.ProcessEnv;
}): MetricsEndpointOptions | undefined {
  const { options, config, env } = input;
  const given = options.metricsPort ?? env.TOOLGATE_METRICS_PORT;
  // TOOLGATE_METRICS_HOST (e.g. 0.0.0.0 in a container Prometheus scrapes from another) wins over the config's host.
  const host = env.TOOLGATE_METRICS_HOST ? { host: env.TOOLGATE_METRICS_HOST } : {};
  if (given === undefined || given === '') return config.metrics ? { ...config.metrics, ...host } : undefined;
  const port = Number(given);
  if (!/^\d+$/.test(given) || port > 65_535) {
    const source = options.metricsPort !== undefined ? '--metrics-port' : 'TOOLGATE_METRICS_PORT';
    throw new ConfigurationError(`${source}: "${given}" is not a port; give a number from 0 to 65535`);
  }
  return { ...config.metrics, port, ...host };
}
