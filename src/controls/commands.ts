import type { Command } from 'commander';
import { listToolSwitches, setToolSwitch } from './client';
import { connectTemporalClient } from '../connection/temporal-connection';
import { operatorKeyOf } from '../approver-keys/commands';
import type { CliContext, GlobalOptions } from '../cli/cli-context';
import { commandAction, configOf, connectionSettings } from '../cli/cli-context';

type SwitchOptions = GlobalOptions & {
  tool: string;
  caller?: string;
  reason: string;
  as: string;
  key?: string;
};

/** Adds `disable`, `enable` and `switches`: the kill switch, flipped by an operator with their key. */
export function addControlsCommands(program: Command, context: CliContext): void {
  const { output } = context;
  for (const action of ['disable', 'enable'] as const) {
    program
      .command(action)
      .description(
        action === 'disable'
          ? 'turn a tool off on every worker, for every caller or one: new calls answer TOOL_DISABLED at ' +
              'once and calls waiting for its approval close (signed with your operator key, audited)'
          : 'turn a tool back on (signed with your operator key, audited)',
      )
      .requiredOption('--tool <name>', 'the tool')
      .option('--caller <name>', 'only this caller (default: every caller)')
      .requiredOption('--reason <text>', 'why; the model and the audit store are told')
      .requiredOption('--as <operator>', 'the operator, as named in the policy')
      .option('--key <file>', "the operator's private key (default: the config's keys directory)")
      .action(
        commandAction(context, async (_options: unknown, command: Command) => {
          const options = command.optsWithGlobals<SwitchOptions>();
          const config = configOf(options);
          const operatorKey = operatorKeyOf({ options, config, output });
          if (!operatorKey) return 2;
          const settings = connectionSettings(options, config);
          const { connection, client } = await connectTemporalClient(settings);
          try {
            const outcome = await setToolSwitch({
              client,
              taskQueue: settings.taskQueue,
              action,
              tool: options.tool,
              ...(options.caller !== undefined ? { caller: options.caller } : {}),
              operator: options.as,
              operatorKey,
              reason: options.reason,
            });
            if (options.json) output.out(JSON.stringify(outcome));
            else if (!outcome.accepted) output.error(`${outcome.code}: ${outcome.message}`);
            else {
              const scope = `${options.tool}${options.caller !== undefined ? ` for ${options.caller}` : ''}`;
              output.out(
                action === 'disable'
                  ? `${scope} is off; ${outcome.waitingCallsTold} waiting call(s) told to close`
                  : `${scope} is on`,
              );
            }
            return outcome.accepted ? 0 : 1;
          } finally {
            await connection.close();
          }
        }),
      );
  }

  program
    .command('switches')
    .description('list the tools turned off, by whom, since when and why')
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<GlobalOptions>();
        const settings = connectionSettings(options, configOf(options));
        const { connection, client } = await connectTemporalClient(settings);
        try {
          const { disabled } = await listToolSwitches({ client, taskQueue: settings.taskQueue });
          if (options.json) output.out(JSON.stringify({ disabled }));
          else if (disabled.length === 0) output.out('every tool is on');
          else
            for (const entry of disabled) {
              output.out(
                `${entry.tool}  off for ${entry.caller ?? 'every caller'} since ${entry.since} by ${entry.operator}: ${entry.reason}`,
              );
            }
          return 0;
        } finally {
          await connection.close();
        }
      }),
    );
}
