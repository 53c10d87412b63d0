import type { Command } from 'commander';
import { cancelCall } from './client';
import { connectTemporalClient } from '../connection/temporal-connection';
import type { ToolResult } from '../shared/tool-result';
import { loadPolicyFile } from '../policy/load-policy';
import { createToolRegistry } from '../tools/tool-registry';
import type { CliContext, CliOutput, GlobalOptions } from '../cli/cli-context';
import { operatorKeyOf } from '../approver-keys/commands';
import { commandAction, configOf, connectionSettings, withClient } from '../cli/cli-context';
import { formatResult } from '../cli/format-result';

type CallOptions = GlobalOptions & {
  caller: string;
  tool: string;
  args: string;
  session?: string;
  intent?: string;
  onBehalfOf?: string;
  tenant?: string;
  channel?: string;
};
type StatusOptions = GlobalOptions & { wait?: boolean };
type DefinitionsOptions = GlobalOptions & { caller?: string };
type CancelOptions = GlobalOptions & { reason: string; caller?: string; as?: string; key?: string };

/** Adds `call`, `status` and `definitions`: what an agent's harness does, from a shell. */
export function addCallCommands(program: Command, context: CliContext): void {
  const { output } = context;
  program
    .command('call')
    .description('propose one tool call and print its result (exit 1 when it is rejected)')
    .requiredOption('--caller <name>', 'the caller the call is made for, as named in the policy')
    .requiredOption('--tool <name>', 'the tool to call')
    .requiredOption('--args <json>', 'the arguments, as the JSON text a model would produce')
    .option('--session <id>', 'the session the call belongs to', 'cli')
    .option('--intent <id>', 'an intent id: proposals with the same intent are one call')
    .option('--on-behalf-of <end user>', 'the end user the call acts for (fills bound parameters)')
    .option('--tenant <name>', 'the tenant the conversation belongs to')
    .option('--channel <name>', 'where the conversation happens, e.g. end-user-chat')
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<CallOptions>();
        const actingFor = {
          ...(options.onBehalfOf !== undefined ? { onBehalfOf: options.onBehalfOf } : {}),
          ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
          ...(options.channel !== undefined ? { channel: options.channel } : {}),
        };
        const result = await withClient(options, (client) =>
          client.call({
            session: options.session ?? 'cli',
            caller: options.caller,
            tool: options.tool,
            arguments: options.args,
            ...(options.intent !== undefined ? { intentId: options.intent } : {}),
            ...(Object.keys(actingFor).length > 0 ? { context: actingFor } : {}),
          }),
        );
        return printResult({ result, json: options.json, output });
      }),
    );

  program
    .command('status')
    .description("print a call's result, or that it is still running")
    .argument('<call-id>', 'the call id (tc-...)')
    .option('--wait', 'wait for the final result instead of answering at once')
    .action(
      commandAction(context, async (callId: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<StatusOptions>();
        const result = await withClient(options, (client) =>
          client.result(callId, { wait: options.wait === true }),
        );
        if (result === null) {
          output.out(
            options.json
              ? JSON.stringify({ callId, status: 'running' })
              : `${callId}: running, no answer yet`,
          );
          return 0;
        }
        return printResult({ result, json: options.json, output });
      }),
    );

  program
    .command('cancel')
    .description(
      'cancel a call that waits for approval (it closes APPROVAL_CANCELLED, nothing applied), signed as ' +
        'its caller or as an operator; refused once execution started (exit 1)',
    )
    .argument('<call-id>', 'the call id (tc-...)')
    .requiredOption('--reason <text>', "why; kept in the call's result and audit record")
    .option('--caller <name>', "cancel as the call's caller, with its key from the keys directory")
    .option('--as <operator>', 'cancel as an operator named in the policy, with their key')
    .option('--key <file>', "the operator's private key (default: the config's keys directory)")
    .action(
      commandAction(context, async (callId: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<CancelOptions>();
        if ((options.caller === undefined) === (options.as === undefined)) {
          output.error("give exactly one of --caller <name> (the call's caller) or --as <operator>");
          return 2;
        }
        const outcome =
          options.caller !== undefined
            ? await withClient(options, (client) =>
                client.cancel({ callId, caller: options.caller!, reason: options.reason }),
              )
            : await cancelAsOperator({ options: { ...options, as: options.as! }, callId, output });
        if (outcome === undefined) return 2;
        if (options.json) output.out(JSON.stringify(outcome));
        else if (outcome.cancelled) output.out(`cancelled ${callId} (${outcome.cancelledBy})`);
        else output.error(`${outcome.code}: ${outcome.message}`);
        return outcome.cancelled ? 0 : 1;
      }),
    );

  program
    .command('definitions')
    .description('print the tool definitions to send to a model, as JSON')
    .option('--caller <name>', 'only the tools this caller may use')
    .action(
      commandAction(context, (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<DefinitionsOptions>();
        const config = configOf(options);
        const registry = createToolRegistry({ tools: config.tools });
        // The policy (and its key files) only when a caller narrows the list: a new project's
        // definitions print before any key exists.
        const only =
          options.caller !== undefined
            ? (loadPolicyFile({
                path: config.policyPath,
                registry,
                keysDirectory: config.keysDirectory,
              }).callerPolicy(options.caller)?.tools ?? [])
            : undefined;
        output.out(JSON.stringify(registry.definitions(only ? { only } : {}), null, 2));
        return 0;
      }),
    );
}

/** Cancels as an operator: their key from `--key` or the keys directory; undefined when it cannot be read. */
async function cancelAsOperator(input: {
  options: CancelOptions & { as: string };
  callId: string;
  output: CliOutput;
}): Promise<Awaited<ReturnType<typeof cancelCall>> | undefined> {
  const { options } = input;
  const config = configOf(options);
  const privateKey = operatorKeyOf({ options, config, output: input.output });
  if (!privateKey) return undefined;
  const { connection, client } = await connectTemporalClient(connectionSettings(options, config));
  try {
    return await cancelCall({
      client,
      callId: input.callId,
      by: { operator: options.as },
      privateKey,
      reason: options.reason,
    });
  } finally {
    await connection.close();
  }
}

/** Prints a call's result (JSON or for people) and answers the exit code: 0 OK, 1 rejected. */
function printResult(input: { result: ToolResult; json: boolean | undefined; output: CliOutput }): number {
  input.output.out(input.json ? JSON.stringify(input.result) : formatResult(input.result));
  return input.result.ok ? 0 : 1;
}
