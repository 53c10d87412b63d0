import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import type { FixtureTestResult } from '../contracts/adapter-verdicts';
import { testContractFixture } from '../contracts/adapter-verdicts';
import { diffSnapshots } from '../contracts/contract-diff';
import type { ContractDiff } from '../contracts/contract-diff';
import { defaultFixturesDirectoryName, describeAnswer } from '../contracts/contract-fixtures';
import type { ShapeChange } from '../contracts/contract-fixtures';
import { renderContractDiff } from '../contracts/contract-report';
import {
  parseContractSnapshot,
  serializeContractSnapshot,
  snapshotContracts,
} from '../contracts/contract-snapshot';
import type { ContractSnapshot, ContractSnapshotErrorCode } from '../contracts/contract-snapshot';
import type { ContractWarning } from '../contracts/contract-warnings';
import {
  defaultMaxFixtureAge,
  fixtureAgeWarnings,
  modelWarnings,
  parseAge,
} from '../contracts/contract-warnings';
import type { FixtureFolder } from '../contracts/fixture-files';
import {
  fixtureFolderProblem,
  readFixture,
  readFixtureFolder,
  writeFixture,
} from '../contracts/fixture-files';
import { recordingPlan, recordScenario } from '../contracts/fixture-recorder';
import type { LoadedConfig } from '../config';
import type { ImplementedTool, RecordingScenario } from '../tools/define-tool-implementation';
import { recordingScenarios } from '../tools/define-tool-implementation';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { commandAction, configOf } from './cli-context';

/** The snapshot's file name next to the config file, unless the config's `contracts.snapshotPath`, `--out` or `--snapshot` says otherwise. */
export const defaultSnapshotFileName = 'toolgate.contracts.json';

type SnapshotOptions = GlobalOptions & { out?: string };
type FixtureAgeOptions = { fixtures?: string; maxFixtureAge?: string };
type CheckOptions = GlobalOptions & FixtureAgeOptions & { snapshot?: string; model?: string };
type RecordOptions = GlobalOptions & {
  fixtures?: string;
  writes?: boolean;
  tool?: string[];
  scenario?: RecordingScenario[];
  source?: string;
};
type TestOptions = GlobalOptions & FixtureAgeOptions & { tool?: string[] };

const contractHelp = `
The snapshot (default: contracts.snapshotPath in your config, else ${defaultSnapshotFileName} next to it) is committed with your code.
check compares it with the configured tools and exits:
  0  no change, or only compatible or behavioural ones (behavioural: run the selection suite); warnings
     (fixtures older than --max-fixture-age, a model other than the last full selection run's) never fail it
  1  a breaking change
  2  no snapshot, or one that cannot be read (run toolgate contract snapshot), or a bad config

The fixtures (default: contracts.fixturesDirectory, else ${defaultFixturesDirectoryName}/ next to your config; <tool>/<scenario>.json) are
answers recorded from the running backends by record, committed, and replayed through each tool's
output adapter by test (exit 1 when one fails, with the field's path).`;

