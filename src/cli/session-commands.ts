import type { Command } from 'commander';
import type { SessionStats } from '../shared/session';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { commandAction, withClient } from './cli-context';

type ResetOptions = GlobalOptions & { tool?: string };
type EndOptions = GlobalOptions & { reason?: string };

/** Adds `sessions show|reset|end`: an operator's view of one agent conversation's budget and circuits. */
export function addSessionCommands(program: Command, context: CliContext): void {
  const { output } = context;
  const sessions = program
    .command('sessions')
    .description("show a session's steps, codes and open circuits; reset its circuits; end it");

  sessions
    .command('show')
    .description("print a session's steps, codes and open circuits")
    .argument('<session-id>', 'the session id')
    .action(
      commandAction(context, async (session: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<GlobalOptions>();
        const stats = await withClient(options, (client) => client.sessionStats(session));
        printStats({ session, stats, options, output });
        return 0;
      }),
    );

  sessions
    .command('reset')
    .description("close a session's open circuits, so its calls are admitted again")
    .argument('<session-id>', 'the session id')
    .option('--tool <name>', "only this tool's circuit")
    .action(
      commandAction(context, async (session: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<ResetOptions>();
        const stats = await withClient(options, (client) =>
          client.resetSession(session, options.tool !== undefined ? { tool: options.tool } : {}),
        );
        printStats({ session, stats, options, output });
        return 0;
      }),
    );

  sessions
    .command('end')
    .description('end a session: its later calls are refused with SESSION_CLOSED')
    .argument('<session-id>', 'the session id')
    .option('--reason <text>', 'why it was ended (kept with the session)')
    .action(
      commandAction(context, async (session: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<EndOptions>();
        const stats = await withClient(options, (client) =>
          client.endSession(session, options.reason !== undefined ? { reason: options.reason } : {}),
        );
        printStats({ session, stats, options, output });
        return 0;
      }),
    );
}

function printStats(input: {
  session: string;
  stats: SessionStats | null;
  options: GlobalOptions;
  output: CliOutput;
}): void {
  const { session, stats, options, output } = input;
  if (stats === null) {
    output.out(options.json ? JSON.stringify({ session, closed: true }) : `session ${session} is ended`);
    return;
  }
  if (options.json) {
    output.out(JSON.stringify(stats));
    return;
  }
  const codes = Object.entries(stats.codeCounts)
    .map(([code, count]) => `${code}:${count}`)
    .join(' ');
  const circuits = Object.entries(stats.openCircuits)
    .map(([tool, circuit]) => `${tool} (${circuit.reason})`)
    .join(', ');
  output.out(
    [
      `session ${stats.session} of ${stats.caller ?? '(no caller yet)'}${stats.closed ? `, closed (${stats.closedReason ?? 'ended'})` : ''}`,
      `  steps:         ${stats.steps}/${stats.stepBudget}`,
      `  codes:         ${codes || '(none)'}`,
      `  open circuits: ${circuits || '(none)'}`,
    ].join('\n'),
  );
}
