import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ContractDiff } from 'toolgate';
import { parseContractSnapshot } from 'toolgate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliCapturing } from '../support/cli-runner';

// `toolgate contract snapshot` and `toolgate contract check` as a team runs them: a project whose
// config names the orders example's tools, a committed snapshot, and copies of the orders contracts
// edited the way a change would edit them. Each copy is a project of its own: a config is a module,
// loaded once per path.

const repository = join(__dirname, '..', '..');
const ordersContractsSource = readFileSync(
  join(repository, 'examples', 'orders', 'orders-contracts.ts'),
  'utf8',
);

let workspace: string;

beforeAll(() => {
  workspace = mkdtempSync(join(tmpdir(), 'toolgate-contracts-'));
  // The copies import `toolgate` and `zod` as a user's project does: through node_modules.
  mkdirSync(join(workspace, 'node_modules'));
  symlinkSync(repository, join(workspace, 'node_modules', 'toolgate'), 'junction');
  symlinkSync(
    dirname(require.resolve('zod/package.json')),
    join(workspace, 'node_modules', 'zod'),
    'junction',
  );
});

afterAll(() => {
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

/** A project with a copy of the orders contracts, each edit applied exactly once; returns its config path. */
function ordersProject(name: string, edits: [from: string, to: string][] = []): string {
  let source = ordersContractsSource;
  for (const [from, to] of edits) {
    expect(source.split(from), `"${from}" appears once in orders-contracts.ts`).toHaveLength(2);
    source = source.replace(from, to);
  }
  const directory = join(workspace, name);
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'orders-contracts.ts'), source);
  writeFileSync(
    join(directory, 'toolgate.config.ts'),
    [
      "import { defineConfig } from 'toolgate';",
      "import { ordersContracts } from './orders-contracts';",
      '',
      "export default defineConfig({ tools: ordersContracts, policyPath: './policy.json', implementations: () => [] });",
      '',
    ].join('\n'),
  );
  return join(directory, 'toolgate.config.ts');
}

/** The committed snapshot of the unedited orders tools, written by `contract snapshot`. */
let committed: string;

beforeAll(async () => {
  const config = ordersProject('committed');
  const run = await runCliCapturing(['contract', 'snapshot', '--config', config]);
  expect(run.code, run.error).toBe(0);
  committed = join(dirname(config), 'toolgate.contracts.json');
  expect(run.out).toContain('wrote ');
});

/** `contract check` of an edited copy against the committed snapshot, human and JSON. */
async function check(config: string) {
  const human = await runCliCapturing(['contract', 'check', '--config', config, '--snapshot', committed]);
  const machine = await runCliCapturing([
    'contract',
    'check',
    '--config',
    config,
    '--snapshot',
    committed,
    '--json',
  ]);
  expect(machine.code).toBe(human.code);
  return { ...human, diff: JSON.parse(machine.out) as ContractDiff };
}

describe('toolgate contract check on the orders example: one command, the right verdict, the exact path', () => {
  it('fails on an output field renamed, at the old field path, naming the likely new name', async () => {
    const config = ordersProject('renamed-output', [
      ['    remaining_refundable_cents: z.int(),', '    remaining_cents: z.int(),'],
    ]);
    const { code, out, diff } = await check(config);
    expect(code).toBe(1);
    expect(out).toContain(
      'breaking (the check fails):\n  refund_order.output.remaining_refundable_cents  FIELD_REMOVED',
    );
    expect(out).toContain('renamed to "remaining_cents"?');
    expect(diff.changes).toEqual([
      expect.objectContaining({
        verdict: 'breaking',
        kind: 'FIELD_REMOVED',
        tool: 'refund_order',
        path: 'output.remaining_refundable_cents',
        before: { type: 'integer', required: true },
      }),
      expect.objectContaining({ verdict: 'compatible', kind: 'FIELD_ADDED', path: 'output.remaining_cents' }),
    ]);
  });

  it('fails on the amount range tightened, with each bound before → after', async () => {
    const config = ordersProject('tightened-amount', [
      ['      .positive()', '      .min(100)\n      .max(1_000_000)'],
    ]);
    const { code, out, diff } = await check(config);
    expect(code).toBe(1);
    expect(out).toContain('  refund_order.input.amount_cents (minimum)  CONSTRAINT_TIGHTENED');
    expect(out).toContain('    ">= 1" → ">= 100"');
    expect(out).toContain('  refund_order.input.amount_cents (maximum)  CONSTRAINT_TIGHTENED');
    expect(out).toContain('    "none" → "<= 1000000"');
    expect(diff).toMatchObject({
      ok: false,
      verdict: 'breaking',
      counts: { breaking: 2, compatible: 0, behavioural: 0 },
    });
    expect(diff.changes.map(({ path, aspect, before, after }) => ({ path, aspect, before, after }))).toEqual([
      { path: 'input.amount_cents', aspect: 'minimum', before: '>= 1', after: '>= 100' },
      { path: 'input.amount_cents', aspect: 'maximum', before: 'none', after: '<= 1000000' },
    ]);
  });

  it('passes a description change, flagged as behavioural at the parameter, asking for the selection suite', async () => {
    const config = ordersProject('reworded-reason', [
      [
        "'Why the customer is refunded, as the user said it.'",
        "'Why the customer is refunded, in the words the user used.'",
      ],
    ]);
    const { code, out, diff } = await check(config);
    expect(code).toBe(0);
    expect(out).toContain(
      'behavioural (the check passes; run the selection suite):\n  refund_order.input.reason (description)',
    );
    expect(out).toContain(
      [
        '    before: "Why the customer is refunded, as the user said it."',
        '    after:  "Why the customer is refunded, in the words the user used."',
      ].join('\n'),
    );
    expect(diff).toMatchObject({ ok: true, verdict: 'behavioural', selectionSuiteMustRun: true });
    expect(diff.changes).toEqual([
      expect.objectContaining({
        verdict: 'behavioural',
        kind: 'DESCRIPTION_CHANGED',
        tool: 'refund_order',
        path: 'input.reason',
        aspect: 'description',
      }),
    ]);
  });

  it('passes the unedited tools with no changes', async () => {
    const { code, out, diff } = await check(join(workspace, 'committed', 'toolgate.config.ts'));
    expect(code).toBe(0);
    expect(out).toContain('no changes: the tools match the snapshot');
    expect(diff).toMatchObject({ ok: true, verdict: 'unchanged', changes: [] });
  });
});

