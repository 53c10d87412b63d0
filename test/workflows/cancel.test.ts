import { keyPaths, readPrivateKey } from 'toolgate';
import { cancelCall } from 'toolgate/admin';
import type { SignedCancellation } from 'toolgate/protocol';
import { describe, expect, it } from 'vitest';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

describe('cancelling a call that waits for approval', () => {
  it("closes it APPROVAL_CANCELLED when its caller's harness cancels it, applies nothing, and refuses a later approval", async () => {
    const pending = await proposeRefund();
    const cancelled = await harness.client.cancel({
      callId: pending.callId,
      caller: 'support-bot',
      reason: 'the customer withdrew the request',
    });
    expect(cancelled).toMatchObject({ cancelled: true, cancelledBy: 'caller support-bot' });
    expect(cancelled.result).toMatchObject({
      ok: false,
      code: 'APPROVAL_CANCELLED',
      effect: 'none',
      data: { cancelledBy: 'caller support-bot', reason: 'the customer withdrew the request' },
    });
    expect(cancelled.result?.message).toContain('Nothing was applied');
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: false });
    expect(await appliedRefunds()).toBe(0);
    const description = await harness.temporal.workflow.getHandle(pending.callId).describe();
    expect(description.searchAttributes.ApprovalState).toEqual(['cancelled']);
    const [record] = await harness.audit.recordsOf(pending.callId);
    expect(record).toMatchObject({ code: 'APPROVAL_CANCELLED', effect: 'none' });
    // Proposed again after the cancellation, it is a new run that waits again: nothing was replayed.
    const again = await proposeRefund();
    expect(again.callId).toBe(pending.callId);
    expect(again.replayed).toBeUndefined();
    await harness.client.cancel({ callId: again.callId, caller: 'support-bot', reason: 'cleaning up' });
  });

  it('lets an operator of the policy cancel it, with their own key', async () => {
    const pending = await proposeRefund({ amount_cents: 1_234 });
    const outcome = await cancelCall({
      client: harness.temporal,
      callId: pending.callId,
      by: { operator: 'olivia' },
      privateKey: harness.operatorKey('olivia'),
      reason: 'agent misbehaving; stopping its refunds',
    });
    expect(outcome).toEqual({ cancelled: true, callId: pending.callId, cancelledBy: 'operator olivia' });
    expect(await harness.client.result(pending.callId)).toMatchObject({
      code: 'APPROVAL_CANCELLED',
      data: { cancelledBy: 'operator olivia' },
    });
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a cancellation signed by anyone else, and the call still runs once approved', async () => {
    const pending = await proposeRefund({ amount_cents: 1_500 });
    const refusals = await Promise.all([
      // An operator key that is not in the policy.
      cancelCall({
        client: harness.temporal,
        callId: pending.callId,
        by: { operator: 'mallory' },
        privateKey: harness.operatorKey('mallory'),
        reason: 'forged',
      }),
      // Olivia's name, Mallory's key.
      cancelCall({
        client: harness.temporal,
        callId: pending.callId,
        by: { operator: 'olivia' },
        privateKey: harness.operatorKey('mallory'),
        reason: 'forged',
      }),
      // Another caller's key, naming the call's caller.
      cancelCall({
        client: harness.temporal,
        callId: pending.callId,
        by: { caller: 'support-bot' },
        privateKey: readPrivateKey(
          keyPaths({ directory: harness.keysDirectory, owner: { kind: 'caller', name: 'hasty-bot' } })
            .privateKey,
        ),
        reason: 'forged',
      }),
      // Another caller cannot even see it.
      harness.client.cancel({ callId: pending.callId, caller: 'hasty-bot', reason: 'not mine' }),
    ]);
    expect(refusals.map((outcome) => (outcome.cancelled ? 'cancelled' : outcome.code))).toEqual([
      'SIGNATURE_INVALID',
      'SIGNATURE_INVALID',
      'SIGNATURE_INVALID',
      'CALL_NOT_FOUND',
    ]);
    // A signed cancellation of the call, sent raw with its signature over another reason.
    const { runId } = await harness.temporal.workflow.getHandle(pending.callId).describe();
    const tampered: SignedCancellation = {
      cancellation: {
        callId: pending.callId,
        runId,
        by: { caller: 'support-bot' },
        reason: 'tampered',
        issuedAt: new Date().toISOString(),
      },
      signature: 'A'.repeat(86),
    };
    await expect(
      harness.temporal.workflow.getHandle(pending.callId).executeUpdate('cancel', { args: [tampered] }),
    ).rejects.toMatchObject({ cause: { type: 'SIGNATURE_INVALID' } });
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId)).toMatchObject({ ok: true, effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
  });

  it('is refused once execution started (CANCEL_TOO_LATE) and once the call ended; a call that never waited is not cancellable', async () => {
    // A refund held in its execution by the backend's 503s: approved, then running its retries.
    const pending = await proposeRefund({ amount_cents: 1_700 });
    await harness.orders.api.setFaults({ idempotencyKey: pending.callId, unavailable: 2 });
    await decide(pending.callId, 'alice');
    const late = await harness.client.cancel({
      callId: pending.callId,
      caller: 'support-bot',
      reason: 'too late',
    });
    expect(late).toMatchObject({ cancelled: false, code: 'CANCEL_TOO_LATE' });
    expect(await harness.client.result(pending.callId)).toMatchObject({ ok: true, effect: 'applied' });
    expect(
      await harness.client.cancel({ callId: pending.callId, caller: 'support-bot', reason: 'after' }),
    ).toMatchObject({
      cancelled: false,
      code: 'CANCEL_TOO_LATE',
    });
    expect(await appliedRefunds()).toBe(1);
    expect(
      await harness.client.cancel({ callId: 'tc-does-not-exist', caller: 'support-bot', reason: 'x' }),
    ).toMatchObject({ cancelled: false, code: 'CALL_NOT_FOUND' });
  });
});
