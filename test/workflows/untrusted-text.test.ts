import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addGrant, listGrants, signGrant } from 'toolgate/admin';
import type { CallContext, PolicyFileInput, ToolResult } from 'toolgate';
import { revokeOpenGrants } from '../support/grant-helpers';
import { approvalHelpers } from '../support/approval-helpers';
import { testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Taint, policy by context and limits per end user. get_order marks its `note` as untrusted text (a
// customer wrote it); once a session read one, the caller's `untrustedText` rule decides what its
// writes need. The policy can also vary by channel, and count limits per end user. The orders
// service's refunds are the proof.

const callers = testPolicy.callers;
const policy: PolicyFileInput = {
  ...testPolicy,
  callers: {
    ...callers,
    // Refunds alone, but never unattended after reading untrusted text; in the end-user chat, not alone.
    'test-refunder': {
      ...callers['test-refunder']!,
      approval: { ceiling: 'critical' },
      untrustedText: { writes: 'approval' },
      contexts: [{ when: { channel: 'end-user-chat' }, autonomy: 'reversible' }],
    },
    // Refunds alone, and never at all in a session that read untrusted text.
    'cautious-bot': {
      publicKey: 'callers/cautious-bot.pub',
      tools: ['get_order', 'refund_order'],
      autonomy: 'critical',
      untrustedText: { writes: 'refuse' },
    },
    // At most 3 refunds per customer a day, whoever else refunds.
    'burst-bot': {
      ...callers['burst-bot']!,
      autonomy: 'critical',
      quotas: [{ tool: 'refund_order', window: '24h', maxCalls: 3, perEndUser: true }],
    },
  },
};

let harness: ToolGateHarness;
useHarness((started) => (harness = started), { policy });
const { decide } = approvalHelpers(() => harness);

const refund = { order_id: 'ORD-1003', amount_cents: 1000, currency: 'BRL', reason: 'damaged' };
const inSession = (caller: string, context?: CallContext) => {
  const session = harness.newSession();
  return (tool: string, args: Record<string, unknown>): Promise<ToolResult> =>
    harness.client.call({ session, caller, tool, arguments: args, ...(context ? { context } : {}) });
};

describe('a session that read untrusted text', () => {
  it('sends a refund its caller would run alone to approval, with the reason for the approver', async () => {
    const call = inSession('test-refunder');
    // ORD-1003's note is the planted instruction: untrusted text entered the session.
    expect((await call('get_order', { order_id: 'ORD-1003' })).code).toBe('OK');

    const pending = await call('refund_order', refund);
    expect(pending).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    const state = await harness.admin.show(pending.callId);
    expect(state?.approvalRule).toMatch(
      /this conversation read untrusted text from get_order\.note at \d\d:\d\d UTC/,
    );
    expect(await harness.orders.api.refundCount()).toBe(0);

    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({ code: 'OK' });
    expect(await harness.orders.api.refundCount()).toBe(1);
  });

  it('runs the same refund unattended in a session that read only clean orders', async () => {
    const call = inSession('test-refunder');
    // ORD-1001 has no note: nothing untrusted entered.
    expect((await call('get_order', { order_id: 'ORD-1001' })).code).toBe('OK');
    expect(await call('refund_order', refund)).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    expect(await harness.orders.api.refundCount()).toBe(1);
  });

  it('refuses a write with UNTRUSTED_TEXT_READ where the policy says refuse: nothing applied', async () => {
    const session = harness.newSession();
    const call = (tool: string, args: Record<string, unknown>) =>
      harness.client.call({ session, caller: 'cautious-bot', tool, arguments: args });
    expect((await call('get_order', { order_id: 'ORD-1003' })).code).toBe('OK');
    expect((await harness.client.sessionStats(session)).untrusted).toEqual([
      expect.objectContaining({ source: 'get_order.note' }),
    ]);
    const refused = await call('refund_order', refund);
    expect(refused).toMatchObject({ ok: false, code: 'UNTRUSTED_TEXT_READ', effect: 'none' });
    expect(refused.message).toContain('get_order.note');
    expect(await harness.orders.api.refundCount()).toBe(0);
  });
});

describe('a standing grant and untrusted text', () => {
  it('never covers a write the untrusted-text rule holds: a person decides, and the grant keeps its uses', async () => {
    const signed = signGrant({
      taskQueue: harness.taskQueue,
      caller: 'test-refunder',
      tool: 'refund_order',
      maxLevel: 'irreversible',
      maxCalls: 5,
      expiresAt: new Date(Date.now() + 60 * 60 * 1000),
      reason: 'small refunds while the queue is long',
      approver: 'alice',
      approverKey: harness.approverKey('alice'),
    });
    const added = await addGrant({ client: harness.temporal, taskQueue: harness.taskQueue, signed });
    expect(added, JSON.stringify(added)).toMatchObject({ accepted: true });
    try {
      const call = inSession('test-refunder');
      expect((await call('get_order', { order_id: 'ORD-1003' })).code).toBe('OK');
      const pending = await call('refund_order', refund);
      expect(pending).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
      expect((await harness.admin.show(pending.callId))?.approvalRule).toMatch(
        /read untrusted text from get_order\.note/,
      );
      const { grants } = await listGrants({ client: harness.temporal, taskQueue: harness.taskQueue });
      expect(grants.find((entry) => entry.grant.grantId === signed.grant.grantId)).toMatchObject({
        state: 'active',
        usedCalls: 0,
      });
      expect(await harness.orders.api.refundCount()).toBe(0);
      await harness.client.cancel({ callId: pending.callId, caller: 'test-refunder', reason: 'test done' });
    } finally {
      await revokeOpenGrants(harness);
    }
  });
});

describe('policy by context', () => {
  it('needs approval in the end-user chat for what the caller runs alone elsewhere', async () => {
    const inChat = await inSession('test-refunder', { onBehalfOf: 'CUS-3', channel: 'end-user-chat' })(
      'refund_order',
      refund,
    );
    expect(inChat.code).toBe('APPROVAL_PENDING');
    const internal = await inSession('test-refunder', { channel: 'internal-console' })(
      'refund_order',
      refund,
    );
    expect(internal).toMatchObject({ code: 'OK', effect: 'applied' });
    expect(await harness.orders.api.refundCount()).toBe(1);
  });
});

describe('limits per end user', () => {
  it('holds at 3 refunds a day for one customer across 20 concurrent sessions, and counts another customer apart', async () => {
    const customer = `CUS-3`;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        harness.client.call({
          session: `per-user-${randomUUID()}`,
          caller: 'burst-bot',
          tool: 'refund_order',
          arguments: { ...refund, amount_cents: 100 + index },
          context: { onBehalfOf: customer },
        }),
      ),
    );
    const codes = results.map((result) => result.code);
    expect(codes.filter((code) => code === 'OK')).toHaveLength(3);
    expect(codes.filter((code) => code === 'POLICY_LIMIT')).toHaveLength(17);
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1003' })).toBe(3);

    // ORD-1001 is CUS-1's: their own limit, untouched by CUS-3's.
    const other = await harness.client.call({
      session: `per-user-${randomUUID()}`,
      caller: 'burst-bot',
      tool: 'refund_order',
      arguments: { order_id: 'ORD-1001', amount_cents: 100, currency: 'BRL', reason: 'damaged' },
      context: { onBehalfOf: 'CUS-1' },
    });
    expect(other).toMatchObject({ code: 'OK', effect: 'applied' });
  });
});
