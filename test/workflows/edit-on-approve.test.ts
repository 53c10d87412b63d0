import { describe, expect, it } from 'vitest';
import type { CallState, EditEnvelope, SignedEdit } from 'toolgate/protocol';
import { digestOf, signValue } from 'toolgate/protocol';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Edit, then approve: an approver who sees a refund of 2,590 where the customer asked for 2,000
// edits it. The edit is judged by the same contract and policy, checked and previewed again, and
// asked in a new round that the approvers sign for exactly the edited arguments.

let harness: ToolGateHarness;
useHarness((started) => (harness = started));
const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

const proposed = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };

/** The call's state once its round is open (the admin's view an approver edits from). */
async function openRound(callId: string, after = 0): Promise<CallState> {
  const state = await harness.admin.waitForRound({ callId, after });
  expect(state?.approval).toMatchObject({ state: 'pending' });
  return state!;
}

/** An edit of the open round signed by `approver`'s key (or another's, for the attacks). */
function signedEdit(input: {
  callId: string;
  state: CallState;
  approver: string;
  args: Record<string, unknown>;
  signer?: string;
  envelope?: Partial<EditEnvelope>;
}): SignedEdit {
  const approval = input.state.approval!;
  const envelope: EditEnvelope = {
    callId: input.callId,
    runId: approval.runId,
    nonce: approval.nonce,
    argsDigest: approval.argsDigest,
    previewDigest: approval.previewDigest,
    contractDigest: approval.contractDigest,
    editedArgs: input.args,
    editedDigest: digestOf(input.args),
    approver: input.approver,
    reason: 'the customer asked for 2,000',
    issuedAt: new Date().toISOString(),
    ...input.envelope,
  };
  return {
    envelope,
    signature: signValue({
      kind: 'edit',
      value: envelope,
      privateKey: harness.approverKey(input.signer ?? input.approver),
    }),
  };
}

const edit = (callId: string, approver: string, args: Record<string, unknown>) =>
  harness.admin.edit({
    callId,
    approver,
    privateKey: harness.approverKey(approver),
    args,
    reason: 'the customer asked for 2,000',
  });

