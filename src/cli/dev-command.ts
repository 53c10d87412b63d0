import { Connection } from '@temporalio/client';
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import type { DevServer } from '../dev/dev-server';
import { prepareNamespace, startDevServer } from '../dev/dev-server';
import type { CliContext, GlobalOptions } from './cli-context';
import { commandAction, untilStopped } from './cli-context';

type DevOptions = GlobalOptions & { port?: number; uiPort?: number; headless?: boolean; db?: string };

/** Adds `dev`: a local Temporal server with toolgate's namespace prepared, up until Ctrl-C. */
export function addDevCommand(program: Command, context: CliContext): void {
  program
    .command('dev')
    .description(
      "start a local Temporal dev server with toolgate's namespace prepared (retention, search attributes); " +
        'stays up until Ctrl-C',
    )
    .option('--port <n>', 'the gRPC port (default: a free one)', parsePort)
    .addOption(
      new Option('--ui-port <n>', 'the Web UI port (default: a free one)')
        .argParser(parsePort)
        .conflicts('headless'),
    )
    .option('--headless', 'no Web UI')
    .option('--db <file>', "a SQLite file that keeps the server's state across restarts (default: in memory)")
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        devCommand({ options: command.optsWithGlobals<DevOptions>(), context }),
      ),
    );
}

async function devCommand(input: { options: DevOptions; context: CliContext }): Promise<number> {
  const { options, context } = input;
  const { output } = context;
  const namespace = options.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default';
  let server: DevServer;
  try {
    server = await startDevServer({
      // The working directory, as for the config: `.toolgate/` and a relative --db live there.
      projectRoot: process.cwd(),
      port: options.port,
      uiPort: options.uiPort,
      headless: options.headless === true,
      databaseFile: options.db,
      namespace,
      log: (line) => output.error(line),
    });
  } catch (error) {
    output.error(`cannot start the Temporal dev server: ${(error as Error).message}`);
    return 3;
  }
  try {
    try {
      const connection = await Connection.connect({ address: server.address });
      try {
        await prepareNamespace({ connection, namespace });
      } finally {
        await connection.close();
      }
    } catch (error) {
      // An attribute registered with another type (in a kept --db file): only the operator can fix it.
      output.error(`cannot prepare namespace "${namespace}": ${(error as Error).message}`);
      return 2;
    }
    output.out(`Temporal dev server at ${server.address}, namespace "${namespace}" prepared for toolgate`);
    if (server.uiUrl !== undefined) output.out(`Web UI at ${server.uiUrl}`);
    output.out(`export TEMPORAL_ADDRESS=${server.address}`);
    if (namespace !== 'default') output.out(`export TEMPORAL_NAMESPACE=${namespace}`);
    await untilStopped({ signal: context.signal }).promise;
    output.error('stopping the Temporal dev server');
    return 0;
  } finally {
    await server.stop();
  }
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new InvalidArgumentError('a port is a whole number from 1 to 65535.');
  }
  return port;
}
