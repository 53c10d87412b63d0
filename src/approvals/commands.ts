import { describeContext } from '../calls/call-context';
import type { KeyObject } from 'node:crypto';
import type { Command } from 'commander';
import { ApprovalAdmin } from './client';
import type { LoadedConfig } from '../config';
import { keyPaths, readPrivateKey } from '../keys/key-files';
import type { CliContext, GlobalOptions } from '../cli/cli-context';
import { commandAction, withTemporal } from '../cli/cli-context';
import { formatApprovalRound } from '../cli/format-result';
import { loadPolicyFile } from '../policy/load-policy';
import { createToolRegistry } from '../tools/tool-registry';

type DecideOptions = GlobalOptions & { as: string; reason: string; key?: string };

/** Adds `approvals list|show|approve|deny|edit|lift`: the approver's side, with decisions signed by the approver's key. */
export function addApprovalCommands(program: Command, context: CliContext): void {
  const { output } = context;
  const approvals = program
    .command('approvals')
    .description('list calls waiting for approval, show one, approve or deny it');

  approvals
    .command('list')
    .description('list the calls waiting for approval, soonest expiry first')
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<GlobalOptions>();
        return withApprovalAdmin({ options, audited: false }, async ({ admin }) => {
          const pending = await admin.pending();
          if (options.json) output.out(JSON.stringify(pending));
          else if (!pending.length) output.out('no calls are waiting for approval');
          else {
            for (const call of pending) {
              const minutes = Math.round(call.timeLeftMs / 60_000);
              output.out(
                `${call.callId}  ${call.tool} for ${call.caller}` +
                  (call.context ? ` ${describeContext(call.context)}` : '') +
                  `  risk ${call.riskLevel}  ` +
                  `${call.approvals.length}/${call.quorum} approvals  ${minutes} min left\n  preview: ${JSON.stringify(call.preview)}`,
              );
            }
          }
          return 0;
        });
      }),
    );

  approvals
    .command('show')
    .description("print a call's state: stage, risk, the approval rule, its preview and decisions")
    .argument('<call-id>', 'the call id (tc-...)')
    .action(
      commandAction(context, async (callId: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<GlobalOptions>();
        return withApprovalAdmin({ options, audited: false }, async ({ admin }) => {
          const state = await admin.show(callId);
          if (!state) {
            output.error(`CALL_NOT_FOUND: no call ${callId} is visible to you`);
            return 1;
          }
          if (options.json) {
            output.out(JSON.stringify(state));
            return 0;
          }
          // For a person: the round first (its contract, and why it replaced or was replaced), then the state.
          if (state.approval) output.out(formatApprovalRound(state.approval));
          output.out(JSON.stringify(state, null, 2));
          return 0;
        });
      }),
    );

  for (const decision of ['approve', 'deny'] as const) {
    approvals
      .command(decision)
      .description(
        `${decision} a call waiting for approval, signed with the approver's key (exit 1 when refused)`,
      )
      .argument('<call-id>', 'the call id (tc-...)')
      .requiredOption('--as <approver>', 'the approver deciding, as named in the policy')
      .option(
        '--reason <text>',
        'why; kept with the decision',
        decision === 'approve' ? 'approved' : 'denied',
      )
      .option('--key <file>', "the approver's private key (default: the config's keys directory)")
      .action(
        commandAction(context, async (callId: string, _options: unknown, command: Command) => {
          const options = command.optsWithGlobals<DecideOptions>();
          return withApprovalAdmin({ options, audited: true }, async ({ admin, config }) => {
            const privateKey = approverKey({ options, config, output });
            if (!privateKey) return 2;
            const outcome = await admin.decide({
              callId,
              approver: options.as,
              privateKey,
              decision,
              reason: options.reason,
            });
            if (options.json) output.out(JSON.stringify(outcome));
            else if (outcome.accepted) {
              output.out(
                `accepted: ${decision} by ${options.as}; the call is ${outcome.state} (${outcome.approvals.length}/${outcome.quorum})`,
              );
            } else output.out(`refused: ${outcome.message}`);
            return outcome.accepted ? 0 : 1;
          });
        }),
      );
  }
  addEditCommand(approvals, context);
  addLiftCommand(approvals, context);
}

