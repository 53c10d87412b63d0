import type { Command } from 'commander';
import type { SessionStats, SessionSummary } from './session';
import { SessionOperationRefused } from '../client';
import type { CliContext, CliOutput, GlobalOptions } from '../cli/cli-context';
import { commandAction, configOf, withClient } from '../cli/cli-context';
import { operatorKeyOf } from '../approver-keys/commands';

type ListOptions = GlobalOptions & { limit?: string };
type ResetOptions = GlobalOptions & { tool?: string; as: string; key?: string; reason: string };
type EndOptions = GlobalOptions & { reason?: string; caller?: string };

/**
 * Adds `sessions list|show|reset|end`: an operator's view of the agent conversations, their budgets
 * and circuits, read from the audit store's sessions through a worker.
 */
export function addSessionCommands(program: Command, context: CliContext): void {
  const { output } = context;
  const sessions = program
    .command('sessions')
    .description(
      "list sessions; show a session's steps, codes and open circuits; reset its circuits; end it",
    );

  sessions
    .command('list')
    .description('list the sessions most recently active, newest first')
    .option('--limit <n>', 'at most this many (default 50, at most 500)')
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<ListOptions>();
        const limit = options.limit !== undefined ? Number(options.limit) : undefined;
        if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 500)) {
          output.error(`--limit: expected a whole number from 1 to 500, got "${options.limit}"`);
          return 2;
        }
        const found = await withClient(options, (client) =>
          client.sessions(limit !== undefined ? { limit } : {}),
        );
        printList({ sessions: found, options, output });
        return 0;
      }),
    );

  sessions
    .command('show')
    .description("print a session's steps, codes and open circuits")
    .argument('<session-id>', 'the session id')
    .action(
      commandAction(context, async (session: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<GlobalOptions>();
        const stats = await withClient(options, (client) => client.sessionStats(session));
        printStats({ stats, options, output });
        return 0;
      }),
    );

  sessions
    .command('reset')
    .description(
      "close a session's open circuits, so its calls are admitted again (signed with your operator key)",
    )
    .argument('<session-id>', 'the session id')
    .option('--tool <name>', "only this tool's circuit")
    .requiredOption('--reason <text>', 'why; kept with the session')
    .requiredOption('--as <operator>', 'the operator, as named in the policy')
    .option('--key <file>', "the operator's private key (default: the config's keys directory)")
    .action(
      commandAction(context, async (session: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<ResetOptions>();
        const config = configOf(options);
        const operatorKey = operatorKeyOf({ options, config, output });
        if (!operatorKey) return 2;
        return refusedOr(options, output, async () => {
          const stats = await withClient(options, (client) =>
            client.resetSession(session, {
              ...(options.tool !== undefined ? { tool: options.tool } : {}),
              operator: options.as,
              operatorKey,
              reason: options.reason,
            }),
          );
          printStats({ stats, options, output });
        });
      }),
    );

  sessions
    .command('end')
    .description(
      "end a session: its later calls are refused with SESSION_CLOSED (signed with its caller's key)",
    )
    .argument('<session-id>', 'the session id')
    .option('--reason <text>', 'why it was ended (kept with the session)')
    .option('--caller <name>', "the session's caller (default: the session's own)")
    .action(
      commandAction(context, async (session: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<EndOptions>();
        return refusedOr(options, output, async () => {
          const stats = await withClient(options, (client) =>
            client.endSession(session, {
              ...(options.reason !== undefined ? { reason: options.reason } : {}),
              ...(options.caller !== undefined ? { caller: options.caller } : {}),
            }),
          );
          printStats({ stats, options, output });
        });
      }),
    );
}

/** Runs `change`; a refusal by the worker is printed with its code and exits 1. */
async function refusedOr(
  options: GlobalOptions,
  output: CliOutput,
  change: () => Promise<void>,
): Promise<number> {
  try {
    await change();
    return 0;
  } catch (error) {
    if (!(error instanceof SessionOperationRefused)) throw error;
    if (options.json) output.out(JSON.stringify({ refused: true, code: error.code, message: error.message }));
    else output.error(`${error.code}: ${error.message}`);
    return 1;
  }
}

function printList(input: { sessions: SessionSummary[]; options: GlobalOptions; output: CliOutput }): void {
  const { sessions, options, output } = input;
  if (options.json) {
    output.out(JSON.stringify(sessions));
    return;
  }
  if (sessions.length === 0) {
    output.out('no sessions yet');
    return;
  }
  for (const session of sessions) {
    output.out(
      `${session.session}  ${session.caller ?? '(no caller yet)'}  steps ${session.steps}` +
        (session.openCircuits > 0 ? `  ${session.openCircuits} open circuit(s)` : '') +
        (session.closed ? `  closed (${session.closedReason ?? 'ended'})` : '') +
        (session.lastActivityAt !== undefined ? `  last active ${session.lastActivityAt}` : ''),
    );
  }
}

function printStats(input: { stats: SessionStats; options: GlobalOptions; output: CliOutput }): void {
  const { stats, options, output } = input;
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
      ...(stats.resets?.length
        ? [
            `  resets:        ${stats.resets.map((reset) => `${reset.at} by ${reset.operator}: ${reset.reason}`).join('; ')}`,
          ]
        : []),
    ].join('\n'),
  );
}
