import type { Command } from 'commander';
import type { KeyObject } from 'node:crypto';
import { inviteApprover, listApproverKeys, maxInviteValidityMs, revokeApproverKey } from './client';
import type { ApproverKeysTarget } from './client';
import type { LoadedConfig } from '../config';
import { keyPaths, readPrivateKey } from '../keys/key-files';
import { durationMs } from '../shared/durations';
import type { CliContext, GlobalOptions } from '../cli/cli-context';
import { commandAction, withTemporal } from '../cli/cli-context';

type OperatorOptions = GlobalOptions & { as: string; key?: string };
type InviteOptions = OperatorOptions & { valid: string; consoleUrl?: string };
type RevokeOptions = OperatorOptions & { reason: string };
type KeysOptions = GlobalOptions & { approver?: string };

/**
 * Adds `approvers invite|keys|revoke`: an operator invites an approver to enrol a key (a one-time link
 * whose secret is in its fragment), lists enrolled keys, and revokes one. Invites and revocations are
 * signed with the operator's own key.
 */
export function addApproverCommands(program: Command, context: CliContext): void {
  const { output } = context;
  const approvers = program
    .command('approvers')
    .description("approvers' enrolled keys: invite an approver to enrol one, list them, revoke one");

  approvers
    .command('invite')
    .description('print a one-time link with which an approver enrols a key (signed with your operator key)')
    .argument('<approver>', 'the approver, as named in the policy')
    .requiredOption('--as <operator>', 'the operator inviting, as named in the policy')
    .option('--valid <duration>', 'how long the link may be used (at most 7d)', '24h')
    .option('--console-url <url>', 'the approvals console the link opens')
    .option('--key <file>', "the operator's private key (default: the config's keys directory)")
    .action(
      commandAction(context, async (approver: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<InviteOptions>();
        if (!/^\d+(ms|s|m|h|d)$/.test(options.valid) || durationMs(options.valid) > maxInviteValidityMs) {
          output.error(
            `error: --valid takes a duration such as 30m, 24h or 7d, at most 7d (got "${options.valid}")`,
          );
          return 2;
        }
        return withRegistry({ options, audited: true }, async ({ target, config }) => {
          const operatorKey = operatorKeyOf({ options, config, output });
          if (!operatorKey) return 2;
          const created = await inviteApprover({
            ...target,
            approver,
            operator: options.as,
            operatorKey,
            validForMs: durationMs(options.valid),
            ...(options.consoleUrl !== undefined ? { consoleUrl: options.consoleUrl } : {}),
          });
          const { invite } = created.invite;
          if (!created.outcome.accepted) {
            if (options.json) output.out(JSON.stringify(created.outcome));
            else output.error(`refused: ${created.outcome.message}`);
            return 1;
          }
          if (options.json) {
            output.out(JSON.stringify({ ...invite, link: created.link }));
          } else {
            output.out(
              `invite ${invite.inviteId} for ${approver}, valid until ${invite.expiresAt}, usable once.\n` +
                `Send this link to ${approver} over a channel you trust (its secret is after the #):\n${created.link}`,
            );
          }
          return 0;
        });
      }),
    );

  approvers
    .command('keys')
    .description("list approvers' enrolled keys (revoked ones too) and open invites")
    .option('--approver <name>', "only this approver's")
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<KeysOptions>();
        return withRegistry({ options, audited: false }, async ({ target }) => {
          const view = await listApproverKeys({
            ...target,
            ...(options.approver !== undefined ? { approver: options.approver } : {}),
          });
          if (options.json) {
            output.out(JSON.stringify(view));
            return 0;
          }
          if (!view.keys.length) output.out('no enrolled keys');
          for (const key of view.keys) {
            const state = key.revoked
              ? `revoked ${key.revoked.at} by ${key.revoked.operator}: ${key.revoked.reason}`
              : 'enrolled';
            output.out(
              `${key.keyId}  ${key.approver}  "${key.label}"  ${state}  (enrolled ${key.enrolledAt}, invited by ${key.invitedBy})`,
            );
          }
          const open = view.invites.filter((held) => held.usedBy === undefined);
          for (const held of open) {
            const { invite } = held.invite;
            output.out(
              `invite ${invite.inviteId}  ${invite.approver}  unused, valid until ${invite.expiresAt}`,
            );
          }
          return 0;
        });
      }),
    );

  approvers
    .command('revoke')
    .description('revoke an enrolled key: decisions signed with it stop counting at once')
    .argument('<key-id>', 'the key id, as `approvers keys` lists it')
    .requiredOption('--as <operator>', 'the operator revoking, as named in the policy')
    .requiredOption('--reason <text>', 'why; kept with the revocation')
    .option('--key <file>', "the operator's private key (default: the config's keys directory)")
    .action(
      commandAction(context, async (keyId: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<RevokeOptions>();
        return withRegistry({ options, audited: true }, async ({ target, config }) => {
          const operatorKey = operatorKeyOf({ options, config, output });
          if (!operatorKey) return 2;
          const outcome = await revokeApproverKey({
            ...target,
            keyId,
            operator: options.as,
            operatorKey,
            reason: options.reason,
          });
          if (options.json) output.out(JSON.stringify(outcome));
          else if (outcome.accepted) output.out(`revoked ${keyId}`);
          else output.error(`refused: ${outcome.message}`);
          return outcome.accepted ? 0 : 1;
        });
      }),
    );
}

/** The operator's private key from `--key` or the keys directory; says what to do when it cannot be read. */
export function operatorKeyOf(input: {
  options: OperatorOptions;
  config: LoadedConfig;
  output: CliContext['output'];
}): KeyObject | undefined {
  const { options } = input;
  const path =
    options.key ??
    keyPaths({ directory: input.config.keysDirectory, owner: { kind: 'operator', name: options.as } })
      .privateKey;
  try {
    return readPrivateKey(path);
  } catch (error) {
    input.output.error(
      `cannot read the key of operator ${options.as} at ${path} (${(error as Error).message}); ` +
        `run "toolgate keys generate --operator ${options.as}" or pass --key FILE`,
    );
    return undefined;
  }
}

/**
 * Runs `use` with the registry of the configured namespace and task queue; a changing command gets
 * the config's audit store too, so the change it sends is recorded even if the worker's record of it
 * is lost. Closes both either way.
 */
async function withRegistry(
  input: { options: GlobalOptions; audited: boolean },
  use: (input: { target: ApproverKeysTarget; config: LoadedConfig }) => Promise<number>,
): Promise<number> {
  return withTemporal(input, ({ temporal, taskQueue, audit, config }) =>
    use({ target: { client: temporal, taskQueue, ...(audit ? { audit } : {}) }, config }),
  );
}