type LiftOptions = GlobalOptions & { as?: string; operator?: string; reason: string; key?: string };

/**
 * Adds `approvals lift`: an approver (`--as`) or an operator (`--operator`) lifts the remembered
 * denial of a call, signed with their key and checked against the config's policy first; the same
 * call proposed again in its session is then asked of a person again.
 */
function addLiftCommand(approvals: Command, context: CliContext): void {
  const { output } = context;
  approvals
    .command('lift')
    .description(
      'lift the remembered denial of a call, so the same call proposed again is asked of a person (exit 1 when refused)',
    )
    .argument('<call-id>', 'the denied call id (tc-...)')
    .option('--as <approver>', 'the approver lifting it, as named in the policy')
    .option('--operator <name>', 'the operator lifting it, as named in the policy')
    .requiredOption('--reason <text>', 'why; kept with the lift in the audit store')
    .option('--key <file>', "the private key (default: the config's keys directory)")
    .action(
      commandAction(context, async (callId: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<LiftOptions>();
        if ((options.as === undefined) === (options.operator === undefined)) {
          output.error('give one of --as <approver> or --operator <name>');
          return 2;
        }
        return withApprovalAdmin({ options, audited: true }, async ({ admin, config }) => {
          const owner =
            options.as !== undefined
              ? { kind: 'approver' as const, name: options.as }
              : { kind: 'operator' as const, name: options.operator as string };
          const keyPath = options.key ?? keyPaths({ directory: config.keysDirectory, owner }).privateKey;
          let privateKey: KeyObject;
          try {
            privateKey = readPrivateKey(keyPath);
          } catch (error) {
            output.error(
              `cannot read the key of ${owner.name} at ${keyPath} (${(error as Error).message}); pass --key FILE`,
            );
            return 2;
          }
          const policy = loadPolicyFile({
            path: config.policyPath,
            registry: createToolRegistry({ tools: config.tools }),
            keysDirectory: config.keysDirectory,
          });
          const outcome = await admin.liftDenial({
            deniedCallId: callId,
            by: owner.kind === 'approver' ? { approver: owner.name } : { operator: owner.name },
            privateKey,
            reason: options.reason,
            policy,
          });
          if (options.json) output.out(JSON.stringify(outcome));
          else if (outcome.accepted) {
            output.out(
              `lifted: the denial of ${callId}, by ${outcome.liftedBy}; the same call will be asked again`,
            );
          } else output.out(`refused: ${outcome.message}`);
          return outcome.accepted ? 0 : 1;
        });
      }),
    );
}

type EditOptions = GlobalOptions & {
  as: string;
  reason: string;
  key?: string;
  set: string[];
  args?: string;
  approve?: boolean;
};

/**
 * Adds `approvals edit`: the approver edits the open round's arguments (`--set field=value`, the
 * value read as JSON when it is JSON, else as text; or `--args` with every field), signed with their
 * key; the call judges them again and opens a new round for them. With `--approve`, the approver
 * then approves that round, once it has been checked and previewed, signing its new digests.
 */