/**
 * Adds `contract snapshot` (writes the configured tools' contracts to a file to commit), `contract
 * check` (compares that file with the tools now; exit 1 on a breaking change, warnings for old
 * fixtures and a changed model), `contract record` (records the backends' answers as fixtures) and
 * `contract test` (runs each output adapter and the output schema on the fixtures; exit 1 on a failure).
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
    .option('--out <file>', `where to write it (default: contracts.snapshotPath in the config)`)
    .action(
      commandAction(context, (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<SnapshotOptions>();
        const config = configOf(options);
        const path = snapshotPath({ config, given: options.out });
        if (isFolder(path)) {
          output.error(
            `toolgate contract snapshot: ${shown(path)} is a folder; name the snapshot file to write`,
          );
          return 2;
        }
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
      `the snapshot to compare with (default: contracts.snapshotPath in the config)`,
    )
    .option(
      '--model <id>',
      'the model your agent runs (default: $LLM_MODEL); warns when the full set must run',
    )
    .option('--fixtures <dir>', `the recorded answers (default: contracts.fixturesDirectory in the config)`)
    .addOption(maxFixtureAgeOption())
    .action(
      commandAction(context, (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<CheckOptions>();
        const config = configOf(options);
        const path = snapshotPath({ config, given: options.snapshot });
        const committed = readSnapshot(path);
        if (!committed.ok) return refuse({ output, json: options.json === true, path, ...committed });
        const fixtures = fixturesPath({ config, given: options.fixtures });
        const problem = fixtureFolderProblem(fixtures);
        if (problem) return refuseFixtures({ output, command: 'check', problem });
        const diff = diffSnapshots(committed.snapshot, snapshotContracts({ tools: config.tools }));
        const folder = readFixtureFolder(fixtures);
        const warnings = [
          ...fixtureWarnings({ folder, maxAge: options.maxFixtureAge ?? config.contracts.maxFixtureAge }),
          ...modelWarnings({
            model: options.model ?? (process.env.LLM_MODEL || undefined),
            lastFullRun: committed.snapshot.selection,
          }),
        ];
        const fullSelectionMustRun = warnings.some((warning) => warning.kind === 'MODEL_CHANGED');
        if (options.json) {
          output.out(
            JSON.stringify({
              ...diff,
              fullSelectionMustRun,
              warnings,
              snapshot: path,
              selection: committed.snapshot.selection,
            }),
          );
        } else {
          output.out(report({ diff, path, config, snapshot: committed.snapshot, warnings }));
        }
        return diff.ok ? 0 : 1;
      }),
    );

  contract
    .command('record')
    .description(
      "record each tool's answers from its running backend as fixtures: a success, an empty result, " +
        'a business error, an unavailable backend (a write only with --writes)',
    )
    .option('--fixtures <dir>', `where to write (default: contracts.fixturesDirectory in the config)`)
    .option(
      '--writes',
      "also record writes' scenarios: real requests that change the backend (use a sandbox, never production)",
    )
    .option('--tool <name...>', 'only these tools')
    .addOption(new Option('--scenario <name...>', 'only these scenarios').choices([...recordingScenarios]))
    .option('--source <name>', "the source written into each fixture (default: the tool's recordings.source)")
    .addHelpText('after', recordHelp)
    .action(
      commandAction(context, async (_options: unknown, command: Command) =>
        recordCommand({ options: command.optsWithGlobals<RecordOptions>(), output }),
      ),
    );

  contract
    .command('test')
    .description(
      "run each tool's output adapter, then its output schema, on the recorded fixtures; exit 1 on a " +
        'field missing or moved, or an answer mapped to the wrong path (refusal, outage)',
    )
    .option('--fixtures <dir>', `the recorded answers (default: contracts.fixturesDirectory in the config)`)
    .option('--tool <name...>', 'only these tools')
    .addOption(maxFixtureAgeOption())
    .addHelpText('after', testHelp)
    .action(
      commandAction(context, async (_options: unknown, command: Command) =>
        testCommand({ options: command.optsWithGlobals<TestOptions>(), output }),
      ),
    );
}

const recordHelp = `
Each tool's implementation declares output: { request, adapt } and recordings: { source, scenarios }
(the arguments of each scenario). record sends each request as a call would (a fresh idempotency key,
no credential), reads first, and writes <tool>/<scenario>.json with recordedAt, source, the arguments
and the answer (status and body) as it came. An answer that does not fit its scenario (a 401 for a
success) is not written. A write's success applies a real effect: its scenarios are recorded only
with --writes, or when its recordings say sandbox: true.

Exit codes: 0 recorded (skipped scenarios are listed); 1 a scenario could not be recorded; 2 bad usage
or config, or no tool declares recordings.`;

const testHelp = `
Per scenario, what the adapter must make of the recorded answer:
  success, empty    an output the output schema accepts (a missing field is named by its path)
  business-error    toolRejection with one of the tool's domain codes (the recordings' code, if given)
  unavailable       transientToolError: retried, then UPSTREAM_UNAVAILABLE
A scenario a tool's recordings declare without a fixture fails too (run toolgate contract record).

Exit codes: 0 every fixture passed; 1 one failed or is missing; 2 bad usage or config, or nothing to test.`;

function maxFixtureAgeOption(): Option {
  return new Option(
    '--max-fixture-age <age>',
    `warn about fixtures recorded longer ago (12h, 30d, 2w; default: contracts.maxFixtureAge in the config, else ${defaultMaxFixtureAge})`,
  ).argParser((value: string) => {
    const age = parseAge(value);
    if (!age.ok) throw new InvalidArgumentError(`${age.message}.`);
    return value;
  });
}

/** `--fixtures` against the working directory, else the config's `contracts.fixturesDirectory`. */
function fixturesPath(input: { config: LoadedConfig; given: string | undefined }): string {
  if (input.given !== undefined) return resolve(input.given);
  return input.config.contracts.fixturesDirectory;
}

