import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import type { GrantReceipt, GrantsView, SignedGrant } from 'toolgate/protocol';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { harnessCli } from '../support/cli-runner';
import { revokeOpenGrants } from '../support/grant-helpers';

// `toolgate grants create|sign|submit|list|revoke`, against a running harness.

let harness: ToolGateHarness;
let directory: string;
const cli = harnessCli(() => harness);

beforeAll(async () => {
  harness = await startHarness({ address: temporalAddress() });
  cli.useHarnessFiles();
  directory = mkdtempSync(join(tmpdir(), 'toolgate-grants-cli-'));
});

afterAll(async () => {
  await harness?.stop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

// Each test starts with no active grant: what the one before added is revoked by an operator.
afterEach(() => revokeOpenGrants(harness));

const run = (...argv: string[]) => cli.run(...argv);
const appliedRefunds = () => harness.orders.api.refundCount();

/** `toolgate grants create` for support-bot's refunds as alice, up to irreversible; `extra` adds options. */
const create = (...extra: string[]) =>
  run(
    'grants',
    'create',
    '--caller',
    'support-bot',
    '--tool',
    'refund_order',
    '--reason',
    'damaged-goods backlog',
    '--as',
    'alice',
    ...extra,
  );

/** A refund by support-bot through `toolgate call --json`, in a session of its own. */
async function refund(amount: number, orderId = 'ORD-1003'): Promise<ToolResult> {
  const { out } = await run(
    'call',
    '--caller',
    'support-bot',
    '--tool',
    'refund_order',
    '--args',
    JSON.stringify({ order_id: orderId, amount_cents: amount, currency: 'BRL', reason: 'damaged' }),
    '--session',
    `grants-cli-${amount}-${Date.now()}`,
    '--json',
  );
  return JSON.parse(out) as ToolResult;
}

const listedJson = async (...extra: string[]) =>
  JSON.parse((await run('grants', 'list', '--json', ...extra)).out) as GrantsView;

describe('toolgate grants', () => {
  it('creates and submits a grant with `grants create`, and a covered refund then runs without approval', async () => {
    const before = await appliedRefunds();
    const created = await create(
      '--max-level',
      'irreversible',
      '--calls',
      '2',
      '--per-call',
      '5000',
      '--for',
      '8h',
    );
    expect(created.code).toBe(0);
    const match =
      /^grant ([0-9a-f-]{36}) is active \(approved by alice\):\n {2}support-bot may run refund_order up to irreversible without approval: 2 call\(s\), at most 5000 a call, until (\S+)\n$/.exec(
        created.out,
      );
    expect(match, created.out).not.toBeNull();
    const [, grantId, until] = match!;
    expect(Date.parse(until!) - Date.now()).toBeGreaterThan(8 * 60 * 60_000 - 60_000);

    const result = await refund(700);
    expect(result).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    expect(await appliedRefunds()).toBe(before + 1);

    const listed = await run('grants', 'list');
    expect(listed.code).toBe(0);
    expect(listed.out).toBe(
      `${grantId}  support-bot  refund_order  up to irreversible  active  calls 1/2  amount 700/no cap  ` +
        `per call 5000  until ${until}  approved by alice\n`,
    );
  });

  it('writes a critical grant with --out, takes a second approver with `grants sign --submit`, and lists it', async () => {
    const before = await appliedRefunds();
    const file = join(directory, 'critical-grant.json');
    const until = new Date(Date.now() + 2 * 60 * 60_000).toISOString();
    const created = await create('--max-level', 'critical', '--calls', '1', '--until', until, '--out', file);
    expect(created.code).toBe(0);
    expect(created.out).toContain(`grants sign ${file} --as <approver> --submit`);
    const written = JSON.parse(readFileSync(file, 'utf8')) as SignedGrant;
    expect(written.signatures.map((entry) => entry.approver)).toEqual(['alice']);
    expect(written.grant).toMatchObject({
      caller: 'support-bot',
      maxLevel: 'critical',
      maxCalls: 1,
      expiresAt: until,
    });
    const { grantId } = written.grant;
    // Written, not submitted: no grant is active yet.
    expect(await listedJson()).toEqual({ grants: [] });

    const signed = await run('grants', 'sign', file, '--as', 'dave', '--submit');
    expect([signed.code, signed.error]).toEqual([0, '']);
    expect(signed.out).toContain(`grant ${grantId} signed by alice, dave; written to ${file}`);
    expect(signed.out).toContain(`grant ${grantId} is active (approved by alice, dave)`);
    const cosigned = JSON.parse(readFileSync(file, 'utf8')) as SignedGrant;
    expect(cosigned.signatures.map((entry) => entry.approver)).toEqual(['alice', 'dave']);

    // One grant listed (an array matches only at the same length).
    expect((await listedJson()).grants).toMatchObject([
      {
        grant: { grantId, maxLevel: 'critical', maxCalls: 1 },
        approvers: ['alice', 'dave'],
        state: 'active',
        usedCalls: 0,
      },
    ]);

    // A critical refund (above 10,000 cents) runs on it without waiting.
    expect(await refund(10_500)).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    expect(await appliedRefunds()).toBe(before + 1);

    // Submitted with alice's signature alone, a critical grant is refused: the refusal on stdout under
    // --json, as CODE: message on stderr otherwise.
    const alone = join(directory, 'critical-alone.json');
    expect(
      (await create('--max-level', 'critical', '--calls', '1', '--for', '1h', '--out', alone)).code,
    ).toBe(0);
    const refused = await run('grants', 'submit', alone, '--json');
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.out)).toMatchObject({ accepted: false, code: 'QUORUM_NOT_MET' });
    const plain = await run('grants', 'submit', alone);
    expect([plain.code, plain.out, plain.error]).toEqual([1, '', expect.stringMatching(/^QUORUM_NOT_MET: /)]);
    expect(await listedJson()).toEqual({ grants: [] });
  });

  it('revokes a grant as operator olivia (not as an approver who did not sign it), and lists it as revoked with --all', async () => {
    const before = await appliedRefunds();
    const created = await create(
      '--max-level',
      'irreversible',
      '--calls',
      '3',
      '--total',
      '3000',
      '--for',
      '1h',
      '--json',
    );
    expect(created.code).toBe(0);
    const receipt = JSON.parse(created.out) as GrantReceipt;
    expect(receipt).toMatchObject({ accepted: true, grant: { state: 'active', approvers: ['alice'] } });
    const { grantId } = receipt.grant.grant;

    const byBob = await run('grants', 'revoke', grantId, '--reason', 'not mine', '--as', 'bob');
    expect([byBob.code, byBob.error]).toEqual([1, expect.stringMatching(/^REVOCATION_NOT_ALLOWED: /)]);
    const neither = await run('grants', 'revoke', grantId, '--reason', 'who?');
    expect([neither.code, neither.error]).toEqual([2, expect.stringContaining('exactly one of --as')]);

    const revoked = await run(
      'grants',
      'revoke',
      grantId,
      '--reason',
      'agent misbehaving',
      '--operator',
      'olivia',
    );
    expect([revoked.code, revoked.out]).toEqual([
      0,
      `revoked ${grantId} (by operator olivia); 0 of its 3 call(s) were used\n`,
    ]);
    expect((await run('grants', 'list')).out).toBe('no active grants\n');
    const all = await run('grants', 'list', '--all');
    expect(all.out).toContain(
      `${grantId}  support-bot  refund_order  up to irreversible  revoked  calls 0/3  amount 0/3000  per call no cap`,
    );
    expect(all.out).toMatch(/\n {2}revoked \S+ by operator olivia: agent misbehaving\n/);

    // The next refund waits for a human; nothing applied.
    const waits = await refund(400);
    expect(waits).toMatchObject({ ok: false, code: 'APPROVAL_PENDING', effect: 'none' });
    const cancelled = await run('cancel', waits.callId, '--caller', 'support-bot', '--reason', 'test done');
    expect(cancelled.code).toBe(0);
    expect(await appliedRefunds()).toBe(before);
  });

  it('exits 2 with the error for bad input and submits nothing', async () => {
    const before = await listedJson('--all');
    const cases: Array<[string[], string]> = [
      [
        ['--max-level', 'extreme', '--calls', '1', '--for', '1h'],
        'error: --max-level takes read, reversible, irreversible, critical (got "extreme")',
      ],
      [
        ['--max-level', 'irreversible', '--calls', '0', '--for', '1h'],
        'error: --calls takes a whole number above 0 (got "0")',
      ],
      [
        ['--max-level', 'irreversible', '--calls', '2', '--per-call', '2.5', '--for', '1h'],
        'error: --per-call takes a whole number above 0 (got "2.5")',
      ],
      [
        ['--max-level', 'irreversible', '--calls', '1', '--for', '3x'],
        'error: --for takes a duration above 0 such as 30m, 8h or 7d (got "3x")',
      ],
      [
        ['--max-level', 'irreversible', '--calls', '1', '--until', '2001-01-01T00:00:00Z'],
        'error: --until takes an ISO time in the future',
      ],
      [
        ['--max-level', 'irreversible', '--calls', '1', '--until', 'tomorrow'],
        'error: --until takes an ISO time in the future',
      ],
      [
        ['--max-level', 'irreversible', '--calls', '1'],
        'error: give exactly one of --until <ISO time> or --for',
      ],
      [
        ['--max-level', 'irreversible', '--calls', '1', '--for', '1h', '--until', '2099-01-01'],
        'error: give exactly one of --until',
      ],
      [
        ['--max-level', 'critical', '--calls', '1', '--for', '1h'],
        'error: a grant up to critical needs two approvers: write it with --out FILE',
      ],
    ];
    for (const [argv, message] of cases) {
      const outcome = await create(...argv);
      expect([outcome.code, outcome.out, outcome.error], argv.join(' ')).toEqual([
        2,
        '',
        expect.stringContaining(message),
      ]);
    }
    const keyless = await run(
      'grants',
      'create',
      '--caller',
      'support-bot',
      '--tool',
      'refund_order',
      '--max-level',
      'irreversible',
      '--calls',
      '1',
      '--for',
      '1h',
      '--reason',
      'x',
      '--as',
      'nobody',
    );
    expect([keyless.code, keyless.error]).toEqual([
      2,
      expect.stringContaining('cannot read the key of nobody'),
    ]);
    // A file that is not a signed grant is neither signed nor submitted.
    const notJson = join(directory, 'not-json.json');
    writeFileSync(notJson, 'grant: yes');
    const unparsed = await run('grants', 'sign', notJson, '--as', 'alice');
    expect([unparsed.code, unparsed.error]).toEqual([
      2,
      expect.stringContaining(`error: ${notJson} is not JSON`),
    ]);
    const unsigned = join(directory, 'unsigned.json');
    writeFileSync(
      unsigned,
      JSON.stringify({ grant: { grantId: 'g-1', caller: 'support-bot' }, signatures: [] }),
    );
    const submitted = await run('grants', 'submit', unsigned);
    expect([submitted.code, submitted.error]).toEqual([
      2,
      expect.stringContaining(`error: ${unsigned} is not a signed grant: `),
    ]);
    expect(readFileSync(notJson, 'utf8')).toBe('grant: yes');
    expect(await listedJson('--all')).toEqual(before);
  });
});
