import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ordersContracts, refundOrderContract } from '../../examples/orders/orders-contracts';
import { evaluatePolicy } from './evaluate-policy';
import { checkPolicy, ConfigurationError, loadPolicyFile } from './load-policy';
import type { CallerPolicy } from './policy-schema';
import { generateKeyPairFiles } from '../keys/key-files';
import { createToolRegistry } from '../tools/tool-registry';

const inlineKey = `ed25519:${'ab'.repeat(32)}`;

const registry = createToolRegistry({ tools: ordersContracts });
const refund = (amount: number) => ({
  order_id: 'ORD-1003',
  amount_cents: amount,
  currency: 'BRL',
  reason: 'damaged',
});
const supportBot: CallerPolicy = {
  publicKey: 'callers/support-bot.pub',
  approval: { ceiling: 'critical' },
  tools: ['get_order', 'refund_order'],
  autonomy: 'reversible',
  limits: { refund_order: { amount_cents: { max: 50_000 } } },
};

describe('evaluatePolicy', () => {
  it('checks per-tool limits first: POLICY_LIMIT even where approval would also be needed', () => {
    const verdict = evaluatePolicy({
      contract: refundOrderContract,
      args: refund(60_000),
      caller: 'support-bot',
      callerPolicy: supportBot,
    });
    expect(verdict).toMatchObject({
      ok: false,
      code: 'POLICY_LIMIT',
      riskLevel: 'critical',
      data: { max: 50_000 },
    });
  });

  it('needs approval above the caller’s autonomy', () => {
    const verdict = evaluatePolicy({
      contract: refundOrderContract,
      args: refund(2590),
      caller: 'support-bot',
      callerPolicy: supportBot,
    });
    expect(verdict).toEqual({ ok: true, riskLevel: 'irreversible', needsApproval: true });
  });

  it('denies above the highest approvable level, and when approval is not available', () => {
    const base = { contract: refundOrderContract, caller: 'support-bot', callerPolicy: supportBot };
    const lowCeiling = { ...supportBot, approval: { ceiling: 'irreversible' as const } };
    expect(evaluatePolicy({ ...base, callerPolicy: lowCeiling, args: refund(20_000) })).toMatchObject({
      ok: false,
      code: 'PERMISSION_DENIED',
    });
    const noApproval = { ...supportBot, approval: undefined };
    expect(evaluatePolicy({ ...base, callerPolicy: noApproval, args: refund(2590) })).toMatchObject({
      ok: false,
      code: 'PERMISSION_DENIED',
    });
  });

  it('lets a caller with enough autonomy run alone', () => {
    const verdict = evaluatePolicy({
      contract: refundOrderContract,
      args: refund(20_000),
      caller: 'ops',
      callerPolicy: { publicKey: 'callers/ops.pub', tools: ['refund_order'], autonomy: 'critical' },
    });
    expect(verdict).toEqual({ ok: true, riskLevel: 'critical', needsApproval: false });
  });
});

