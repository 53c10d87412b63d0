import type { Command } from 'commander';
import type { ToolResult } from '../shared/tool-result';
import { loadPolicyFile } from '../policy/load-policy';
import { createToolRegistry } from '../tools/tool-registry';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { commandAction, configOf, withClient } from './cli-context';
import { formatResult } from './format-result';

type CallOptions = GlobalOptions & {
  caller: string;
  tool: string;
  args: string;
  session?: string;
  intent?: string;
};
type StatusOptions = GlobalOptions & { wait?: boolean };
type DefinitionsOptions = GlobalOptions & { caller?: string };

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
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<CallOptions>();
        const result = await withClient(options, (client) =>
          client.call({
            session: options.session ?? 'cli',
            caller: options.caller,
            tool: options.tool,
            arguments: options.args,
            ...(options.intent !== undefined ? { intentId: options.intent } : {}),
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

/** Prints a call's result (JSON or for people) and answers the exit code: 0 OK, 1 rejected. */
function printResult(input: { result: ToolResult; json: boolean | undefined; output: CliOutput }): number {
  input.output.out(input.json ? JSON.stringify(input.result) : formatResult(input.result));
  return input.result.ok ? 0 : 1;
}
