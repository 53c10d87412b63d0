import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from './cli-context';
import { commandAction, configOf, connectionSettings } from './cli-context';
import { startToolGateWorker } from '../start-worker';

/** Adds `worker`: runs a toolgate worker for the config's tools until it is shut down. */
export function addWorkerCommand(program: Command, context: CliContext): void {
  program
    .command('worker')
    .description("run a worker for the config's tools and policy until it is stopped (Ctrl-C)")
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        workerCommand({ options: command.optsWithGlobals<GlobalOptions>(), context }),
      ),
    );
}

async function workerCommand(input: { options: GlobalOptions; context: CliContext }): Promise<number> {
  const config = configOf(input.options);
  const target = connectionSettings(input.options, config);
  const started = await startToolGateWorker({ config, target });
  input.context.output.error(
    `toolgate worker on task queue "${target.taskQueue}" at ${target.address}, policy ${started.policy.version}` +
      (started.minter ? '' : ' (no minter key: writes carry no credential)'),
  );
  await started.run();
  return 0;
}
