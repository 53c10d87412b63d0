import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { diffSnapshots } from '../contracts/contract-diff';
import type { ContractDiff } from '../contracts/contract-diff';
import { renderContractDiff } from '../contracts/contract-report';
import {
  parseContractSnapshot,
  serializeContractSnapshot,
  snapshotContracts,
} from '../contracts/contract-snapshot';
import type { ContractSnapshot, ContractSnapshotErrorCode } from '../contracts/contract-snapshot';
import type { LoadedConfig } from '../config';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { commandAction, configOf } from './cli-context';

/** The snapshot's file name, next to the config file unless `--out` or `--snapshot` says otherwise. */
export const defaultSnapshotFileName = 'toolgate.contracts.json';

type SnapshotOptions = GlobalOptions & { out?: string };
type CheckOptions = GlobalOptions & { snapshot?: string };

const contractHelp = `
The snapshot (default: ${defaultSnapshotFileName} next to your config) is committed with your code.
check compares it with the configured tools and exits:
  0  no change, or only compatible or behavioural ones (behavioural: run the selection suite)
  1  a breaking change
  2  no snapshot, or one that cannot be read (run toolgate contract snapshot), or a bad config`;

/**
 * Adds `contract snapshot` (writes the configured tools' contracts to a file to commit) and `contract
 * check` (compares that file with the tools now; exit 1 on a breaking change).
 */
export function addContractCommands(program: Command, context: CliContext): void {
  const { output } = context;
  const contract = program
    .command('contract')
    .description("snapshot the tools' contracts and check a change against the committed snapshot")
    .addHelpText('after', contractHelp);

  contract
    .command('snapshot')
    .description(
      "write the configured tools' contracts to the snapshot file (keeps the selection-eval record)",
    )
    .option('--out <file>', `where to write it (default: ${defaultSnapshotFileName} next to the config)`)
    .action(
      commandAction(context, (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<SnapshotOptions>();
        const config = configOf(options);
        const path = snapshotPath({ config, given: options.out });
        const previous = readSnapshot(path);
        if (!previous.ok && previous.code === 'SNAPSHOT_INVALID') {
          output.error(`replacing ${shown(path)}: ${previous.message}`);
        }
        const earlier = previous.ok ? previous.snapshot : undefined;
        const current = snapshotContracts({ tools: config.tools, selection: earlier?.selection ?? {} });
        const diff = earlier ? diffSnapshots(earlier, current) : undefined;
        // Unchanged tools keep the file as it is, date included: a review shows nothing to read.
        const written = diff === undefined || diff.changes.length > 0;
        if (written) {
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, serializeContractSnapshot(current));
        }
        if (options.json) {
          output.out(
            JSON.stringify({
              ok: true,
              snapshot: path,
              written,
              tools: current.tools.map((tool) => tool.name),
              ...(diff ? { counts: diff.counts } : {}),
            }),
          );
        } else if (!written) {
          output.out(`${shown(path)} already matches the ${toolCount(current)}; left it as it is`);
        } else {
          output.out(
            `wrote ${shown(path)}: ${toolCount(current)}` +
              (diff ? `; since the previous snapshot: ${countsText(diff)}` : '') +
              '. Commit it with the change.',
          );
        }
        return 0;
      }),
    );

  contract
    .command('check')
    .description('compare the committed snapshot with the configured tools; exit 1 on a breaking change')
    .option(
      '--snapshot <file>',
      `the snapshot to compare with (default: ${defaultSnapshotFileName} next to the config)`,
    )
    .action(
      commandAction(context, (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<CheckOptions>();
        const config = configOf(options);
        const path = snapshotPath({ config, given: options.snapshot });
        const committed = readSnapshot(path);
        if (!committed.ok) return refuse({ output, json: options.json === true, path, ...committed });
        const diff = diffSnapshots(committed.snapshot, snapshotContracts({ tools: config.tools }));
        if (options.json) {
          output.out(JSON.stringify({ ...diff, snapshot: path, selection: committed.snapshot.selection }));
        } else {
          output.out(report({ diff, path, config, snapshot: committed.snapshot }));
        }
        return diff.ok ? 0 : 1;
      }),
    );
}

/** `--out`/`--snapshot` against the working directory, else the default file next to the config. */
function snapshotPath(input: { config: LoadedConfig; given: string | undefined }): string {
  if (input.given !== undefined) return resolve(input.given);
  return join(dirname(input.config.source), defaultSnapshotFileName);
}

function readSnapshot(
  path: string,
):
  { ok: true; snapshot: ContractSnapshot } | { ok: false; code: ContractSnapshotErrorCode; message: string } {
  if (!existsSync(path)) {
    return {
      ok: false,
      code: 'SNAPSHOT_NOT_FOUND',
      message: `no contract snapshot at ${shown(path)}: run \`toolgate contract snapshot\` and commit the file`,
    };
  }
  const parsed = parseContractSnapshot(readFileSync(path, 'utf8'));
  if (parsed.ok) return parsed;
  return {
    ok: false,
    code: parsed.code,
    message:
      `${shown(path)} is not a usable contract snapshot: ${parsed.message}; ` +
      'run `toolgate contract snapshot` to write it again',
  };
}

function refuse(input: {
  output: CliOutput;
  json: boolean;
  path: string;
  code: ContractSnapshotErrorCode;
  message: string;
}): number {
  const { output, code, message } = input;
  if (input.json) output.out(JSON.stringify({ ok: false, code, message, snapshot: input.path }));
  else output.error(`${code}: ${message}`);
  return 2;
}

function report(input: {
  diff: ContractDiff;
  path: string;
  config: LoadedConfig;
  snapshot: ContractSnapshot;
}): string {
  const { diff, path, snapshot } = input;
  const lines = [
    `contract check: ${shown(path)} (${snapshot.createdAt}) against the tools of ${shown(input.config.source)}`,
    renderContractDiff(diff),
  ];
  if (snapshot.selection.model !== undefined) {
    lines.push(
      `last full selection-eval run: ${snapshot.selection.model}${snapshot.selection.at ? ` at ${snapshot.selection.at}` : ''}`,
    );
  }
  if (diff.changes.length > 0) {
    lines.push('', 'A change you meant? Run `toolgate contract snapshot` and commit the file with it.');
  }
  return lines.join('\n');
}

function countsText(diff: ContractDiff): string {
  if (diff.changes.length === 0) return 'no changes';
  const { breaking, compatible, behavioural } = diff.counts;
  return `${breaking} breaking, ${compatible} compatible, ${behavioural} behavioural`;
}

function toolCount(snapshot: ContractSnapshot): string {
  return `${snapshot.tools.length} ${snapshot.tools.length === 1 ? 'tool' : 'tools'}`;
}

/** A path as a person reads it: relative to the working directory when inside it. */
function shown(path: string): string {
  const fromHere = relative(process.cwd(), path);
  return fromHere && !fromHere.startsWith('..') && !isAbsolute(fromHere) ? fromHere : path;
}