/** A fixtures path that cannot be the folder: said once, exit 2. */
function refuseFixtures(input: { output: CliOutput; command: string; problem: string }): number {
  input.output.error(`toolgate contract ${input.command}: ${input.problem}; pass --fixtures <folder>`);
  return 2;
}

function isFolder(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/** The folder's unreadable files and its fixtures older than `maxAge`, as warnings. */
function fixtureWarnings(input: { folder: FixtureFolder; maxAge: string; now?: Date }): ContractWarning[] {
  const age = parseAge(input.maxAge);
  const unreadable = input.folder.unreadable.map(({ file, message }): ContractWarning => ({
    kind: 'FIXTURE_UNREADABLE',
    message: `${shown(file)} is not a usable fixture: ${message}; record it again`,
    file,
  }));
  if (!age.ok) return unreadable;
  return [
    ...unreadable,
    ...fixtureAgeWarnings({
      fixtures: input.folder.fixtures.map(({ fixture }) => fixture),
      now: input.now ?? new Date(),
      maxAgeMs: age.ms,
      maxAge: input.maxAge,
    }),
  ];
}

/** What `record` did with one scenario. */
type RecordedStep =
  | { tool: string; scenario: RecordingScenario; status: 'skipped'; message: string }
  | { tool: string; scenario: RecordingScenario; status: 'failed'; message: string }
  | {
      tool: string;
      scenario: RecordingScenario;
      status: 'recorded';
      file: string;
      answer: string;
      /** The source, or the scenario's own request when that answered. */
      from: string;
      new: boolean;
      changes: ShapeChange[];
    };

/** The configured tools' implementations, or undefined (said on stderr) when `--tool` names one that is not configured. */
async function namedTools(input: {
  config: ReturnType<typeof configOf>;
  only: readonly string[] | undefined;
  command: string;
  output: CliOutput;
}): Promise<Awaited<ReturnType<ReturnType<typeof configOf>['implementations']>> | undefined> {
  const tools = await input.config.implementations();
  const unknown = (input.only ?? []).filter((name) => !tools.some((tool) => tool.contract.name === name));
  if (!unknown.length) return tools;
  input.output.error(`toolgate contract ${input.command}: no configured tool is named ${unknown.join(', ')}`);
  return undefined;
}

async function recordCommand(input: { options: RecordOptions; output: CliOutput }): Promise<number> {
  const { options, output } = input;
  const config = configOf(options);
  const directory = fixturesPath({ config, given: options.fixtures });
  const problem = fixtureFolderProblem(directory);
  if (problem) return refuseFixtures({ output, command: 'record', problem });
  const tools = await namedTools({ config, only: options.tool, command: 'record', output });
  if (!tools) return 2;
  const plan = recordingPlan({
    tools,
    writes: options.writes === true,
    only: {
      ...(options.tool ? { tools: options.tool } : {}),
      ...(options.scenario ? { scenarios: options.scenario } : {}),
    },
  });
  if (plan.length === 0) {
    output.error(
      'toolgate contract record: no tool to record; declare output: { request, adapt } and recordings: ' +
        "{ source, scenarios } in a tool's implementation (see the orders example)",
    );
    return 2;
  }
  const recordedAt = new Date().toISOString();
  const results: RecordedStep[] = [];
  for (const step of plan) {
    const tool = step.tool.contract.name;
    if (step.skipped !== undefined) {
      results.push({ tool, scenario: step.scenario, status: 'skipped', message: step.skipped });
      continue;
    }
    const previous = readFixture({ directory, tool, scenario: step.scenario });
    const recorded = await recordScenario({
      tool: step.tool,
      scenario: step.scenario,
      recordedAt,
      ...(options.source !== undefined ? { source: options.source } : {}),
      ...(previous ? { previous } : {}),
    });
    if (!recorded.ok) {
      results.push({ tool, scenario: step.scenario, status: 'failed', message: recorded.message });
      continue;
    }
    const file = writeFixture({ directory, fixture: recorded.fixture });
    results.push({
      tool,
      scenario: step.scenario,
      status: 'recorded',
      file,
      answer: describeAnswer(recorded.fixture.response),
      from: recorded.ownRequest ? "the scenario's own request" : recorded.fixture.source,
      new: !recorded.previous,
      changes: recorded.changes,
    });
  }
  const failed = results.filter((result) => result.status === 'failed').length;
  if (options.json) {
    output.out(JSON.stringify({ ok: failed === 0, fixtures: directory, recordedAt, results }));
  } else {
    output.out(`contract record: ${shown(directory)}, recorded at ${recordedAt}`);
    for (const result of results) {
      const name = `${result.tool} ${result.scenario}`;
      if (result.status === 'skipped') output.out(`  skipped   ${name}: ${result.message}`);
      else if (result.status === 'failed') output.out(`  FAILED    ${name}: ${result.message}`);
      else {
        const shape = result.new
          ? 'new'
          : result.changes.length === 0
            ? 'same shape as before'
            : `${result.changes.length} ${result.changes.length === 1 ? 'change' : 'changes'} in shape`;
        output.out(
          `  recorded  ${name}: ${result.answer} from ${result.from} (${shape}) → ${shown(result.file)}`,
        );
        for (const change of result.changes) {
          output.out(`              ${change.path}: ${change.before} → ${change.after}`);
        }
      }
    }
    const counts = ['recorded', 'skipped', 'failed'].map(
      (status) => `${results.filter((result) => result.status === status).length} ${status}`,
    );
    output.out(
      `${counts.join(', ')}.` +
        (failed ? '' : " Run `toolgate contract test`, then review the fixtures' diff and commit them."),
    );
  }
  return failed ? 1 : 0;
}

async function testCommand(input: { options: TestOptions; output: CliOutput }): Promise<number> {
  const { options, output } = input;
  const config = configOf(options);
  const directory = fixturesPath({ config, given: options.fixtures });
  const problem = fixtureFolderProblem(directory);
  if (problem) return refuseFixtures({ output, command: 'test', problem });
  const tools = await namedTools({ config, only: options.tool, command: 'test', output });
  if (!tools) return 2;
  const chosen = (name: string): boolean => options.tool === undefined || options.tool.includes(name);
  const byName = new Map(tools.map((tool) => [tool.contract.name, tool]));
  const folder = readFixtureFolder(directory);
  const results: (FixtureTestResult & { file: string })[] = [];
  const notes: string[] = [];
  for (const { file, fixture } of folder.fixtures) {
    if (!chosen(fixture.tool)) continue;
    const tool = byName.get(fixture.tool);
    if (!tool) {
      notes.push(
        `${shown(file)}: no configured tool is named ${fixture.tool}; delete the fixture if the tool is gone`,
      );
      continue;
    }
    results.push({ ...testContractFixture({ tool, fixture }), file });
  }
  const missing = missingFixtures({ tools: tools.filter((tool) => chosen(tool.contract.name)), folder });
  const untested = tools
    .filter((tool) => chosen(tool.contract.name) && tool.implementation.output !== undefined)
    .filter(
      (tool) =>
        !tool.implementation.recordings && !results.some((result) => result.tool === tool.contract.name),
    )
    .map((tool) => tool.contract.name);
  const warnings = fixtureWarnings({
    folder,
    maxAge: options.maxFixtureAge ?? config.contracts.maxFixtureAge,
  });
  if (results.length === 0 && missing.length === 0 && folder.unreadable.length === 0) {
    output.error(
      `toolgate contract test: nothing to test: no fixtures in ${shown(directory)} and no tool declares recordings; ` +
        'declare output and recordings in an implementation, then run toolgate contract record',
    );
    return 2;
  }
  const failures = results.filter((result) => !result.ok).length + missing.length + folder.unreadable.length;
  if (options.json) {
    output.out(
      JSON.stringify({
        ok: failures === 0,
        fixtures: directory,
        counts: {
          passed: results.filter((result) => result.ok).length,
          failed: results.filter((result) => !result.ok).length,
          missing: missing.length,
          unreadable: folder.unreadable.length,
        },
        results,
        missing,
        unreadable: folder.unreadable,
        untested,
        notes,
        warnings,
      }),
    );
  } else {
    output.out(
      testReport({ directory, results, missing, unreadable: folder.unreadable, untested, notes, warnings }),
    );
  }
  return failures ? 1 : 0;
}

/** The scenarios each tool's recordings declare that have no fixture. */
function missingFixtures(input: {
  tools: readonly ImplementedTool[];
  folder: FixtureFolder;
}): { tool: string; scenario: RecordingScenario }[] {
  return input.tools.flatMap((tool) => {
    const declared = tool.implementation.recordings?.scenarios ?? {};
    return recordingScenarios
      .filter((scenario) => declared[scenario] !== undefined)
      .filter(
        (scenario) =>
          !input.folder.fixtures.some(
            ({ fixture }) => fixture.tool === tool.contract.name && fixture.scenario === scenario,
          ),
      )
      .map((scenario) => ({ tool: tool.contract.name, scenario }));
  });
}

function testReport(input: {
  directory: string;
  results: (FixtureTestResult & { file: string })[];
  missing: { tool: string; scenario: RecordingScenario }[];
  unreadable: { file: string; message: string }[];
  untested: string[];
  notes: string[];
  warnings: ContractWarning[];
}): string {
  const { results, missing, unreadable } = input;
  const failed = results.filter((result) => !result.ok);
  const lines = [`contract test: ${results.length} fixtures in ${shown(input.directory)}`];
  if (failed.length || missing.length || unreadable.length) {
    lines.push('', 'failed:');
    for (const result of failed) {
      for (const problem of result.problems) {
        lines.push(
          `  ${result.tool} ${result.scenario}: ${problem.path ? `${problem.path}: ` : ''}${problem.message}`,
        );
      }
    }
    for (const { tool, scenario } of missing) {
      lines.push(`  ${tool} ${scenario}: no fixture; record it with \`toolgate contract record\``);
    }
    for (const { file, message } of unreadable)
      lines.push(`  ${shown(file)}: not a usable fixture: ${message}`);
  }
  const passed = results.filter((result) => result.ok);
  if (passed.length) {
    lines.push('', 'passed:');
    for (const result of passed) lines.push(`  ${result.tool} ${result.scenario}: ${outcomeText(result)}`);
  }
  const notes = [
    ...results.flatMap((result) => result.notes.map((note) => `${result.tool} ${result.scenario}: ${note}`)),
    ...input.notes,
    ...input.untested.map((tool) => `${tool}: an output adapter with no recordings; its adapter is untested`),
    ...input.warnings.map((warning) => warning.message),
  ];
  if (notes.length)
    lines.push('', 'warnings (the test passes with them):', ...notes.map((note) => `  ${note}`));
  const failures = failed.length + missing.length + unreadable.length;
  lines.push('', failures ? `${failures} failed.` : 'every fixture passed.');
  return lines.join('\n');
}

function outcomeText(result: FixtureTestResult): string {
  switch (result.outcome.kind) {
    case 'output':
      return 'adapted, and the output schema accepts it';
    case 'rejection':
      return `refused with ${result.outcome.code}`;
    case 'transient':
      return 'an outage: retried, then UPSTREAM_UNAVAILABLE';
    case 'error':
    case 'no-adapter':
      return result.outcome.kind;
  }
}

/** `--out`/`--snapshot` against the working directory, else the config's `contracts.snapshotPath`. */
export function snapshotPath(input: { config: LoadedConfig; given: string | undefined }): string {
  if (input.given !== undefined) return resolve(input.given);
  return input.config.contracts.snapshotPath;
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
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const folder = (error as NodeJS.ErrnoException).code === 'EISDIR';
    return {
      ok: false,
      code: 'SNAPSHOT_INVALID',
      message: folder
        ? `${shown(path)} is a folder, not a contract snapshot: name the snapshot file`
        : `${shown(path)} cannot be read (${(error as Error).message})`,
    };
  }
  const parsed = parseContractSnapshot(text);
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
  warnings: ContractWarning[];
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
  if (input.warnings.length > 0) {
    lines.push(
      '',
      'warnings (the check passes with them):',
      ...input.warnings.map((warning) => `  ${warning.message}`),
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
