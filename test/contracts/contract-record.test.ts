import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContractFixture, FixtureTestResult } from 'toolgate';
import { generateKeyPairFiles, parseContractFixture } from 'toolgate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrdersProcess } from '../../examples/orders/service/orders-process';
import { startOrdersProcess } from '../../examples/orders/service/orders-process';
import { runCliCapturing } from '../support/cli-runner';

// `toolgate contract record` against the real orders service (its own process, a fresh database), with
// the repository's config, whose implementations read ORDERS_URL; then `toolgate contract test` on
// what it wrote, as a team's CI does.

const repository = join(__dirname, '..', '..');
const config = join(repository, 'toolgate.config.ts');

let orders: OrdersProcess;
let workspace: string;
const ordersUrlBefore = process.env.ORDERS_URL;

beforeAll(async () => {
  orders = await startOrdersProcess();
  process.env.ORDERS_URL = orders.url;
  workspace = mkdtempSync(join(tmpdir(), 'toolgate-record-'));
});

afterAll(async () => {
  if (ordersUrlBefore === undefined) delete process.env.ORDERS_URL;
  else process.env.ORDERS_URL = ordersUrlBefore;
  await orders?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

function fixtureAt(directory: string, tool: string, scenario: string): ContractFixture {
  const parsed = parseContractFixture(readFileSync(join(directory, tool, `${scenario}.json`), 'utf8'));
  if (!parsed.ok) throw new Error(`${tool}/${scenario}.json: ${parsed.message}`);
  return parsed.fixture;
}

const record = (...argv: string[]) => runCliCapturing(['contract', 'record', '--config', config, ...argv]);
const test = (...argv: string[]) => runCliCapturing(['contract', 'test', '--config', config, ...argv]);

describe('toolgate contract record against the running orders service', () => {
  let directory: string;
  let startedAt: number;

  beforeAll(async () => {
    await orders.api.reset();
    directory = join(workspace, 'recorded');
    startedAt = Date.now();
    const run = await record('--fixtures', directory, '--writes');
    expect(run.code, run.out + run.error).toBe(0);
    expect(run.out).toContain('8 recorded, 0 skipped, 0 failed.');
  });

  it('writes the four scenarios of each tool, each with recordedAt, source, the arguments and the answer', () => {
    expect(readdirSync(directory).sort()).toEqual(['get_order', 'refund_order']);
    for (const tool of ['get_order', 'refund_order']) {
      expect(readdirSync(join(directory, tool)).sort()).toEqual([
        'business-error.json',
        'empty.json',
        'success.json',
        'unavailable.json',
      ]);
      for (const scenario of ['success', 'empty', 'business-error', 'unavailable']) {
        const fixture = fixtureAt(directory, tool, scenario);
        expect(fixture).toMatchObject({ version: 1, tool, scenario, source: orders.url });
        expect(Date.parse(fixture.recordedAt)).toBeGreaterThanOrEqual(startedAt - 1000);
        expect(Date.parse(fixture.recordedAt)).toBeLessThanOrEqual(Date.now());
      }
    }
  });

  it("keeps each answer as the service sent it: a read's order, a refund, the refusals, no answer at all", () => {
    expect(fixtureAt(directory, 'get_order', 'success')).toMatchObject({
      request: { args: { order_id: 'ORD-1003' } },
      response: { status: 200, body: { order_id: 'ORD-1003', customer_id: 'CUS-3', total_cents: 90000 } },
    });
    expect(fixtureAt(directory, 'get_order', 'empty').response).toMatchObject({
      status: 200,
      body: { order_id: 'ORD-1002', refunded_cents: 0, note: null },
    });
    expect(fixtureAt(directory, 'get_order', 'business-error').response).toMatchObject({
      status: 404,
      body: { code: 'ORDER_NOT_FOUND' },
    });
    expect(fixtureAt(directory, 'refund_order', 'success')).toMatchObject({
      request: { args: { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' } },
      response: {
        status: 201,
        body: { order_id: 'ORD-1001', amount_cents: 2590, remaining_refundable_cents: 12000 - 2590 },
      },
    });
    expect(fixtureAt(directory, 'refund_order', 'empty').response).toMatchObject({
      status: 201,
      body: { order_id: 'ORD-1002', remaining_refundable_cents: 0 },
    });
    expect(fixtureAt(directory, 'refund_order', 'business-error').response).toMatchObject({
      status: 422,
      body: { code: 'AMOUNT_EXCEEDS_REFUNDABLE' },
    });
    for (const tool of ['get_order', 'refund_order']) {
      expect(fixtureAt(directory, tool, 'unavailable').response).toEqual({
        status: null,
        body: null,
        error: 'ECONNREFUSED',
      });
    }
  });

  it('applied exactly the two refunds its write scenarios stand for', async () => {
    expect(await orders.api.refundCount()).toBe(2);
  });

  it('passes toolgate contract test on what it recorded', async () => {
    const run = await test('--fixtures', directory);
    expect(run.code, run.out + run.error).toBe(0);
    expect(run.out).toContain('contract test: 8 fixtures');
    expect(run.out).toContain('every fixture passed.');
  });

  it('re-records with the same shape, keeping the volatile ids and dates so the diff shows only real change', async () => {
    const before = fixtureAt(directory, 'refund_order', 'success');
    await orders.api.reset();
    const run = await record(
      '--fixtures',
      directory,
      '--writes',
      '--tool',
      'refund_order',
      '--scenario',
      'success',
    );
    expect(run.code, run.out + run.error).toBe(0);
    expect(run.out).toMatch(/recorded {2}refund_order success: 201 from .* \(same shape as before\)/);
    const after = fixtureAt(directory, 'refund_order', 'success');
    expect(after.recordedAt > before.recordedAt).toBe(true);
    const volatile = ['refund_id', 'idempotency_key', 'created_at'] as const;
    for (const field of volatile) {
      expect((after.response.body as Record<string, unknown>)[field]).toBe(
        (before.response.body as Record<string, unknown>)[field],
      );
    }
  });
});

describe('what toolgate contract record refuses to do', () => {
  it("skips a write's scenarios without --writes, records its unavailable one and every read", async () => {
    await orders.api.reset();
    const directory = join(workspace, 'reads-only');
    const run = await record('--fixtures', directory);
    expect(run.code, run.out + run.error).toBe(0);
    expect(run.out).toContain('5 recorded, 3 skipped, 0 failed.');
    for (const scenario of ['success', 'empty', 'business-error']) {
      expect(run.out).toContain(
        `skipped   refund_order ${scenario}: a write: recording its ${scenario} sends a real request`,
      );
      expect(existsSync(join(directory, 'refund_order', `${scenario}.json`))).toBe(false);
    }
    expect(run.out).toContain('pass --writes to record it against a backend whose data does not matter');
    expect(existsSync(join(directory, 'refund_order', 'unavailable.json'))).toBe(true);
    expect(await orders.api.refundCount()).toBe(0);
    // A write's scenarios never recorded are missing: the adapter test fails until they are.
    const tested = await test('--fixtures', directory, '--json');
    expect(tested.code).toBe(1);
    expect(JSON.parse(tested.out)).toMatchObject({
      ok: false,
      missing: [
        { tool: 'refund_order', scenario: 'success' },
        { tool: 'refund_order', scenario: 'empty' },
        { tool: 'refund_order', scenario: 'business-error' },
      ],
    });
  });

  it('writes no fixture for an answer that does not fit its scenario, and says what came instead', async () => {
    const keys = mkdtempSync(join(workspace, 'keys-'));
    const minter = generateKeyPairFiles({ directory: keys, owner: { kind: 'minter' } });
    const checking = await startOrdersProcess({ minterPublicKeyPath: minter.publicKey });
    try {
      process.env.ORDERS_URL = checking.url;
      const directory = join(workspace, 'credentials-checked');
      const run = await record(
        '--fixtures',
        directory,
        '--writes',
        '--tool',
        'refund_order',
        '--scenario',
        'success',
      );
      expect(run.code).toBe(1);
      expect(run.out).toContain(
        'FAILED    refund_order success: the backend answered 401 (CREDENTIAL_MISSING',
      );
      expect(run.out).toContain(
        'not a success (2xx); the backend wants a credential, and a recording sends none',
      );
      expect(existsSync(join(directory, 'refund_order', 'success.json'))).toBe(false);
      expect(await checking.api.refundCount()).toBe(0);
    } finally {
      process.env.ORDERS_URL = orders.url;
      await checking.stop();
    }
  });
});

describe('toolgate contract test on a vendor change', () => {
  it('fails a renamed field with exit 1 and the field path, in the report and in --json', async () => {
    const directory = join(workspace, 'renamed');
    cpSync(join(repository, 'contract-fixtures'), directory, { recursive: true });
    const file = join(directory, 'refund_order', 'success.json');
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace('"remaining_refundable_cents"', '"remaining_cents"'),
    );
    const human = await test('--fixtures', directory);
    expect(human.code).toBe(1);
    expect(human.out).toContain(
      'failed:\n  refund_order success: output.remaining_refundable_cents: required, missing (the response has remaining_cents)',
    );
    expect(human.out).toContain('1 failed.');
    const machine = await test('--fixtures', directory, '--json');
    expect(machine.code).toBe(1);
    const report = JSON.parse(machine.out) as {
      ok: boolean;
      counts: Record<string, number>;
      results: FixtureTestResult[];
    };
    expect(report).toMatchObject({ ok: false, counts: { passed: 7, failed: 1, missing: 0, unreadable: 0 } });
    expect(report.results.filter((result) => !result.ok)).toEqual([
      expect.objectContaining({
        tool: 'refund_order',
        scenario: 'success',
        problems: [
          {
            path: 'output.remaining_refundable_cents',
            message: 'required, missing (the response has remaining_cents)',
          },
        ],
      }),
    ]);
  });

  it('passes the fixtures committed next to the repository config', async () => {
    const run = await test();
    expect(run.code, run.out + run.error).toBe(0);
    expect(run.out).toContain('contract test: 8 fixtures in ');
  });

  it('fails an unreadable fixture, and answers 2 when there is nothing to test', async () => {
    const directory = join(workspace, 'unreadable');
    cpSync(join(repository, 'contract-fixtures'), directory, { recursive: true });
    writeFileSync(join(directory, 'get_order', 'empty.json'), '{"version": 1}');
    const run = await test('--fixtures', directory);
    expect(run.code).toBe(1);
    expect(run.out).toContain('empty.json: not a usable fixture: not a contract fixture (');
    // A project of its own whose tools have no implementations: it imports `toolgate` as a user's does.
    const empty = join(workspace, 'empty-project');
    mkdirSync(join(empty, 'node_modules'), { recursive: true });
    symlinkSync(repository, join(empty, 'node_modules', 'toolgate'), 'junction');
    const project = join(empty, 'toolgate.config.ts');
    writeFileSync(
      project,
      [
        "import { defineConfig } from 'toolgate';",
        `import { ordersContracts } from ${JSON.stringify(join(repository, 'examples', 'orders', 'orders-contracts'))};`,
        "export default defineConfig({ tools: ordersContracts, policyPath: './policy.json', implementations: () => [] });",
        '',
      ].join('\n'),
    );
    const nothing = await runCliCapturing(['contract', 'test', '--config', project]);
    expect(nothing.code).toBe(2);
    expect(nothing.error).toContain('nothing to test');
  });

  it('fails a folder named like a fixture as unreadable, and refuses --fixtures naming a file with exit 2', async () => {
    const directory = join(workspace, 'folder-as-fixture');
    cpSync(join(repository, 'contract-fixtures'), directory, { recursive: true });
    mkdirSync(join(directory, 'get_order', 'extra.json'));
    const run = await test('--fixtures', directory);
    expect(run.code, run.error).toBe(1);
    expect(run.out).toContain('extra.json: not a usable fixture: it is a folder, not a file');
    const file = join(workspace, 'fixtures-file');
    writeFileSync(file, 'not a folder');
    const refused = await test('--fixtures', file);
    expect(refused.code).toBe(2);
    expect(refused.error).toContain(`toolgate contract test: ${file} is a file, not a folder of fixtures`);
  });
});