describe('policy files', () => {
  // Every folder a test makes, removed when the file's tests end.
  const folders: string[] = [];
  const folder = (prefix: string): string => {
    const made = mkdtempSync(join(tmpdir(), prefix));
    folders.push(made);
    return made;
  };
  afterAll(() => {
    for (const made of folders) rmSync(made, { recursive: true, force: true });
  });

  const write = (content: string): string => {
    const path = join(folder('toolgate-policy-'), 'policy.json');
    writeFileSync(path, content);
    return path;
  };

  /** Loads a shipped policy with development keys for every caller, approver and operator it names (as `npm start` does). */
  const loadShipped = (file: string) => {
    const path = join(__dirname, '../../examples/orders', file);
    const keysDirectory = folder('toolgate-keys-');
    const named = JSON.parse(readFileSync(path, 'utf8')) as {
      callers: Record<string, unknown>;
      approvers: Record<string, unknown>;
      operators?: Record<string, unknown>;
    };
    for (const name of Object.keys(named.callers))
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'caller', name } });
    for (const name of Object.keys(named.approvers))
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'approver', name } });
    for (const name of Object.keys(named.operators ?? {}))
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'operator', name } });
    return loadPolicyFile({ path, registry, keysDirectory });
  };

  it('loads the shipped default policy, which has no caller that refunds without approval', () => {
    const policy = loadShipped('policy.json');
    expect(policy.version).toMatch(/^orders-demo-5@[0-9a-f]{12}$/);
    for (const caller of Object.values(policy.file.callers)) {
      if (caller.tools.includes('refund_order')) expect(caller.autonomy).not.toMatch(/irreversible|critical/);
    }
  });

  it.each(['policy.json', 'policy.unattended.json'])(
    'ships %s with the two-person rule: a critical refund by support-bot needs two distinct approvers, and two may give it',
    (file) => {
      const policy = loadShipped(file);
      const { callerPolicy, approvers } = policy.snapshotFor('support-bot');
      const verdict = evaluatePolicy({
        contract: refundOrderContract,
        args: refund(12_000),
        caller: 'support-bot',
        callerPolicy: callerPolicy!,
      });
      expect(verdict).toMatchObject({ ok: true, needsApproval: true, riskLevel: 'critical' });
      expect(callerPolicy?.approval?.quorum?.critical).toBe(2);
      // An irreversible refund (the demo's 2,590 cents) still needs one approval.
      expect(callerPolicy?.approval?.quorum?.irreversible ?? 1).toBe(1);
      const eligible = Object.entries(approvers).filter(
        ([, approver]) => approver.maxLevel === 'critical' && !approver.operates.includes('support-bot'),
      );
      expect(eligible.map(([name]) => name).sort()).toEqual(['alice', 'dave']);
    },
  );

  it.each([
    ['broken JSON', '{"callers": ', 'not valid JSON'],
    [
      'an unknown autonomy level',
      '{"callers":{"bot":{"tools":[],"autonomy":"yolo"}}}',
      'callers.bot.autonomy',
    ],
    [
      'an unknown tool',
      `{"callers":{"bot":{"publicKey":"${inlineKey}","tools":["refnd_order"],"autonomy":"read"}}}`,
      'unknown tool "refnd_order"',
    ],
    [
      'a missing key file',
      '{"callers":{"bot":{"publicKey":"callers/bot.pub","tools":[],"autonomy":"read"}}}',
      'toolgate keys generate --caller bot',
    ],
    [
      'a limit on a non-numeric field',
      `{"callers":{"bot":{"publicKey":"${inlineKey}","tools":[],"autonomy":"read","limits":{"refund_order":{"currency":{"max":1}}}}}}`,
      'numeric fields: amount_cents',
    ],
    ['an unknown field', '{"callers":{},"extra":1}', 'Unrecognized key'],
    [
      'an unknown tool under tools',
      '{"callers":{},"tools":{"refnd_order":{"approvalWindows":{"critical":"1h"}}}}',
      'tools.refnd_order: unknown tool; known tools: get_order, refund_order',
    ],
    [
      'an unknown field in a tool’s rules',
      '{"callers":{},"tools":{"refund_order":{"windows":{"critical":"1h"}}}}',
      'Unrecognized key',
    ],
    [
      'a tool’s window longer than the default maximum',
      '{"callers":{},"tools":{"refund_order":{"approvalWindows":{"irreversible":"4h","critical":"40d"}}}}',
      'tools.refund_order.approvalWindows.critical: 40d is longer than maxApprovalWindow (30d); ' +
        'shorten it, or raise maxApprovalWindow within the namespace retention',
    ],
    [
      'a caller’s window, in milliseconds, longer than the policy’s maximum',
      `{"callers":{"bot":{"publicKey":"${inlineKey}","tools":[],"autonomy":"read","approval":{"ceiling":"critical","windows":{"irreversible":90000000}}}},"maxApprovalWindow":"1d"}`,
      'callers.bot.approval.windows.irreversible: 90000000ms is longer than maxApprovalWindow (1d)',
    ],
    [
      'a malformed maximum',
      '{"callers":{},"maxApprovalWindow":"a month"}',
      'maxApprovalWindow: a duration such as "30s", "15m" or "4h"',
    ],
  ])('stops start-up on %s, naming the file and the field', (_case, content, expected) => {
    const path = write(content);
    expect(() => loadPolicyFile({ path, registry })).toThrow(ConfigurationError);
    expect(() => loadPolicyFile({ path, registry })).toThrow(path);
    expect(() => loadPolicyFile({ path, registry })).toThrow(expected);
  });

  it('accepts windows in every duration form up to maxApprovalWindow, and one raised within the retention', () => {
    const windows = { read: 1000, reversible: '500ms', irreversible: '15m', critical: '30d' };
    const policy = checkPolicy({
      source: 'windows',
      registry,
      value: {
        callers: {
          bot: {
            publicKey: inlineKey,
            tools: [],
            autonomy: 'read',
            approval: { ceiling: 'critical', windows: { ...windows, critical: '720h' } },
          },
        },
        tools: { refund_order: { approvalWindows: windows }, get_order: {} },
      },
    });
    expect(policy.file.tools?.refund_order?.approvalWindows).toEqual(windows);
    const raised = checkPolicy({
      source: 'raised',
      registry,
      value: {
        callers: {},
        tools: { refund_order: { approvalWindows: { critical: '40d' } } },
        maxApprovalWindow: '40d',
      },
    });
    expect(raised.file.maxApprovalWindow).toBe('40d');
  });

  it('reports every window beyond the maximum at once', () => {
    const check = () =>
      checkPolicy({
        source: 'too long',
        registry,
        value: {
          callers: {
            bot: {
              publicKey: inlineKey,
              tools: [],
              autonomy: 'read',
              approval: { ceiling: 'critical', windows: { critical: '3h' } },
            },
          },
          tools: { refund_order: { approvalWindows: { irreversible: '121m', critical: '1h' } } },
          maxApprovalWindow: '2h',
        },
      });
    expect(check).toThrow(ConfigurationError);
    expect(check).toThrow(
      'policy file too long: ' +
        'callers.bot.approval.windows.critical: 3h is longer than maxApprovalWindow (2h); ' +
        'shorten it, or raise maxApprovalWindow within the namespace retention; ' +
        'tools.refund_order.approvalWindows.irreversible: 121m is longer than maxApprovalWindow (2h); ' +
        'shorten it, or raise maxApprovalWindow within the namespace retention',
    );
  });

  it('changes its version digest when its content changes', () => {
    const a = checkPolicy({
      source: 'a',
      registry,
      value: { callers: { bot: { publicKey: inlineKey, tools: [], autonomy: 'read' } } },
    });
    const b = checkPolicy({
      source: 'b',
      registry,
      value: { callers: { bot: { publicKey: inlineKey, tools: [], autonomy: 'reversible' } } },
    });
    expect(a.digest).not.toBe(b.digest);
  });
});