describe('edit, then approve', () => {
  it('runs the edited refund once, tells the model what changed, and audits both versions', async () => {
    const { callId } = await proposeRefund();
    const state = await openRound(callId);
    expect(state.validatedArguments).toEqual(proposed);
    const edited = await edit(callId, 'bob', { ...proposed, amount_cents: 2000 });
    expect(edited).toMatchObject({ accepted: true, round: 1, riskLevel: 'irreversible' });
    // The new round asks for the edited arguments: its digest is the edit's, its preview the new one.
    const second = await openRound(callId, 1);
    expect(second.approval).toMatchObject({
      round: 2,
      argsDigest: digestOf({ ...proposed, amount_cents: 2000 }),
      supersedes: { round: 1, reason: 'bob edited the arguments: the customer asked for 2,000' },
    });
    expect(JSON.stringify(second.approval!.preview)).toContain('2000');
    expect(second.validatedArguments).toMatchObject({ amount_cents: 2000 });
    // A decision still signed for the first round counts for nothing.
    const stale = await harness.admin.send({
      callId,
      decision: staleDecision(callId, state, 'dave'),
    });
    expect(stale).toMatchObject({ accepted: false, code: 'DIGEST_MISMATCH' });
    expect(await appliedRefunds()).toBe(0);

    expect(await decide(callId, 'bob')).toMatchObject({ accepted: true, state: 'approved' });
    const result = await harness.client.result(callId, { wait: true });
    expect(result).toMatchObject({
      ok: true,
      code: 'OK',
      effect: 'applied',
      edited: {
        by: ['bob'],
        reason: 'the customer asked for 2,000',
        changes: [{ field: 'amount_cents', proposed: 2590, edited: 2000 }],
      },
    });
    expect(result?.message).toContain('bob edited your arguments (amount_cents 2590 → 2000)');
    // Exactly one refund, of the edited amount.
    const refunds = await harness.orders.api.listRefunds({ orderId: 'ORD-1001' });
    expect(refunds.map((refund) => refund.amountCents)).toEqual([2000]);
    // The audit keeps both versions and both digests, and who edited.
    const [record] = await harness.audit.recordsOf(callId);
    expect(record?.validatedArguments).toMatchObject({ amount_cents: 2000 });
    expect(record?.edits).toEqual([
      expect.objectContaining({
        approver: 'bob',
        round: 1,
        argsDigest: digestOf(proposed),
        editedDigest: digestOf({ ...proposed, amount_cents: 2000 }),
        proposedArguments: proposed,
        editedArguments: { ...proposed, amount_cents: 2000 },
      }),
    ]);
    const attempts = await harness.audit.decisionAttemptsOf(callId);
    expect(
      attempts.filter((attempt) => attempt.decision === 'edit' && attempt.outcome === 'accepted'),
    ).toHaveLength(2); // the workflow's record and the admin's
  });

  it('asks for the critical quorum when an edit raises the refund above the threshold', async () => {
    const { callId } = await proposeRefund();
    await openRound(callId);
    const raised = { ...proposed, amount_cents: 11_000 };
    // Bob's grant stops at irreversible: his edit to a critical refund is refused, the round as it was.
    expect(await edit(callId, 'bob', raised)).toMatchObject({
      accepted: false,
      code: 'APPROVER_NOT_ALLOWED',
    });
    expect((await harness.admin.show(callId))?.approval).toMatchObject({ round: 1, state: 'pending' });
    // Alice may approve critical calls: her edit opens a critical round, quorum 2.
    expect(await edit(callId, 'alice', raised)).toMatchObject({ accepted: true, riskLevel: 'critical' });
    const second = await openRound(callId, 1);
    expect(second.approval).toMatchObject({ round: 2, riskLevel: 'critical', quorum: 2 });
    // Her lone approval is not enough; bob's grant does not reach it; dave's completes the quorum.
    expect(await decide(callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    expect(await decide(callId, 'bob')).toMatchObject({ accepted: false, code: 'APPROVER_NOT_ALLOWED' });
    expect(await appliedRefunds()).toBe(0);
    expect(await decide(callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    const refunds = await harness.orders.api.listRefunds({ orderId: 'ORD-1001' });
    expect(refunds.map((refund) => refund.amountCents)).toEqual([11_000]);
  });

  it('refuses edits outside the schema, of a bound parameter, of the resource, or beyond the policy', async () => {
    const { callId } = await proposeRefund();
    await openRound(callId);
    const refusals = [
      [{ ...proposed, amount_cents: '2000' }, 'INVALID_ARGUMENTS'],
      [{ ...proposed, amount_cents: 20.5 }, 'INVALID_ARGUMENTS'],
      [{ ...proposed, reason: 'goodwill' }, 'INVALID_ARGUMENTS'],
      [{ ...proposed, amount_cents: 2000, note: 'extra' }, 'INVALID_ARGUMENTS'],
      [{ ...proposed, customer_id: 'CUS-2' }, 'BOUND_PARAMETER_EDITED'],
      [{ ...proposed, order_id: 'ORD-1002' }, 'RESOURCE_EDITED'],
      [{ ...proposed, amount_cents: 60_000 }, 'EDIT_REFUSED'],
      [proposed, 'EDIT_UNCHANGED'],
    ] as const;
    for (const [args, code] of refusals) {
      expect(await edit(callId, 'alice', args), JSON.stringify(args)).toMatchObject({
        accepted: false,
        code,
      });
    }
    // Nothing changed: the first round is still open, for the proposed arguments, and nothing ran.
    expect((await harness.admin.show(callId))?.approval).toMatchObject({
      round: 1,
      state: 'pending',
      argsDigest: digestOf(proposed),
    });
    expect(await appliedRefunds()).toBe(0);
    await decide(callId, 'alice', 'deny', 'tidy up');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ code: 'APPROVAL_DENIED' });
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses forged, foreign, replayed and stale edits', async () => {
    const { callId } = await proposeRefund();
    const state = await openRound(callId);
    const lowered = { ...proposed, amount_cents: 2000 };
    const send = (signed: SignedEdit) => harness.admin.sendEdit({ callId, edit: signed });
    // A digest that is not the edited arguments' own.
    expect(
      await send(
        signedEdit({
          callId,
          state,
          approver: 'alice',
          args: lowered,
          envelope: { editedDigest: digestOf(proposed) },
        }),
      ),
    ).toMatchObject({ accepted: false, code: 'DIGEST_MISMATCH' });
    // Alice's name, bob's key.
    expect(
      await send(signedEdit({ callId, state, approver: 'alice', signer: 'bob', args: lowered })),
    ).toMatchObject({
      accepted: false,
      code: 'SIGNATURE_INVALID',
    });
    // Signed for another round's nonce.
    expect(
      await send(
        signedEdit({ callId, state, approver: 'alice', args: lowered, envelope: { nonce: 'f'.repeat(64) } }),
      ),
    ).toMatchObject({ accepted: false, code: 'DIGEST_MISMATCH' });
    // A good edit, then the same edit again: the round it was signed for has moved on.
    const good = signedEdit({ callId, state, approver: 'alice', args: lowered });
    expect(await send(good)).toMatchObject({ accepted: true });
    const second = await openRound(callId, 1);
    expect(await send(good)).toMatchObject({ accepted: false, code: 'DIGEST_MISMATCH' });
    // An edit of the new round's arguments signed for the first round's digests: stale.
    expect(
      await send(signedEdit({ callId, state, approver: 'alice', args: { ...proposed, amount_cents: 1500 } })),
    ).toMatchObject({ accepted: false, code: 'DIGEST_MISMATCH' });
    expect(second.approval).toMatchObject({ round: 2, state: 'pending' });
    await decide(callId, 'dave');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ ok: true });
    const refunds = await harness.orders.api.listRefunds({ orderId: 'ORD-1001' });
    expect(refunds.map((refund) => refund.amountCents)).toEqual([2000]);
  });
});

/** A decision for the first round of `state`, signed by `approver`: it must not count for the second. */
function staleDecision(callId: string, state: CallState, approver: string) {
  const approval = state.approval!;
  const envelope = {
    callId,
    runId: approval.runId,
    nonce: approval.nonce,
    argsDigest: approval.argsDigest,
    previewDigest: approval.previewDigest,
    contractDigest: approval.contractDigest,
    decision: 'approve' as const,
    approver,
    reason: 'looks right',
    issuedAt: new Date().toISOString(),
  };
  return {
    envelope,
    signature: signValue({ kind: 'decision', value: envelope, privateKey: harness.approverKey(approver) }),
  };
}
