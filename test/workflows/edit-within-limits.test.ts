import { describe, expect, it } from 'vitest';
import { testPolicy } from '../support/test-policy';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// An edit and the limits across sessions: a call's room in a limit is reserved for its amount before
// it waits, so an approver may lower the amount, never raise it past what was reserved.

let harness: ToolGateHarness;
useHarness((started) => (harness = started), {
  policy: {
    ...testPolicy,
    callers: {
      ...testPolicy.callers,
      'support-bot': {
        ...testPolicy.callers['support-bot']!,
        quotas: [{ tool: 'refund_order', window: '24h', maxAmount: 100_000 }],
      },
    },
  },
});
const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);
const proposed = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };

const edit = (callId: string, amount: number) =>
  harness.admin.edit({
    callId,
    approver: 'alice',
    privateKey: harness.approverKey('alice'),
    args: { ...proposed, amount_cents: amount },
    reason: 'the customer asked for another amount',
  });

describe('an edit within the limits across sessions', () => {
  it('refuses raising a reserved amount, and lowers it: the lower refund runs once', async () => {
    const { callId } = await proposeRefund();
    await harness.admin.waitForRound({ callId, after: 0 });
    const raised = await edit(callId, 3000);
    expect(raised).toMatchObject({ accepted: false, code: 'EDIT_REFUSED' });
    expect(raised.accepted ? '' : raised.message).toContain(
      'an edit may lower its amount, not raise it to 3000',
    );
    expect(await edit(callId, 2000)).toMatchObject({ accepted: true });
    await harness.admin.waitForRound({ callId, after: 1 });
    await decide(callId, 'alice');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });
});