export function addEditCommand(approvals: Command, context: CliContext): void {
  const { output } = context;
  approvals
    .command('edit')
    .description(
      "edit a waiting call's arguments, signed with the approver's key; a new round asks for the edited ones (exit 1 when refused)",
    )
    .argument('<call-id>', 'the call id (tc-...)')
    .requiredOption('--as <approver>', 'the approver editing, as named in the policy')
    .requiredOption('--reason <text>', 'why; the model is told, and the audit keeps it')
    .option('--set <field=value>', 'one field to change (repeat it); value as JSON, else text', collect, [])
    .option('--args <json>', 'every field as it should run, as a JSON object (instead of --set)')
    .option('--approve', 'approve the new round too, once it opens')
    .option('--key <file>', "the approver's private key (default: the config's keys directory)")
    .action(
      commandAction(context, async (callId: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<EditOptions>();
        return withApprovalAdmin({ options, audited: true }, async ({ admin, config }) => {
          const privateKey = approverKey({ options, config, output });
          if (!privateKey) return 2;
          const state = await admin.show(callId);
          const edited = editedArguments({ current: state?.validatedArguments ?? {}, options });
          if (!edited.ok) {
            output.error(edited.message);
            return 2;
          }
          const outcome = await admin.edit({
            callId,
            approver: options.as,
            privateKey,
            args: edited.args,
            reason: options.reason,
          });
          if (!outcome.accepted) {
            if (options.json) output.out(JSON.stringify(outcome));
            else output.out(`refused: ${outcome.message}`);
            return 1;
          }
          const found = await admin.waitForRound({ callId, after: outcome.round });
          // Only the round that asks for exactly these arguments is this edit's to approve.
          const next = found?.approval?.argsDigest === outcome.editedDigest ? found : null;
          if (!options.approve || !next) {
            if (options.json) output.out(JSON.stringify({ ...outcome, next: next?.approval ?? null }));
            else {
              output.out(`accepted: edited by ${options.as}; the call is now "${outcome.riskLevel}"`);
              output.out(
                next?.approval
                  ? formatApprovalRound(next.approval)
                  : 'no new round opened: see `approvals show`',
              );
            }
            return 0;
          }
          const decided = await admin.decide({
            callId,
            approver: options.as,
            privateKey,
            decision: 'approve',
            reason: options.reason,
          });
          if (options.json) output.out(JSON.stringify({ ...outcome, decision: decided }));
          else if (decided.accepted) {
            output.out(
              `accepted: edited and approved by ${options.as}; the call is ${decided.state} (${decided.approvals.length}/${decided.quorum})`,
            );
          } else output.out(`edited, but the approval was refused: ${decided.message}`);
          return decided.accepted ? 0 : 1;
        });
      }),
    );
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The arguments an edit sends: `--args` as given, or the current ones with each `--set` applied. */
function editedArguments(input: {
  current: Record<string, unknown>;
  options: EditOptions;
}): { ok: true; args: Record<string, unknown> } | { ok: false; message: string } {
  const { options } = input;
  if (options.args !== undefined) {
    if (options.set.length) return { ok: false, message: 'give --args or --set, not both' };
    let parsed: unknown;
    try {
      parsed = JSON.parse(options.args);
    } catch (error) {
      return { ok: false, message: `--args is not JSON (${(error as Error).message})` };
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return { ok: false, message: '--args must be a JSON object with every field' };
    }
    return { ok: true, args: parsed as Record<string, unknown> };
  }
  if (!options.set.length) return { ok: false, message: 'nothing to edit: give --set field=value or --args' };
  const args = { ...input.current };
  for (const pair of options.set) {
    const at = pair.indexOf('=');
    if (at <= 0) return { ok: false, message: `--set ${pair}: expected field=value` };
    const raw = pair.slice(at + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // Not JSON: the text itself.
    }
    args[pair.slice(0, at)] = value;
  }
  return { ok: true, args };
}

/** The approver's private key, from `--key` or the config's keys directory; undefined (and said) when unreadable. */
function approverKey(input: {
  options: { as: string; key?: string };
  config: LoadedConfig;
  output: CliContext['output'];
}): KeyObject | undefined {
  const { options } = input;
  const keyPath =
    options.key ??
    keyPaths({ directory: input.config.keysDirectory, owner: { kind: 'approver', name: options.as } })
      .privateKey;
  try {
    return readPrivateKey(keyPath);
  } catch (error) {
    input.output.error(
      `cannot read the key of ${options.as} at ${keyPath} (${(error as Error).message}); pass --key FILE`,
    );
    return undefined;
  }
}

/**
 * Runs `use` with an approval admin on the configured namespace and task queue; a deciding command
 * gets the audit store too, so every decision it sends is logged. Closes both either way.
 */
async function withApprovalAdmin(
  input: { options: GlobalOptions; audited: boolean },
  use: (admin: { admin: ApprovalAdmin; config: LoadedConfig }) => Promise<number>,
): Promise<number> {
  return withTemporal(input, ({ temporal, taskQueue, audit, config }) =>
    use({ admin: new ApprovalAdmin({ client: temporal, taskQueue, ...(audit ? { audit } : {}) }), config }),
  );
}
