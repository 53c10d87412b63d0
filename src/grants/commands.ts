import { readFileSync, writeFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { addGrant, cosignGrant, listGrants, revokeGrant, signGrant } from './client';
import type { LoadedConfig } from '../config';
import { connectTemporalClient } from '../connection/temporal-connection';
import { keyPaths, readPrivateKey } from '../keys/key-files';
import { durationMs } from '../shared/durations';
import type { GrantReceipt, GrantRefusal, GrantView, SignedGrant, StandingGrant } from './protocol';
import { grantShapeProblem } from './protocol';
import { riskLevels } from '../tools/risk-levels';
import type { RiskLevel } from '../tools/risk-levels';
import { operatorKeyOf } from '../approver-keys/commands';
import type { CliContext, CliOutput, GlobalOptions } from '../cli/cli-context';
import { commandAction, configOf, connectionSettings } from '../cli/cli-context';

type ApproverOptions = GlobalOptions & { as: string; key?: string };
type CreateOptions = ApproverOptions & {
  caller: string;
  tool: string;
  maxLevel: string;
  calls: string;
  total?: string;
  perCall?: string;
  until?: string;
  for?: string;
  reason: string;
  out?: string;
};
type SignOptions = ApproverOptions & { submit?: boolean };
type ListOptions = GlobalOptions & { all?: boolean };
type RevokeOptions = GlobalOptions & { reason: string; as?: string; operator?: string; key?: string };

/** What `grants create` asks for, checked: nothing is signed until every field is. */
type GrantDraft = {
  maxLevel: RiskLevel;
  maxCalls: number;
  maxAmount?: number;
  maxAmountPerCall?: number;
  expiresAt: Date;
  reason: string;
};

/**
 * Adds `grants create|sign|submit|list|revoke`: standing grants, signed with approvers' own keys. A
 * grant one approver may give is submitted at once; one that needs a second approver (critical, or a
 * caller's quorum) goes to them as a file, which they sign and submit. Revocations are signed by one
 * of the grant's approvers or an operator.
 */
export function addGrantCommands(program: Command, context: CliContext): void {
  const { output } = context;
  const grants = program
    .command('grants')
    .description(
      "standing grants: a caller's calls of one tool approved in advance, within caps of calls, amount and time",
    );

  grants
    .command('create')
    .description(
      'sign a standing grant as its first approver and submit it, or with --out write it for a second ' +
        'approver to sign (exit 1 when refused, 2 for bad input)',
    )
    .requiredOption('--caller <name>', 'the caller it covers, as named in the policy')
    .requiredOption('--tool <name>', 'the tool it covers')
    .requiredOption(
      '--max-level <level>',
      `the highest risk level it covers: ${riskLevels.join(', ')} (critical needs two approvers)`,
    )
    .requiredOption('--calls <N>', 'at most this many calls')
    .option('--total <M>', "at most this much in total, in the tool's amount unit (cents for refunds)")
    .option('--per-call <K>', 'each call at most this much')
    .option('--until <time>', 'until when it holds (ISO time, e.g. 2030-01-31T18:00:00Z)')
    .option('--for <duration>', 'how long it holds, e.g. 8h or 7d (instead of --until)')
    .requiredOption('--reason <text>', 'why; kept with the grant and in the audit store')
    .requiredOption('--as <approver>', 'the approver signing, as named in the policy')
    .option('--key <file>', "the approver's private key (default: the config's keys directory)")
    .option(
      '--out <file>',
      'write the signed grant to this file for a second approver instead of submitting it',
    )
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<CreateOptions>();
        const draft = grantDraftOf({ options, output });
        if (!draft) return 2;
        if (draft.maxLevel === 'critical' && options.out === undefined) {
          output.error(
            'error: a grant up to critical needs two approvers: write it with --out FILE, then the second ' +
              'approver runs "toolgate grants sign FILE --as <approver> --submit"',
          );
          return 2;
        }
        const config = configOf(options);
        const approverKey = approverKeyOf({ options, config, output });
        if (!approverKey) return 2;
        const signed = signGrant({
          // The deployment it is for: the workers of another task queue refuse it.
          taskQueue: connectionSettings(options, config).taskQueue,
          caller: options.caller,
          tool: options.tool,
          ...draft,
          approver: options.as,
          approverKey,
        });
        if (options.out !== undefined) {
          writeGrantFile(options.out, signed);
          if (options.json) output.out(JSON.stringify({ written: options.out, signed }));
          else {
            output.out(
              `grant ${signed.grant.grantId} signed by ${options.as} and written to ${options.out}:\n` +
                `  ${coverageOf(signed.grant)}\n` +
                `Next: the second approver runs "toolgate grants sign ${options.out} --as <approver> --submit" ` +
                `(or, if one approver is enough, "toolgate grants submit ${options.out}").`,
            );
          }
          return 0;
        }
        return withGrantsClient({ options, config }, ({ client, taskQueue }) =>
          submitGrant({ client, taskQueue, signed, json: options.json, output }),
        );
      }),
    );

  grants
    .command('sign')
    .description(
      "add your signature to a grant file (another approver's), write it back, and with --submit submit it",
    )
    .argument('<file>', 'the signed grant, as `grants create --out` wrote it')
    .requiredOption('--as <approver>', 'the approver signing, as named in the policy')
    .option('--key <file>', "the approver's private key (default: the config's keys directory)")
    .option('--submit', 'submit the grant once signed')
    .action(
      commandAction(context, async (file: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<SignOptions>();
        const read = readGrantFile({ file, output });
        if (!read) return 2;
        const config = configOf(options);
        const approverKey = approverKeyOf({ options, config, output });
        if (!approverKey) return 2;
        const signed = cosignGrant({ signed: read, approver: options.as, approverKey });
        writeGrantFile(file, signed);
        const signers = signed.signatures.map((entry) => entry.approver).join(', ');
        if (!options.submit) {
          if (options.json) output.out(JSON.stringify({ written: file, signed }));
          else {
            output.out(
              `grant ${signed.grant.grantId} signed by ${signers}; written to ${file}:\n` +
                `  ${coverageOf(signed.grant)}\n` +
                `Next: "toolgate grants submit ${file}" (or another approver signs it first).`,
            );
          }
          return 0;
        }
        if (!options.json)
          output.out(`grant ${signed.grant.grantId} signed by ${signers}; written to ${file}`);
        return withGrantsClient({ options, config }, ({ client, taskQueue }) =>
          submitGrant({ client, taskQueue, signed, json: options.json, output }),
        );
      }),
    );

  grants
    .command('submit')
    .description('submit a signed grant file to the workers (exit 1 when refused)')
    .argument('<file>', 'the signed grant')
    .action(
      commandAction(context, async (file: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<GlobalOptions>();
        const signed = readGrantFile({ file, output });
        if (!signed) return 2;
        return withGrantsClient({ options, config: configOf(options) }, ({ client, taskQueue }) =>
          submitGrant({ client, taskQueue, signed, json: options.json, output }),
        );
      }),
    );

  grants
    .command('list')
    .description('list the active grants: what each covers, what is used, until when, who approved it')
    .option('--all', 'include grants that ended (revoked, expired, used up) within the last day')
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<ListOptions>();
        return withGrantsClient({ options, config: configOf(options) }, async ({ client, taskQueue }) => {
          const view = await listGrants({ client, taskQueue });
          const shown = options.all ? view.grants : view.grants.filter((entry) => entry.state === 'active');
          if (options.json) output.out(JSON.stringify({ grants: shown }));
          else if (!shown.length) output.out(options.all ? 'no grants' : 'no active grants');
          else for (const entry of shown) output.out(grantLine(entry));
          return 0;
        });
      }),
    );

  grants
    .command('revoke')
    .description(
      'revoke a grant at once, signed by one of its approvers or an operator: no call uses it afterwards ' +
        '(exit 1 when refused)',
    )
    .argument('<grant-id>', 'the grant id, as `grants list` shows it')
    .requiredOption('--reason <text>', 'why; kept with the revocation and in the audit store')
    .option('--as <approver>', 'revoke as one of the approvers who signed the grant, with their key')
    .option('--operator <name>', 'revoke as an operator named in the policy, with their key')
    .option('--key <file>', "the approver's or operator's private key (default: the config's keys directory)")
    .action(
      commandAction(context, async (grantId: string, _options: unknown, command: Command) => {
        const options = command.optsWithGlobals<RevokeOptions>();
        if ((options.as === undefined) === (options.operator === undefined)) {
          output.error(
            'error: give exactly one of --as <approver> (who signed the grant) or --operator <name>',
          );
          return 2;
        }
        const config = configOf(options);
        const key =
          options.as !== undefined
            ? approverKeyOf({ options: { ...options, as: options.as }, config, output })
            : operatorKeyOf({ options: { ...options, as: options.operator! }, config, output });
        if (!key) return 2;
        return withGrantsClient({ options, config }, async ({ client, taskQueue }) => {
          const outcome = await revokeGrant({
            client,
            taskQueue,
            grantId,
            by: options.as !== undefined ? { approver: options.as } : { operator: options.operator! },
            key,
            reason: options.reason,
          });
          if (options.json) output.out(JSON.stringify(outcome));
          else if (!outcome.accepted) output.error(`${outcome.code}: ${outcome.message}`);
          else {
            const { grant } = outcome;
            output.out(
              `revoked ${grantId} (by ${grant.revoked?.by ?? options.as ?? options.operator}); ` +
                `${grant.usedCalls} of its ${grant.grant.maxCalls} call(s) were used`,
            );
          }
          return outcome.accepted ? 0 : 1;
        });
      }),
    );
}

