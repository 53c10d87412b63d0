import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { ToolGateClient } from '../client';
import { loadConfig } from '../config';
import type { LoadedConfig } from '../config';
import { openSqliteAuditStore } from '../audit/audit-store';
import { ApprovalAdmin } from '../admin/approvals';
import { createCredentialMinter } from '../keys/credential-minter';
import type { KeyOwner } from '../keys/key-files';
import { generateKeyPairFiles, keyPaths, readPrivateKey } from '../keys/key-files';
import { loadPolicyFile } from '../policy/load-policy';
import { defaultTaskQueue } from '../shared/temporal';
import { createToolRegistry } from '../tools/tool-registry';
import { createToolGateWorker } from '../worker';
import { prebuildWorkflowBundle } from '../workflow-bundle';
import { formatResult } from './format-result';

const usage = `toolgate: the governed executor for LLM tool calls

Usage:
  toolgate call --caller NAME --tool NAME --args JSON [--session ID] [--intent ID] [--json]
  toolgate status CALL_ID [--wait] [--json]
  toolgate definitions [--caller NAME]
  toolgate worker
  toolgate sessions show|reset|end SESSION_ID [--tool NAME] [--reason TEXT] [--json]
  toolgate keys generate (--caller NAME | --approver NAME | --minter) [--replace]
  toolgate approvals list [--json]
  toolgate approvals show CALL_ID [--json]
  toolgate approvals approve|deny CALL_ID --as APPROVER [--reason TEXT] [--key FILE] [--json]

Options for every command:
  --config FILE       your toolgate config (default: $TOOLGATE_CONFIG, else ./toolgate.config.ts)
  --address HOST:PORT the Temporal frontend (default: $TEMPORAL_ADDRESS, else 127.0.0.1:7233)
  --namespace NAME    (default: $TEMPORAL_NAMESPACE, else default)
  --task-queue NAME   (default: $TOOLGATE_TASK_QUEUE, else toolgate)
  --json              machine-readable output

Exit codes: 0 the call succeeded, 1 it was rejected (see its code), 2 bad usage or config, 3 Temporal unreachable.`;

