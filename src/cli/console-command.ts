import { Client, Connection } from '@temporalio/client';
import type { Command } from 'commander';
import type { AuditStore } from '../audit/audit-store';
import { openSqliteAuditStore } from '../audit/audit-store';
import { startApprovalsConsole } from '../console/approvals-console';
import type { ConsolePolicy } from '../console/console-policy';
import { loadConsolePolicy } from '../console/console-policy';
import { loadPolicyFile } from '../policy/load-policy';
import { defaultTaskQueue } from '../shared/temporal';
import { createToolRegistry } from '../tools/tool-registry';
import type { CliContext, GlobalOptions } from './cli-context';
import { commandAction, configOf, connectionSettings, untilStopped } from './cli-context';

type ConsoleOptions = GlobalOptions & {
  host: string;
  port: string;
  publicUrl?: string;
  policy?: string;
  audit?: string;
  exitWithParent?: boolean;
};

/** Adds `console`: serves the approvals web console until it is stopped (Ctrl-C). */
export function addConsoleCommand(program: Command, context: CliContext): void {
  program
    .command('console')
    .description('serve the approvals web console: approvers sign in with their browser key and decide')
    .option(
      '--host <address>',
      'the address to listen on (elsewhere than loopback: put it behind HTTPS)',
      '127.0.0.1',
    )
    .option('--port <number>', 'the port to listen on', '4300')
    .option('--public-url <url>', 'the URL browsers use, when a reverse proxy serves the console')
    .option(
      '--policy <file>',
      "run apart from the config and its keys folder: this policy file alone, with approvers' and " +
        'operators\' keys inline ("ed25519:<hex>") or as .pub files next to it (then give --address, ' +
        '--namespace, --task-queue and --audit as flags)',
    )
    .option('--audit <file>', 'the audit store the history page reads and relayed decisions are logged to')
    .option(
      '--exit-with-parent',
      'stop when standard input closes: for a program that runs the console as its child',
    )
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        consoleCommand({ options: command.optsWithGlobals<ConsoleOptions>(), context }),
      ),
    );
}

/** What the console serves from: the Temporal settings, the policy and the audit store's path. */
interface ConsoleSources {
  settings: { address: string; namespace: string; taskQueue: string };
  policy: ConsolePolicy;
  auditPath: string | undefined;
}

/**
 * With --policy, the console reads that file (and the .pub files it names) and nothing of the config:
 * no keys folder, no tool modules. Otherwise it loads the config as every command does.
 */
function sourcesOf(options: ConsoleOptions): ConsoleSources {
  if (options.policy !== undefined) {
    return {
      settings: {
        address: options.address ?? process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
        namespace: options.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default',
        taskQueue: options.taskQueue ?? process.env.TOOLGATE_TASK_QUEUE ?? defaultTaskQueue,
      },
      policy: loadConsolePolicy({ path: options.policy }),
      auditPath: options.audit,
    };
  }
  const config = configOf(options);
  return {
    settings: connectionSettings(options, config),
    policy: loadPolicyFile({
      path: config.policyPath,
      registry: createToolRegistry({ tools: config.tools }),
      keysDirectory: config.keysDirectory,
    }),
    auditPath: options.audit ?? config.auditPath,
  };
}

async function consoleCommand(input: { options: ConsoleOptions; context: CliContext }): Promise<number> {
  const { options, context } = input;
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    context.output.error(`error: --port takes a port number (got "${options.port}")`);
    return 2;
  }
  const { settings, policy, auditPath } = sourcesOf(options);
  const connection = await Connection.connect({ address: settings.address, connectTimeout: '5s' });
  let audit: AuditStore | undefined;
  try {
    audit = auditPath !== undefined ? openSqliteAuditStore({ path: auditPath }) : undefined;
    const approvals = await startApprovalsConsole({
      client: new Client({ connection, namespace: settings.namespace }),
      taskQueue: settings.taskQueue,
      policy,
      ...(audit ? { audit } : {}),
      host: options.host,
      port,
      ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
      log: (line) => context.output.error(`[console] ${line}`),
    });
    context.output.out(
      `approvals console on ${approvals.url} (task queue "${settings.taskQueue}", policy ${policy.version})`,
    );
    // A parent that runs the console keeps its standard input open; when the parent ends, however it
    // ends, the pipe closes and the console stops with it instead of living on as an orphan.
    if (options.exitWithParent) process.stdin.resume();
    try {
      await untilStopped({ signal: context.signal, stdin: options.exitWithParent === true }).promise;
    } finally {
      if (options.exitWithParent) process.stdin.pause();
      await approvals.stop();
    }
    return 0;
  } finally {
    audit?.close();
    await connection.close();
  }
}
