import { describe, expect, it } from 'vitest';
import type { PolicyFileInput } from 'toolgate';
import { testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Denial memory across sessions, when the policy says so: support-bot's denials are remembered for
// the same end user in any session for 3 s here (a day, say, in production).

const windowMs = 3_000;
const policy: PolicyFileInput = {
  ...testPolicy,
  callers: {
    ...testPolicy.callers,
    'support-bot': {
      ...testPolicy.callers['support-bot']!,
      approval: {
        ceiling: 'critical',
        quorum: { critical: 2 },
        rememberDenials: { acrossSessions: `${windowMs / 1000}s` },
      },
    },
  },
};

let harness: ToolGateHarness;
useHarness((started) => (harness = started), { policy });

const refund = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };

/** The refund in a new conversation for `endUser`. */
const proposeFor = (endUser: string, tenant?: string) =>
  harness.client.call({
    session: harness.newSession(),
    caller: 'support-bot',
    context: { onBehalfOf: endUser, ...(tenant ? { tenant } : {}) },
    tool: 'refund_order',
    arguments: refund,
  });

describe('denial memory for an end user across sessions', () => {
  it('answers the same refund for the same customer in another conversation with the denial, until the window passes', async () => {
    const first = await proposeFor('CUS-1');
    expect(first).toMatchObject({ code: 'APPROVAL_PENDING' });
    await harness.admin.decide({
      callId: first.callId,
      approver: 'alice',
      privateKey: harness.approverKey('alice'),
      decision: 'deny',
      reason: 'refunded by bank transfer',
    });
    expect(await harness.client.result(first.callId, { wait: true })).toMatchObject({
      code: 'APPROVAL_DENIED',
    });
    const deniedAt = Date.now();

    // Another conversation, the same customer: answered with alice's denial, no round.
    const again = await proposeFor('CUS-1');
    expect(again).toMatchObject({
      code: 'APPROVAL_DENIED',
      replayed: true,
      data: { approver: 'alice', reason: 'refunded by bank transfer', deniedCallId: first.callId },
    });
    // The same customer in another tenant is another end user: a person is asked.
    const otherTenant = await proposeFor('CUS-1', 'shop-2');
    expect(otherTenant).toMatchObject({ code: 'APPROVAL_PENDING' });
    expect(await harness.orders.api.refundCount()).toBe(0);

    // Once the window has passed, the same customer's refund is asked again.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deniedAt + windowMs + 200 - Date.now())));
    const later = await proposeFor('CUS-1');
    expect(later).toMatchObject({ code: 'APPROVAL_PENDING' });
    expect(later.replayed).toBeUndefined();
    for (const pending of [otherTenant, later]) {
      await harness.client.cancel({ callId: pending.callId, caller: 'support-bot', reason: 'test done' });
    }
  });
});