describe('approval chains in the policy file', () => {
  const withChain =
    (chain: unknown, groups: string[] = ['support-lead'], extra: Record<string, unknown> = {}) =>
    () =>
      checkPolicy({
        source: 'chains.json',
        registry,
        value: {
          callers: {
            'support-bot': {
              publicKey: inlineKey,
              tools: ['refund_order'],
              autonomy: 'reversible',
              approval: { ceiling: 'critical', chains: { irreversible: chain } },
              ...extra,
            },
          },
          approvers: { lee: { publicKey: inlineKey, maxLevel: 'critical', groups } },
        },
      });

  it('takes a chain whose named groups have their quorum of approvers, and a routed group', () => {
    expect(withChain([{ group: 'support-lead' }, { group: 'finance-{claims.region}' }])).not.toThrow();
  });

  it('refuses a step its group can never complete, naming the field and the fix', () => {
    expect(withChain([{ group: 'support-lead', quorum: 2 }])).toThrow(
      'callers.support-bot.approval.chains.irreversible.0.group: group "support-lead" has 1 approver(s)',
    );
    expect(withChain([{ group: 'finance' }])).toThrow('add "finance" to approvers\' groups');
  });

  it('refuses a chain asking fewer approvals than the untrusted-text rule', () => {
    expect(
      withChain([{ group: 'support-lead' }], ['support-lead'], {
        untrustedText: { writes: 'approval', quorum: 2 },
      }),
    ).toThrow('fewer than untrustedText.quorum (2)');
  });

  it('refuses a routed group with an unknown placeholder, and steps that together outlast the maximum window', () => {
    expect(withChain([{ group: 'finance-{region}' }])).toThrow(
      'callers.support-bot.approval.chains.irreversible.0.group: a group name',
    );
    expect(
      withChain([
        { group: 'support-lead', window: '20d' },
        { group: 'support-lead', window: '20d' },
      ]),
    ).toThrow('longer than maxApprovalWindow');
  });
});
