import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContractDiff, ContractFixture, ContractWarning } from 'toolgate';
import { parseContractFixture, serializeContractFixture } from 'toolgate';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCliCapturing } from '../support/cli-runner';

// The two warnings `toolgate contract check` gives besides the diff, neither of which a code change
// shows: recorded answers grown old, and a model other than the one the full selection set last
// passed with. Both leave the exit code to the diff: 0, or 1 on a breaking change.

const repository = join(__dirname, '..', '..');
const config = join(repository, 'toolgate.config.ts');
const day = 86_400_000;

let workspace: string;
const modelBefore = process.env.LLM_MODEL;

beforeAll(() => {
  workspace = mkdtempSync(join(tmpdir(), 'toolgate-check-warnings-'));
  delete process.env.LLM_MODEL;
});

afterEach(() => {
  delete process.env.LLM_MODEL;
});

afterAll(() => {
  if (modelBefore !== undefined) process.env.LLM_MODEL = modelBefore;
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

const committedFixture = (tool: string, scenario: string): ContractFixture => {
  const parsed = parseContractFixture(
    readFileSync(join(repository, 'contract-fixtures', tool, `${scenario}.json`), 'utf8'),
  );
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.fixture;
};

/** A fixtures folder of the committed get_order fixtures, recorded `ageDays` ago each. */
function fixturesAged(name: string, ages: Record<string, number>): string {
  const directory = join(workspace, name);
  for (const [scenario, ageDays] of Object.entries(ages)) {
    const fixture = committedFixture('get_order', scenario);
    mkdirSync(join(directory, 'get_order'), { recursive: true });
    writeFileSync(
      join(directory, 'get_order', `${scenario}.json`),
      serializeContractFixture({
        ...fixture,
        recordedAt: new Date(Date.now() - ageDays * day).toISOString(),
      }),
    );
  }
  return directory;
}

/** The committed snapshot, with a selection record and, optionally, one edit. */
function snapshotWith(
  name: string,
  edit: (snapshot: Record<string, unknown>) => void = () => undefined,
): string {
  const snapshot = JSON.parse(readFileSync(join(repository, 'toolgate.contracts.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  edit(snapshot);
  const path = join(workspace, `${name}.json`);
  writeFileSync(path, JSON.stringify(snapshot));
  return path;
}

type CheckReport = ContractDiff & { fullSelectionMustRun: boolean; warnings: ContractWarning[] };

async function check(...argv: string[]) {
  const human = await runCliCapturing(['contract', 'check', '--config', config, ...argv]);
  const machine = await runCliCapturing(['contract', 'check', '--config', config, ...argv, '--json']);
  expect(machine.code).toBe(human.code);
  return { ...human, report: JSON.parse(machine.out) as CheckReport };
}

describe('contract check on recorded answers grown old', () => {
  const snapshot = () => snapshotWith('plain');

  it('warns about a fixture recorded more than 30 days ago, naming it and saying to re-record, and passes', async () => {
    const fixtures = fixturesAged('old', { success: 45, empty: 2 });
    const { code, out, report } = await check('--snapshot', snapshot(), '--fixtures', fixtures);
    expect(code).toBe(0);
    expect(out).toContain('warnings (the check passes with them):');
    expect(out).toContain(
      '1 fixture was recorded more than 30d ago (the oldest: get_order success, 45 days): ' +
        're-record them with `toolgate contract record`',
    );
    expect(report.warnings).toEqual([
      expect.objectContaining({
        kind: 'FIXTURES_STALE',
        maxAge: '30d',
        fixtures: [expect.objectContaining({ tool: 'get_order', scenario: 'success', ageDays: 45 })],
      }),
    ]);
    expect(report.ok).toBe(true);
  });

  it('says nothing about fixtures recorded within the age', async () => {
    const fixtures = fixturesAged('fresh', { success: 0, empty: 29 });
    const { code, out, report } = await check('--snapshot', snapshot(), '--fixtures', fixtures);
    expect(code).toBe(0);
    expect(out).not.toContain('warnings (the check passes');
    expect(report.warnings).toEqual([]);
  });

  it('takes the age from --max-fixture-age, and refuses one it cannot read', async () => {
    const fixtures = fixturesAged('a-week', { success: 10, empty: 3 });
    const { out, report } = await check(
      '--snapshot',
      snapshot(),
      '--fixtures',
      fixtures,
      '--max-fixture-age',
      '1w',
    );
    expect(out).toContain('1 fixture was recorded more than 1w ago (the oldest: get_order success, 10 days)');
    expect(report.warnings).toHaveLength(1);
    const twoDays = await check('--snapshot', snapshot(), '--fixtures', fixtures, '--max-fixture-age', '2');
    expect(twoDays.out).toContain(
      '2 fixtures were recorded more than 2 ago (the oldest: get_order success, 10 days)',
    );
    const bad = await runCliCapturing([
      'contract',
      'check',
      '--config',
      config,
      '--max-fixture-age',
      'monthly',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.error).toContain('"monthly" is not an age');
  });

  it("takes the snapshot, the fixtures and the age from the config's contracts when no flag is given", async () => {
    fixturesAged('configured', { success: 10, empty: 3 });
    snapshotWith('configured-snapshot');
    const contracts = (maxFixtureAge: string) =>
      `{ snapshotPath: './configured-snapshot.json', fixturesDirectory: './configured', maxFixtureAge: '${maxFixtureAge}' }`;
    // A config module is loaded once per process: each variant is a file of its own.
    const write = (maxFixtureAge: string) => {
      const configured = join(workspace, `configured-${maxFixtureAge}.config.ts`);
      writeFileSync(
        configured,
        `import base from ${JSON.stringify(join(repository, 'toolgate.config.ts'))};\n` +
          `export default { ...base, policyPath: ${JSON.stringify(join(repository, 'examples/orders/policy.json'))}, ` +
          `contracts: ${contracts(maxFixtureAge)} };\n`,
      );
      return configured;
    };
    const configured = write('1w');
    const run = await runCliCapturing(['contract', 'check', '--config', configured, '--json']);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.out) as CheckReport & { snapshot: string };
    expect(report.snapshot).toBe(join(workspace, 'configured-snapshot.json'));
    expect(report.warnings).toEqual([
      expect.objectContaining({
        kind: 'FIXTURES_STALE',
        maxAge: '1w',
        fixtures: [expect.objectContaining({ tool: 'get_order', scenario: 'success', ageDays: 10 })],
      }),
    ]);
    // A flag still overrides the config.
    const flagged = await runCliCapturing([
      'contract',
      'check',
      '--config',
      configured,
      '--max-fixture-age',
      '2',
      '--json',
    ]);
    expect((JSON.parse(flagged.out) as CheckReport).warnings[0]).toMatchObject({ maxAge: '2' });
    const bad = await runCliCapturing(['contract', 'check', '--config', write('monthly')]);
    expect(bad.code).toBe(2);
    expect(bad.error).toContain('contracts.maxFixtureAge: "monthly" is not an age');
  });

  it('warns about a fixture dated in the future, which would never grow old', async () => {
    const fixtures = fixturesAged('future', { success: -400, empty: 2 });
    const { code, report } = await check('--snapshot', snapshot(), '--fixtures', fixtures);
    expect(code).toBe(0);
    expect(report.warnings).toEqual([
      expect.objectContaining({
        kind: 'FIXTURES_FROM_THE_FUTURE',
        fixtures: [expect.objectContaining({ tool: 'get_order', scenario: 'success' })],
        message: expect.stringContaining('a wrong clock or a hand edit') as string,
      }),
    ]);
  });

  it('warns about a folder named like a fixture, and refuses --fixtures naming a file with exit 2', async () => {
    const fixtures = fixturesAged('folder-as-fixture', { success: 1 });
    mkdirSync(join(fixtures, 'get_order', 'empty.json'));
    const { code, report } = await check('--snapshot', snapshot(), '--fixtures', fixtures);
    expect(code).toBe(0);
    expect(report.warnings).toEqual([
      expect.objectContaining({
        kind: 'FIXTURE_UNREADABLE',
        message: expect.stringContaining('is not a usable fixture: it is a folder, not a file') as string,
      }),
    ]);
    const file = join(workspace, 'fixtures-file');
    writeFileSync(file, 'not a folder');
    const refused = await runCliCapturing(['contract', 'check', '--config', config, '--fixtures', file]);
    expect(refused.code).toBe(2);
    expect(refused.error).toContain(`toolgate contract check: ${file} is a file, not a folder of fixtures`);
  });

  it('warns about a file in the folder that is not a fixture', async () => {
    const fixtures = fixturesAged('broken', { success: 1 });
    writeFileSync(join(fixtures, 'get_order', 'empty.json'), 'not json');
    const { code, report } = await check('--snapshot', snapshot(), '--fixtures', fixtures);
    expect(code).toBe(0);
    expect(report.warnings).toEqual([
      expect.objectContaining({
        kind: 'FIXTURE_UNREADABLE',
        message: expect.stringContaining('record it again') as string,
      }),
    ]);
  });
});

describe('contract check on a model other than the last full selection run', () => {
  const ran = () =>
    snapshotWith('selection', (snapshot) => {
      snapshot.selection = { model: 'model-a', at: '2026-11-01T00:00:00.000Z' };
    });
  const noFixtures = ['--fixtures', join(tmpdir(), 'toolgate-no-such-fixtures')];

  it('warns that the full selection set must run when --model differs, and passes', async () => {
    const { code, out, report } = await check('--snapshot', ran(), ...noFixtures, '--model', 'model-b');
    expect(code).toBe(0);
    expect(out).toContain(
      'the configured model is model-b and the last full selection run used model-a (2026-11-01T00:00:00.000Z): ' +
        'the full selection set must run',
    );
    expect(report).toMatchObject({
      ok: true,
      fullSelectionMustRun: true,
      warnings: [{ kind: 'MODEL_CHANGED', model: 'model-b', lastFullRun: { model: 'model-a' } }],
    });
  });

  it('reads the model from LLM_MODEL when no --model is given', async () => {
    process.env.LLM_MODEL = 'model-c';
    const { report } = await check('--snapshot', ran(), ...noFixtures);
    expect(report).toMatchObject({
      fullSelectionMustRun: true,
      warnings: [{ kind: 'MODEL_CHANGED', model: 'model-c' }],
    });
  });

  it('says nothing for the same model, or when no model is configured', async () => {
    expect((await check('--snapshot', ran(), ...noFixtures, '--model', 'model-a')).report).toMatchObject({
      fullSelectionMustRun: false,
      warnings: [],
    });
    expect((await check('--snapshot', ran(), ...noFixtures)).report.warnings).toEqual([]);
  });

  it('warns when no full selection run was ever recorded and a model is configured', async () => {
    const { out } = await check('--snapshot', snapshotWith('never-ran'), ...noFixtures, '--model', 'model-a');
    expect(out).toContain(
      'the configured model is model-a and no full selection run is recorded in the snapshot',
    );
  });
});

describe("the exit code stays the diff's", () => {
  it('fails a breaking change with exit 1, warnings or not', async () => {
    const removedCode = snapshotWith('breaking', (snapshot) => {
      const tools = snapshot.tools as { name: string; domainCodes: Record<string, string> }[];
      tools.find((tool) => tool.name === 'get_order')!.domainCodes.ORDER_ARCHIVED = 'the order is archived';
    });
    const fixtures = fixturesAged('old-and-breaking', { success: 90 });
    const { code, report } = await check(
      '--snapshot',
      removedCode,
      '--fixtures',
      fixtures,
      '--model',
      'model-z',
    );
    expect(code).toBe(1);
    expect(report).toMatchObject({ ok: false, verdict: 'breaking', fullSelectionMustRun: true });
    expect(report.warnings.map((warning) => warning.kind)).toEqual(['FIXTURES_STALE', 'MODEL_CHANGED']);
  });

  it('passes the repository as it is: its committed fixtures are all readable (their age only warns)', async () => {
    const { code, report } = await check();
    expect(code).toBe(0);
    expect(report.warnings.filter((warning) => warning.kind === 'FIXTURE_UNREADABLE')).toEqual([]);
  });
});