/** The checked fields of `grants create`, or undefined after saying what is wrong with one. */
function grantDraftOf(input: { options: CreateOptions; output: CliOutput }): GrantDraft | undefined {
  const { options, output } = input;
  const problem = (text: string): undefined => {
    output.error(`error: ${text}`);
    return undefined;
  };
  const maxLevel = riskLevels.find((level) => level === options.maxLevel);
  if (!maxLevel) {
    return problem(`--max-level takes ${riskLevels.join(', ')} (got "${options.maxLevel}")`);
  }
  const counts: Array<[string, string | undefined]> = [
    ['--calls', options.calls],
    ['--total', options.total],
    ['--per-call', options.perCall],
  ];
  for (const [flag, value] of counts) {
    if (value !== undefined && wholeNumberOf(value) === undefined) {
      return problem(`${flag} takes a whole number above 0 (got "${value}")`);
    }
  }
  if ((options.until === undefined) === (options.for === undefined)) {
    return problem('give exactly one of --until <ISO time> or --for <duration, e.g. 8h or 7d>');
  }
  let expiresAt: Date;
  if (options.for !== undefined) {
    const lengthMs = /^\d+(ms|s|m|h|d)$/.test(options.for) ? durationMs(options.for) : 0;
    expiresAt = new Date(Date.now() + lengthMs);
    if (lengthMs <= 0 || Number.isNaN(expiresAt.getTime())) {
      return problem(`--for takes a duration above 0 such as 30m, 8h or 7d (got "${options.for}")`);
    }
  } else {
    expiresAt = new Date(isoTimePattern.test(options.until!) ? options.until! : Number.NaN);
    if (Number.isNaN(expiresAt.getTime()) || expiresAt.getTime() <= Date.now()) {
      return problem(
        `--until takes an ISO time in the future, e.g. 2030-01-31T18:00:00Z (got "${options.until}")`,
      );
    }
  }
  const reason = options.reason.trim();
  if (reason === '' || reason.length > maxReasonLength) {
    return problem(`--reason takes a text of 1 to ${maxReasonLength} characters`);
  }
  const maxAmount = options.total !== undefined ? wholeNumberOf(options.total) : undefined;
  const maxAmountPerCall = options.perCall !== undefined ? wholeNumberOf(options.perCall) : undefined;
  return {
    maxLevel,
    maxCalls: wholeNumberOf(options.calls)!,
    ...(maxAmount !== undefined ? { maxAmount } : {}),
    ...(maxAmountPerCall !== undefined ? { maxAmountPerCall } : {}),
    expiresAt,
    reason,
  };
}

