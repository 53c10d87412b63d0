// The toolgate CLI, on commander: maintained, no dependencies of its own, real subcommands with help
// per command, and exitOverride/configureOutput, so `main` returns an exit code and writes through the
// output it is given instead of calling process.exit: tests drive it in-process.
import { Command, CommanderError } from 'commander';
import { addApprovalCommands } from '../approvals/commands';
import { addAuditCommands } from './audit-commands';
import { addApproverCommands } from '../approver-keys/commands';
import { addCallCommands } from '../calls/commands';
import { addCodecCommands } from './codec-commands';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { addressOf } from './cli-context';
import { addConsoleCommand } from './console-command';
import { addControlsCommands } from '../controls/commands';
import { addContractCommands } from './contract-commands';
import { addDevCommand } from './dev-command';
import { addEvalCommand } from './eval-command';
import { addGrantCommands } from '../grants/commands';
import { addKeyCommands } from './key-commands';
import { addMcpCommands } from './mcp-commands';
import { addMineCommand } from './mine-command';
import { addReportCommand } from './report-command';
import { addSessionCommands } from '../sessions/commands';
import { addWorkerCommand } from './worker-command';

export type { CliOutput } from './cli-context';

/** Options of {@link main} for a test or a program that embeds the CLI. */
export interface MainOptions {
  /** Aborting it ends a command that stays up (`dev`) as SIGINT would. */
  signal?: AbortSignal;
}

const exitCodesHelp = `
Exit codes:
  0  success
  1  the call or decision was rejected (see its code), or what was asked for was not found
  2  bad usage or config: unknown command or option, missing option or argument, bad config file
  3  Temporal unreachable (for dev: the server could not start)`;

const processOutput: CliOutput = {
  out: (text) => process.stdout.write(`${text}\n`),
  error: (text) => process.stderr.write(`${text}\n`),
};

/** Runs the CLI and resolves to its exit code; it never throws for bad input and never exits the process. */
export async function main(
  argv: readonly string[],
  output: CliOutput = processOutput,
  options: MainOptions = {},
): Promise<number> {
  const context: CliContext = { output, signal: options.signal, exitCode: 0 };
  // A fresh program per call: commander keeps parsed values on the command objects.
  const program = createProgram(context);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return context.exitCode;
  } catch (error) {
    return exitCodeOf({ error, output, options: program.opts<GlobalOptions>() });
  }
}

function createProgram(context: CliContext): Command {
  const { output } = context;
  // Set before any subcommand is added: subcommands copy these settings when they are created.
  const program = new Command('toolgate')
    .description('toolgate: the governed executor for LLM tool calls')
    .exitOverride()
    .configureOutput({
      // Commander ends what it writes with a newline; CliOutput adds one.
      writeOut: (text) => output.out(text.replace(/\n$/, '')),
      writeErr: (text) => output.error(text.replace(/\n$/, '')),
    })
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError()
    .option('--config <file>', 'your toolgate config (default: $TOOLGATE_CONFIG, else ./toolgate.config.ts)')
    .option(
      '--address <host:port>',
      'the Temporal frontend (default: $TEMPORAL_ADDRESS, else 127.0.0.1:7233)',
    )
    .option('--namespace <name>', 'the Temporal namespace (default: $TEMPORAL_NAMESPACE, else default)')
    .option('--task-queue <name>', 'the task queue (default: $TOOLGATE_TASK_QUEUE, else toolgate)')
    .option('--json', 'machine-readable output')
    .addHelpText('after', exitCodesHelp);
  addCallCommands(program, context);
  addWorkerCommand(program, context);
  addDevCommand(program, context);
  addSessionCommands(program, context);
  addKeyCommands(program, context);
  addApprovalCommands(program, context);
  addApproverCommands(program, context);
  addMcpCommands(program, context);
  addConsoleCommand(program, context);
  addMineCommand(program, context);
  addReportCommand(program, context);
  addAuditCommands(program, context);
  addControlsCommands(program, context);
  addGrantCommands(program, context);
  addEvalCommand(program, context);
  addContractCommands(program, context);
  addCodecCommands(program, context);
  return program;
}

/** Node's codes for a file or folder that cannot be used as asked (never a connection's). */
const fileSystemErrorCodes = new Set([
  'ENOENT',
  'EISDIR',
  'ENOTDIR',
  'EACCES',
  'EPERM',
  'EEXIST',
  'ENOTEMPTY',
  'EROFS',
  'ENOSPC',
  'ENAMETOOLONG',
  'ELOOP',
]);

/** The exit code for what a command threw, after saying what went wrong; rethrows what is a bug. */
function exitCodeOf(input: { error: unknown; output: CliOutput; options: GlobalOptions }): number {
  const { error, output, options } = input;
  // Commander has already written its message (and the command's help); only help asked for is a success.
  if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
  const name = (error as Error).name;
  if (name === 'ConfigurationError' || name === 'ToolDefinitionError') {
    output.error((error as Error).message);
    return 2;
  }
  if (name === 'WorkflowNotFoundError') {
    output.error(`not found: nothing with that id is visible to you (${(error as Error).message})`);
    return 1;
  }
  // A path the user gave that cannot be read or written (missing, a folder, no permission): their fix.
  if (fileSystemErrorCodes.has(String((error as NodeJS.ErrnoException).code))) {
    output.error((error as Error).message);
    return 2;
  }
  if (name === 'TransportError' || /UNAVAILABLE|ECONNREFUSED|Failed to connect/i.test(String(error))) {
    output.error(`cannot reach Temporal at ${addressOf(options)}: is it running? (toolgate dev starts one)`);
    return 3;
  }
  throw error;
}