describe('toolgate contract snapshot', () => {
  it('leaves an unchanged snapshot as it is, date included', async () => {
    const before = readFileSync(committed, 'utf8');
    const run = await runCliCapturing([
      'contract',
      'snapshot',
      '--config',
      join(workspace, 'committed', 'toolgate.config.ts'),
    ]);
    expect(run.code).toBe(0);
    expect(run.out).toContain('already matches the 2 tools');
    expect(readFileSync(committed, 'utf8')).toBe(before);
  });

  it('keeps the selection-eval record when it writes a changed snapshot, and says what changed', async () => {
    const out = join(workspace, 'retaken', 'contracts.json');
    mkdirSync(dirname(out), { recursive: true });
    const record = JSON.parse(readFileSync(committed, 'utf8')) as { selection: object };
    record.selection = { model: 'gpt-test-1', at: '2025-06-01T00:00:00.000Z' };
    writeFileSync(out, JSON.stringify(record));
    const config = ordersProject('reworded-tool', [
      [
        "'Refund part or all of an order. Call get_order first.",
        "'Refund part or all of an order; call get_order first.",
      ],
    ]);
    const run = await runCliCapturing(['contract', 'snapshot', '--config', config, '--out', out]);
    expect(run.code, run.error).toBe(0);
    expect(run.out).toContain('since the previous snapshot: 0 breaking, 0 compatible, 1 behavioural');
    const written = parseContractSnapshot(readFileSync(out, 'utf8'));
    expect(written.ok && written.snapshot.selection).toEqual({
      model: 'gpt-test-1',
      at: '2025-06-01T00:00:00.000Z',
    });
    expect(written.ok && written.snapshot.tools[1]!.description).toContain('; call get_order first.');
  });
});

describe('toolgate contract check without a usable snapshot', () => {
  const config = () => join(workspace, 'committed', 'toolgate.config.ts');

  it('refuses a missing snapshot with SNAPSHOT_NOT_FOUND and says how to write one', async () => {
    const missing = join(workspace, 'nowhere', 'toolgate.contracts.json');
    const human = await runCliCapturing(['contract', 'check', '--config', config(), '--snapshot', missing]);
    expect(human.code).toBe(2);
    expect(human.error).toContain('SNAPSHOT_NOT_FOUND: no contract snapshot at');
    expect(human.error).toContain('run `toolgate contract snapshot` and commit the file');
    const machine = await runCliCapturing([
      'contract',
      'check',
      '--config',
      config(),
      '--snapshot',
      missing,
      '--json',
    ]);
    expect(machine.code).toBe(2);
    expect(JSON.parse(machine.out)).toMatchObject({
      ok: false,
      code: 'SNAPSHOT_NOT_FOUND',
      snapshot: missing,
    });
  });

  it('refuses a malformed snapshot with SNAPSHOT_INVALID and says what is wrong', async () => {
    const malformed = join(workspace, 'malformed.json');
    writeFileSync(malformed, '{"version": 1, "tools": "none"}');
    const run = await runCliCapturing(['contract', 'check', '--config', config(), '--snapshot', malformed]);
    expect(run.code).toBe(2);
    expect(run.error).toContain('SNAPSHOT_INVALID:');
    expect(run.error).toContain('tools: Invalid input: expected array');
    expect(run.error).toContain('run `toolgate contract snapshot` to write it again');
  });

  it('refuses a folder where the snapshot file should be, for check and for snapshot, with exit 2', async () => {
    const folder = join(workspace, 'a-folder');
    mkdirSync(folder, { recursive: true });
    const checked = await runCliCapturing(['contract', 'check', '--config', config(), '--snapshot', folder]);
    expect(checked.code).toBe(2);
    expect(checked.error).toContain('SNAPSHOT_INVALID:');
    expect(checked.error).toContain('is a folder, not a contract snapshot');
    const written = await runCliCapturing(['contract', 'snapshot', '--config', config(), '--out', folder]);
    expect(written.code).toBe(2);
    expect(written.error).toContain('is a folder; name the snapshot file to write');
  });

  it('answers a file system error with its message and exit 2, never a stack trace', async () => {
    const file = join(workspace, 'a-file');
    writeFileSync(file, 'not a folder');
    const run = await runCliCapturing([
      'contract',
      'snapshot',
      '--config',
      config(),
      '--out',
      join(file, 'x.json'),
    ]);
    expect(run.code).toBe(2);
    expect(run.error).toMatch(/^(ENOTDIR|EEXIST): /);
    expect(run.error).not.toContain('    at ');
  });
});