const options = {
  config: { type: 'string' },
  address: { type: 'string' },
  namespace: { type: 'string' },
  'task-queue': { type: 'string' },
  json: { type: 'boolean', default: false },
  caller: { type: 'string' },
  tool: { type: 'string' },
  args: { type: 'string' },
  session: { type: 'string' },
  intent: { type: 'string' },
  wait: { type: 'boolean', default: false },
  approver: { type: 'string' },
  minter: { type: 'boolean', default: false },
  replace: { type: 'boolean', default: false },
  as: { type: 'string' },
  reason: { type: 'string' },
  key: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

/** A mistake in how the CLI was called; reported with the usage, exit code 2. */
class UsageError extends Error {}

/** Where output goes; tests pass their own. */
export interface CliOutput {
  out: (text: string) => void;
  error: (text: string) => void;
}

const processOutput: CliOutput = {
  out: (text) => process.stdout.write(`${text}\n`),
  error: (text) => process.stderr.write(`${text}\n`),
};

/** Runs the CLI and resolves to its exit code; it never throws for bad input. */
export async function main(argv: readonly string[], output: CliOutput = processOutput): Promise<number> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (error) {
    output.error(`${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    output.out(usage);
    return command === undefined && !values.help ? 2 : 0;
  }
  try {
    switch (command) {
      case 'call':
        return await callCommand({ values, output });
      case 'status':
        return await statusCommand({ values, callId: rest[0], output });
      case 'definitions':
        return definitionsCommand({ values, output });
      case 'worker':
        return await workerCommand({ values, output });
      case 'keys':
        return keysCommand({ values, action: rest[0], output });
      case 'sessions':
        return await sessionsCommand({ values, action: rest[0], session: rest[1], output });
      case 'approvals':
        return await approvalsCommand({ values, action: rest[0], callId: rest[1], output });
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    const name = (error as Error).name;
    if (error instanceof UsageError) {
      output.error(`${error.message}\n\n${usage}`);
      return 2;
    }
    if (name === 'ConfigurationError' || name === 'ToolDefinitionError') {
      output.error((error as Error).message);
      return 2;
    }
    if (name === 'WorkflowNotFoundError') {
      output.error(`not found: nothing with that id is visible to you (${(error as Error).message})`);
      return 1;
    }
    if (name === 'TransportError' || /UNAVAILABLE|ECONNREFUSED|Failed to connect/i.test(String(error))) {
      output.error(`cannot reach Temporal at ${addressOf(values)}: is it running? (npm start brings one up)`);
      return 3;
    }
    throw error;
  }
}

function addressOf(values: Values): string {
  return values.address ?? process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
}

function connectionSettings(values: Values, config: LoadedConfig) {
  return {
    address: values.address ?? process.env.TEMPORAL_ADDRESS ?? config.temporal?.address ?? '127.0.0.1:7233',
    namespace: values.namespace ?? process.env.TEMPORAL_NAMESPACE ?? config.temporal?.namespace ?? 'default',
    taskQueue:
      values['task-queue'] ??
      process.env.TOOLGATE_TASK_QUEUE ??
      config.temporal?.taskQueue ??
      defaultTaskQueue,
  };
}

function configOf(values: Values): LoadedConfig {
  const explicit = values.config ?? process.env.TOOLGATE_CONFIG;
  if (explicit) return loadConfig({ path: explicit });
  const candidates = ['toolgate.config.ts', 'toolgate.config.js'].map((name) => resolve(name));
  return loadConfig({ path: candidates.find((candidate) => existsSync(candidate)) ?? candidates[0]! });
}

async function withClient<T>(values: Values, use: (client: ToolGateClient) => Promise<T>): Promise<T> {
  const config = configOf(values);
  const settings = connectionSettings(values, config);
  const registry = createToolRegistry({ tools: config.tools });
  const policy = loadPolicyFile({ path: config.policyPath, registry, keysDirectory: config.keysDirectory });
  const connection = await Connection.connect({ address: settings.address, connectTimeout: '5s' });
  try {
    const client = new ToolGateClient({
      client: new Client({ connection, namespace: settings.namespace }),
      tools: config.tools,
      taskQueue: settings.taskQueue,
      policy,
      callerKey: (caller) => privateKeyOf({ config, owner: { kind: 'caller', name: caller } }),
    });
    return await use(client);
  } finally {
    await connection.close();
  }
}

async function callCommand(input: { values: Values; output: CliOutput }): Promise<number> {
  const { values, output } = input;
  const missing = (['caller', 'tool', 'args'] as const).filter((name) => values[name] === undefined);
  if (missing.length) throw new UsageError(`call needs ${missing.map((name) => `--${name}`).join(', ')}`);
  const result = await withClient(values, (client) =>
    client.call({
      session: values.session ?? 'cli',
      caller: values.caller!,
      tool: values.tool!,
      arguments: values.args!,
      ...(values.intent !== undefined ? { intentId: values.intent } : {}),
    }),
  );
  output.out(values.json ? JSON.stringify(result) : formatResult(result));
  return result.ok ? 0 : 1;
}

async function statusCommand(input: {
  values: Values;
  callId: string | undefined;
  output: CliOutput;
}): Promise<number> {
  const { values, callId, output } = input;
  if (!callId) throw new UsageError('status needs a call id (tc-...)');
  const result = await withClient(values, (client) => client.result(callId, { wait: values.wait }));
  if (result === null) {
    output.out(
      values.json ? JSON.stringify({ callId, status: 'running' }) : `${callId}: running, no answer yet`,
    );
    return 0;
  }
  output.out(values.json ? JSON.stringify(result) : formatResult(result));
  return result.ok ? 0 : 1;
}

function definitionsCommand(input: { values: Values; output: CliOutput }): number {
  const config = configOf(input.values);
  const registry = createToolRegistry({ tools: config.tools });
  const policy = loadPolicyFile({ path: config.policyPath, registry, keysDirectory: config.keysDirectory });
  const only =
    input.values.caller !== undefined ? (policy.callerPolicy(input.values.caller)?.tools ?? []) : undefined;
  input.output.out(JSON.stringify(registry.definitions(only ? { only } : {}), null, 2));
  return 0;
}

async function workerCommand(input: { values: Values; output: CliOutput }): Promise<number> {
  const config = configOf(input.values);
  const settings = connectionSettings(input.values, config);
  const registry = createToolRegistry({ tools: config.tools });
  const policy = loadPolicyFile({ path: config.policyPath, registry, keysDirectory: config.keysDirectory });
  const audit = openSqliteAuditStore({ path: config.auditPath });
  const connection = await NativeConnection.connect({ address: settings.address });
  try {
    const worker = await createToolGateWorker({
      connection,
      namespace: settings.namespace,
      taskQueue: settings.taskQueue,
      workflowBundle: prebuildWorkflowBundle({ workflowsPath: config.workflowsPath }),
      tools: await config.implementations(),
      policy,
      audit,
      ...minterOf({ config, policy }),
    });
    input.output.error(
      `toolgate worker on task queue "${settings.taskQueue}" at ${settings.address}, policy ${policy.version}`,
    );
    await worker.run();
    return 0;
  } finally {
    await connection.close();
    audit.close();
  }
}

function privateKeyOf(input: { config: LoadedConfig; owner: KeyOwner }) {
  try {
    return readPrivateKey(keyPaths({ directory: input.config.keysDirectory, owner: input.owner }).privateKey);
  } catch {
    return undefined;
  }
}

/** The worker's credential minter, when the minter key exists; writes then carry credentials. */
function minterOf(input: { config: LoadedConfig; policy: ReturnType<typeof loadPolicyFile> }) {
  const privateKey = privateKeyOf({ config: input.config, owner: { kind: 'minter' } });
  return privateKey ? { minter: createCredentialMinter({ privateKey, policy: () => input.policy }) } : {};
}

function keysCommand(input: { values: Values; action: string | undefined; output: CliOutput }): number {
  const { values } = input;
  if (input.action !== 'generate') throw new UsageError('keys takes one action: generate');
  const owners: KeyOwner[] = [
    ...(values.caller !== undefined ? [{ kind: 'caller' as const, name: values.caller }] : []),
    ...(values.approver !== undefined ? [{ kind: 'approver' as const, name: values.approver }] : []),
    ...(values.minter ? [{ kind: 'minter' as const }] : []),
  ];
  if (owners.length !== 1)
    throw new UsageError('keys generate needs exactly one of --caller NAME, --approver NAME, --minter');
  const config = configOf(values);
  const written = generateKeyPairFiles({
    directory: config.keysDirectory,
    owner: owners[0]!,
    replace: values.replace,
  });
  const summary = { ...written, directory: config.keysDirectory };
  if (values.json) input.output.out(JSON.stringify(summary));
  else if (written.created)
    input.output.out(`wrote ${written.privateKey} (private, keep it) and ${written.publicKey}`);
  else input.output.out(`${written.privateKey} exists; kept it (pass --replace to rotate)`);
  return 0;
}

async function approvalsCommand(input: {
  values: Values;
  action: string | undefined;
  callId: string | undefined;
  output: CliOutput;
}): Promise<number> {
  const { values, output, callId } = input;
  const config = configOf(values);
  const settings = connectionSettings(values, config);
  const connection = await Connection.connect({ address: settings.address, connectTimeout: '5s' });
  const audit =
    input.action === 'approve' || input.action === 'deny'
      ? openSqliteAuditStore({ path: config.auditPath })
      : undefined;
  try {
    const admin = new ApprovalAdmin({
      client: new Client({ connection, namespace: settings.namespace }),
      taskQueue: settings.taskQueue,
      ...(audit ? { audit } : {}),
    });
    switch (input.action) {
      case 'list': {
        const pending = await admin.pending();
        if (values.json) output.out(JSON.stringify(pending));
        else if (!pending.length) output.out('no calls are waiting for approval');
        else {
          for (const call of pending) {
            const minutes = Math.round(call.timeLeftMs / 60_000);
            output.out(
              `${call.callId}  ${call.tool} for ${call.caller}  risk ${call.riskLevel}  ` +
                `${call.approvals.length}/${call.quorum} approvals  ${minutes} min left\n  preview: ${JSON.stringify(call.preview)}`,
            );
          }
        }
        return 0;
      }
      case 'show': {
        if (!callId) throw new UsageError('approvals show needs a call id');
        const state = await admin.show(callId);
        if (!state) {
          output.error(`CALL_NOT_FOUND: no call ${callId} is visible to you`);
          return 1;
        }
        output.out(JSON.stringify(state, null, values.json ? undefined : 2));
        return 0;
      }
      case 'approve':
      case 'deny': {
        if (!callId) throw new UsageError(`approvals ${input.action} needs a call id`);
        if (!values.as) throw new UsageError(`approvals ${input.action} needs --as APPROVER`);
        const keyPath =
          values.key ??
          keyPaths({ directory: config.keysDirectory, owner: { kind: 'approver', name: values.as } })
            .privateKey;
        let privateKey;
        try {
          privateKey = readPrivateKey(keyPath);
        } catch (error) {
          output.error(
            `cannot read the key of ${values.as} at ${keyPath} (${(error as Error).message}); pass --key FILE`,
          );
          return 2;
        }
        const outcome = await admin.decide({
          callId,
          approver: values.as,
          privateKey,
          decision: input.action,
          reason: values.reason ?? (input.action === 'approve' ? 'approved' : 'denied'),
        });
        if (values.json) output.out(JSON.stringify(outcome));
        else if (outcome.accepted) {
          output.out(
            `accepted: ${input.action} by ${values.as}; the call is ${outcome.state} (${outcome.approvals.length}/${outcome.quorum})`,
          );
        } else output.out(`refused: ${outcome.message}`);
        return outcome.accepted ? 0 : 1;
      }
      default:
        throw new UsageError('approvals takes list, show, approve or deny');
    }
  } finally {
    audit?.close();
    await connection.close();
  }
}

async function sessionsCommand(input: {
  values: Values;
  action: string | undefined;
  session: string | undefined;
  output: CliOutput;
}): Promise<number> {
  const { values, output, session } = input;
  if (!session) throw new UsageError(`sessions ${input.action ?? 'show'} needs a session id`);
  const stats = await withClient(values, async (client) => {
    switch (input.action) {
      case 'show':
        return client.sessionStats(session);
      case 'reset':
        return client.resetSession(session, values.tool !== undefined ? { tool: values.tool } : {});
      case 'end':
        return client.endSession(session, values.reason !== undefined ? { reason: values.reason } : {});
      default:
        throw new UsageError('sessions takes show, reset or end');
    }
  });
  if (stats === null) {
    output.out(values.json ? JSON.stringify({ session, closed: true }) : `session ${session} is ended`);
    return 0;
  }
  if (values.json) output.out(JSON.stringify(stats));
  else {
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
  return 0;
}