/** A grant's reason is at most this long (`grantShapeProblem` refuses longer). */
const maxReasonLength = 500;

/** A date, or a date and time with an optional offset: what `--until` accepts. */
const isoTimePattern = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** A whole number above 0 written in decimal digits, or undefined. */
function wholeNumberOf(value: string): number | undefined {
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  return Number.isSafeInteger(number) && number > 0 ? number : undefined;
}

/** The approver's private key from `--key` or the keys directory; says what to do when it cannot be read. */
function approverKeyOf(input: {
  options: ApproverOptions;
  config: LoadedConfig;
  output: CliOutput;
}): KeyObject | undefined {
  const { options } = input;
  const path =
    options.key ??
    keyPaths({ directory: input.config.keysDirectory, owner: { kind: 'approver', name: options.as } })
      .privateKey;
  try {
    return readPrivateKey(path);
  } catch (error) {
    input.output.error(
      `cannot read the key of ${options.as} at ${path} (${(error as Error).message}); pass --key FILE`,
    );
    return undefined;
  }
}

/** A signed grant read from `file`, or undefined after saying why it is not one. */
function readGrantFile(input: { file: string; output: CliOutput }): SignedGrant | undefined {
  // A file that cannot be read throws: the CLI says so and exits 2.
  const text = readFileSync(input.file, 'utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    input.output.error(`error: ${input.file} is not JSON (${(error as Error).message})`);
    return undefined;
  }
  const problem = grantShapeProblem(value);
  if (problem) {
    input.output.error(`error: ${input.file} is not a signed grant: ${problem}`);
    return undefined;
  }
  return value as SignedGrant;
}

