import type { Command } from 'commander';
import type { KeyOwner } from '../keys/key-files';
import { generateKeyPairFiles } from '../keys/key-files';
import type { CliContext, GlobalOptions } from './cli-context';
import { commandAction, configOf } from './cli-context';

type GenerateOptions = GlobalOptions & {
  caller?: string;
  approver?: string;
  operator?: string;
  minter?: boolean;
  replace?: boolean;
};

/** Adds `keys generate`: writes one Ed25519 key pair into the config's keys directory. */
export function addKeyCommands(program: Command, context: CliContext): void {
  const { output } = context;
  const keys = program.command('keys').description("manage the key pairs in the config's keys directory");

  keys
    .command('generate')
    .description('write a key pair for one caller, approver, operator or the minter (keeps an existing one)')
    .option('--caller <name>', "a caller's key: it signs the calls made for that caller")
    .option('--approver <name>', "an approver's key: it signs that approver's decisions")
    .option('--operator <name>', "an operator's key: it signs approver invites and key revocations")
    .option('--minter', "the worker's credential minter key")
    .option('--replace', 'rotate: replace a key pair that exists')
    .action(
      commandAction(context, (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<GenerateOptions>();
        const owners: KeyOwner[] = [
          ...(options.caller !== undefined ? [{ kind: 'caller' as const, name: options.caller }] : []),
          ...(options.approver !== undefined ? [{ kind: 'approver' as const, name: options.approver }] : []),
          ...(options.operator !== undefined ? [{ kind: 'operator' as const, name: options.operator }] : []),
          ...(options.minter ? [{ kind: 'minter' as const }] : []),
        ];
        if (owners.length !== 1) {
          command.error(
            'error: keys generate needs exactly one of --caller NAME, --approver NAME, --operator NAME, --minter',
            {
              exitCode: 2,
              code: 'toolgate.usage',
            },
          );
        }
        const config = configOf(options);
        const written = generateKeyPairFiles({
          directory: config.keysDirectory,
          owner: owners[0]!,
          replace: options.replace === true,
        });
        const summary = { ...written, directory: config.keysDirectory };
        if (options.json) output.out(JSON.stringify(summary));
        else if (written.created)
          output.out(`wrote ${written.privateKey} (private, keep it) and ${written.publicKey}`);
        else output.out(`${written.privateKey} exists; kept it (pass --replace to rotate)`);
        return 0;
      }),
    );
}
