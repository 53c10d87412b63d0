import { describeContext } from '../calls/call-context';
import type { Command } from 'commander';
import { ApprovalAdmin } from './client';
import type { LoadedConfig } from '../config';
import { keyPaths, readPrivateKey } from '../keys/key-files';
import type { CliContext, GlobalOptions } from '../cli/cli-context';
import { commandAction, withTemporal } from '../cli/cli-context';
import { formatApprovalRound } from '../cli/format-result';

type DecideOptions = GlobalOptions & { as: string; reason: string; key?: string };

/** Adds `approvals list|show|approve|deny`: the approver's side, with decisions signed by the approver's key. */
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
            const keyPath =
              options.key ??
              keyPaths({ directory: config.keysDirectory, owner: { kind: 'approver', name: options.as } })
                .privateKey;
            let privateKey;
            try {
              privateKey = readPrivateKey(keyPath);
            } catch (error) {
              output.error(
                `cannot read the key of ${options.as} at ${keyPath} (${(error as Error).message}); pass --key FILE`,
              );
              return 2;
            }
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