function writeGrantFile(file: string, signed: SignedGrant): void {
  writeFileSync(file, `${JSON.stringify(signed, null, 2)}\n`);
}

/** Submits a signed grant and prints the receipt or the refusal; 0 when accepted, 1 when refused. */
async function submitGrant(input: {
  client: Client;
  taskQueue: string;
  signed: SignedGrant;
  json: boolean | undefined;
  output: CliOutput;
}): Promise<number> {
  const { output } = input;
  const outcome: GrantReceipt | GrantRefusal = await addGrant({
    client: input.client,
    taskQueue: input.taskQueue,
    signed: input.signed,
  });
  if (input.json) output.out(JSON.stringify(outcome));
  else if (!outcome.accepted) output.error(`${outcome.code}: ${outcome.message}`);
  else {
    const { grant, approvers } = outcome.grant;
    output.out(
      `grant ${grant.grantId} is active (approved by ${approvers.join(', ')}):\n  ${coverageOf(grant)}`,
    );
  }
  return outcome.accepted ? 0 : 1;
}

/** What a grant lets through, in one sentence. */
function coverageOf(grant: StandingGrant): string {
  const amounts = [
    grant.maxAmount !== undefined ? `${grant.maxAmount} in total` : undefined,
    grant.maxAmountPerCall !== undefined ? `at most ${grant.maxAmountPerCall} a call` : undefined,
  ].filter((part) => part !== undefined);
  return (
    `${grant.caller} may run ${grant.tool} up to ${grant.maxLevel} without approval: ` +
    `${grant.maxCalls} call(s)${amounts.map((part) => `, ${part}`).join('')}, until ${grant.expiresAt}`
  );
}

/** One grant of `grants list`: what it covers, what is used of it, where it stands and who approved it. */
function grantLine(entry: GrantView): string {
  const { grant } = entry;
  const line =
    `${grant.grantId}  ${grant.caller}  ${grant.tool}  up to ${grant.maxLevel}  ${entry.state}  ` +
    `calls ${entry.usedCalls}/${grant.maxCalls}  amount ${entry.usedAmount}/${grant.maxAmount ?? 'no cap'}  ` +
    `per call ${grant.maxAmountPerCall ?? 'no cap'}  until ${grant.expiresAt}  ` +
    `approved by ${entry.approvers.join(', ')}`;
  return entry.revoked
    ? `${line}\n  revoked ${entry.revoked.at} by ${entry.revoked.by}: ${entry.revoked.reason}`
    : line;
}

/** Runs `use` with a Temporal client on the configured namespace and task queue; closes it either way. */
async function withGrantsClient(
  input: { options: GlobalOptions; config: LoadedConfig },
  use: (target: { client: Client; taskQueue: string }) => Promise<number>,
): Promise<number> {
  const settings = connectionSettings(input.options, input.config);
  const { connection, client } = await connectTemporalClient(settings);
  try {
    return await use({ client, taskQueue: settings.taskQueue });
  } finally {
    await connection.close();
  }
}
