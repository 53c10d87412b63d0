import { Client, Connection } from '@temporalio/client';
import type { Command } from 'commander';
import { openSqliteAuditStore } from '../audit/audit-store';
import { startApprovalsConsole } from '../console/approvals-console';
import { loadPolicyFile } from '../policy/load-policy';
import { createToolRegistry } from '../tools/tool-registry';
import type { CliContext, GlobalOptions } from './cli-context';
import { commandAction, configOf, connectionSettings, untilStopped } from './cli-context';

type ConsoleOptions = GlobalOptions & { host: string; port: string; publicUrl?: string };

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
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        consoleCommand({ options: command.optsWithGlobals<ConsoleOptions>(), context }),
      ),
    );
}

async function consoleCommand(input: { options: ConsoleOptions; context: CliContext }): Promise<number> {
  const { options, context } = input;
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    context.output.error(`error: --port takes a port number (got "${options.port}")`);
    return 2;
  }
  const config = configOf(options);
  const settings = connectionSettings(options, config);
  const policy = loadPolicyFile({
    path: config.policyPath,
    registry: createToolRegistry({ tools: config.tools }),
    keysDirectory: config.keysDirectory,
  });
  const connection = await Connection.connect({ address: settings.address, connectTimeout: '5s' });
  const audit = openSqliteAuditStore({ path: config.auditPath });
  try {
    const approvals = await startApprovalsConsole({
      client: new Client({ connection, namespace: settings.namespace }),
      taskQueue: settings.taskQueue,
      policy,
      audit,
      host: options.host,
      port,
      ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
      log: (line) => context.output.error(`[console] ${line}`),
    });
    context.output.out(
      `approvals console on ${approvals.url} (task queue "${settings.taskQueue}", policy ${policy.version})`,
    );
    try {
      await untilStopped({ signal: context.signal }).promise;
    } finally {
      await approvals.stop();
    }
    return 0;
  } finally {
    audit.close();
    await connection.close();
  }
}
