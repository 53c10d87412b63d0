import type { Command } from 'commander';
import type { AuditStore } from '../audit/audit-store';
import type { AuditStoreConfig } from '../audit/open-audit-store';
import { auditUrlVariable, openAuditStore } from '../audit/open-audit-store';
import type { TemporalConnectionSettings } from '../connection/temporal-connection';
import { connectTemporalClient, resolveTemporalConnection } from '../connection/temporal-connection';
import { startApprovalsConsole } from '../console/approvals-console';
import type { ConsolePolicy } from '../console/console-policy';
import { loadConsolePolicy } from '../console/console-policy';
import { loadPolicyFile } from '../policy/load-policy';
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
    .option(
      '--audit <file or url>',
      'the audit store the history page reads and relayed decisions are logged to: a SQLite file or a ' +
        `PostgreSQL URL (default: ${auditUrlVariable}, then the config's)`,
    )
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

/** What the console serves from: the Temporal settings, the policy and where the audit store is. */
interface ConsoleSources {
  settings: TemporalConnectionSettings;
  policy: ConsolePolicy;
  audit: AuditStoreConfig | undefined;
}

/** The --audit flag, a SQLite file or a PostgreSQL URL: it wins over the environment and the config. */
function auditFlag(value: string): AuditStoreConfig {
  return /^postgres(ql)?:\/\//.test(value) ? { auditUrl: value, env: {} } : { auditPath: value, env: {} };
}

/**
 * With --policy, the console reads that file (and the .pub files it names) and nothing of the config:
 * no keys folder, no tool modules. Otherwise it loads the config as every command does.
 */
function sourcesOf(options: ConsoleOptions): ConsoleSources {
  if (options.policy !== undefined) {
    return {
      // No config: the flags, else the environment (TLS, API key and codec keys too), else the defaults.
      settings: resolveTemporalConnection({
        env: process.env,
        overrides: {
          ...(options.address !== undefined ? { address: options.address } : {}),
          ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
          ...(options.taskQueue !== undefined ? { taskQueue: options.taskQueue } : {}),
        },
      }),
      policy: loadConsolePolicy({ path: options.policy }),
      audit:
        options.audit !== undefined
          ? auditFlag(options.audit)
          : process.env[auditUrlVariable]
            ? { env: process.env }
            : undefined,
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
    audit: options.audit !== undefined ? auditFlag(options.audit) : { ...config, env: process.env },
  };
}

async function consoleCommand(input: { options: ConsoleOptions; context: CliContext }): Promise<number> {
  const { options, context } = input;
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    context.output.error(`error: --port takes a port number (got "${options.port}")`);
    return 2;
  }
  const { settings, policy, audit: auditSource } = sourcesOf(options);
  const { connection, client: temporal } = await connectTemporalClient(settings);
  let audit: AuditStore | undefined;
  try {
    audit = auditSource !== undefined ? await openAuditStore(auditSource) : undefined;
    const approvals = await startApprovalsConsole({
      client: temporal,
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
    await audit?.close();
    await connection.close();
  }
}
