import { expect } from 'vitest';
import type { ToolResult } from 'toolgate';
import type { ToolGateHarness } from './toolgate-harness';

/**
 * The steps the approval tests take against a harness: propose a refund that waits for approval,
 * decide on it as an approver, and count the refunds the orders service applied. `harness` is
 * read at each call, so the helpers can be made before `useHarness` has started it.
 */
export function approvalHelpers(harness: () => ToolGateHarness) {
  /** The orders service's count of applied refunds: the effect that matters. */
  const appliedRefunds = () => harness().orders.api.refundCount();

  /** A refund by support-bot, which always needs approval; 20,000 cents on ORD-1003 is critical (quorum 2). */
  async function proposeRefund(
    overrides: Record<string, unknown> = {},
    caller = 'support-bot',
  ): Promise<ToolResult> {
    const result = await harness().call({
      caller,
      tool: 'refund_order',
      arguments: harness().refundArguments(overrides),
    });
    expect(result).toMatchObject({ ok: false, code: 'APPROVAL_PENDING', effect: 'none' });
    return result;
  }

  /** A decision sent through the admin side, signed with the approver's own key. */
  const decide = (
    callId: string,
    approver: string,
    decision: 'approve' | 'deny' = 'approve',
    reason = `${decision} by ${approver}`,
  ) =>
    harness().admin.decide({
      callId,
      approver,
      privateKey: harness().approverKey(approver),
      decision,
      reason,
    });

  return { appliedRefunds, proposeRefund, decide };
}
