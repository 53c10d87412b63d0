import { setTimeout as sleep } from 'node:timers/promises';
import { addGrant, cosignGrant, listGrants, revokeGrant, signGrant } from 'toolgate/admin';
import type { RiskLevel, ToolResult } from 'toolgate';
import type { GrantReceipt, GrantRefusal, SignedGrant } from 'toolgate/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { revokeOpenGrants } from '../support/grant-helpers';

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const { appliedRefunds } = approvalHelpers(() => harness);
const hourMs = 60 * 60 * 1000;

/** A grant for support-bot's refunds (which always need approval), signed by `approvers` (alice first). */
function grantFor(
  input: {
    maxCalls?: number;
    maxAmount?: number;
    maxAmountPerCall?: number;
    maxLevel?: RiskLevel;
    validForMs?: number;
    caller?: string;
    reason?: string;
  } = {},
  approvers: string[] = ['alice'],
): SignedGrant {
  const [first, ...others] = approvers;
  let signed = signGrant({
    taskQueue: harness.taskQueue,
    caller: input.caller ?? 'support-bot',
    tool: 'refund_order',
    maxLevel: input.maxLevel ?? 'irreversible',
    maxCalls: input.maxCalls ?? 3,
    ...(input.maxAmount !== undefined ? { maxAmount: input.maxAmount } : {}),
    ...(input.maxAmountPerCall !== undefined ? { maxAmountPerCall: input.maxAmountPerCall } : {}),
    expiresAt: new Date(Date.now() + (input.validForMs ?? hourMs)),
    reason: input.reason ?? 'small damaged-goods refunds while the queue is long',
    approver: first!,
    approverKey: harness.approverKey(first!),
  });
  for (const approver of others) {
    signed = cosignGrant({ signed, approver, approverKey: harness.approverKey(approver) });
  }
  return signed;
}

const add = (signed: SignedGrant) =>
  addGrant({ client: harness.temporal, taskQueue: harness.taskQueue, signed });

const accepted = (outcome: GrantReceipt | GrantRefusal): GrantReceipt => {
  expect(outcome).toMatchObject({ accepted: true });
  return outcome as GrantReceipt;
};

/** A refund by support-bot on ORD-1003 (its total is large enough for every amount below). */
const refund = (amount: number, session = harness.newSession()): Promise<ToolResult> =>
  harness.call({
    caller: 'support-bot',
    session,
    tool: 'refund_order',
    arguments: JSON.stringify({
      order_id: 'ORD-1003',
      amount_cents: amount,
      currency: 'BRL',
      reason: 'damaged',
    }),
  });

/** A grant naming alice as its signer, signed with bob's key. */
function signedWithWrongKey(): SignedGrant {
  const signed = grantFor();
  const forged = cosignGrant({ signed, approver: 'bob', approverKey: harness.approverKey('bob') });
  return {
    grant: signed.grant,
    signatures: [{ approver: 'alice', signature: forged.signatures[1]!.signature }],
  };
}

const grantOf = async (grantId: string) =>
  (await listGrants({ client: harness.temporal, taskQueue: harness.taskQueue })).grants.find(
    (entry) => entry.grant.grantId === grantId,
  );

/** Cancels calls left waiting, so each test leaves nothing pending. */
const cancelAll = (results: ToolResult[]) =>
  Promise.all(
    results
      .filter((result) => result.code === 'APPROVAL_PENDING')
      .map((result) =>
        harness.client.cancel({ callId: result.callId, caller: 'support-bot', reason: 'test done' }),
      ),
  );

// Each test starts with no active grant: what the one before added is revoked by an operator.
afterEach(() => revokeOpenGrants(harness));

describe('bounded standing approvals', () => {
  it('lets exactly N calls through without waiting, records the grant each used, and the next one waits', async () => {
    const before = await appliedRefunds();
    const { grant } = accepted(await add(grantFor({ maxCalls: 3, maxAmountPerCall: 1_000 })));
    expect(grant).toMatchObject({ state: 'active', approvers: ['alice'], remainingCalls: 3, usedCalls: 0 });

    const results: ToolResult[] = [];
    for (const amount of [101, 102, 103]) results.push(await refund(amount));
    expect(results.map((result) => [result.code, result.effect])).toEqual([
      ['OK', 'applied'],
      ['OK', 'applied'],
      ['OK', 'applied'],
    ]);
    expect(await appliedRefunds()).toBe(before + 3);

    const fourth = await refund(104);
    expect(fourth).toMatchObject({ ok: false, code: 'APPROVAL_PENDING', effect: 'none' });
    expect(await appliedRefunds()).toBe(before + 3);
    await cancelAll([fourth]);

    const listed = await grantOf(grant.grant.grantId);
    expect(listed).toMatchObject({ state: 'used-up', usedCalls: 3, usedAmount: 306, remainingCalls: 0 });
    expect(listed?.calls).toEqual(results.map((result) => result.callId));

    // Each call's audit record names the grant and its approvers; its state says it was granted.
    for (const result of results) {
      const [record] = await harness.audit.recordsOf(result.callId);
      expect(record).toMatchObject({
        code: 'OK',
        grant: { grantId: grant.grant.grantId, approvers: ['alice'] },
      });
      expect(record?.decisions).toBeUndefined();
    }
    const events = await harness.audit.grantEvents({ grantId: grant.grant.grantId });
    expect(events.map((event) => [event.action, event.callId ?? null, event.outcome])).toEqual([
      ['grant', null, 'accepted'],
      ...results.map((result) => ['use-grant', result.callId, 'accepted']),
    ]);
  });

  it('never lets concurrent sessions take more calls or amount than the grant holds', async () => {
    const before = await appliedRefunds();
    const { grant } = accepted(
      await add(grantFor({ maxCalls: 10, maxAmount: 1_000, maxAmountPerCall: 300 })),
    );
    // 8 sessions at once, 250 cents each: the total of 1,000 lets exactly 4 through.
    const results = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(() => refund(250)));
    const applied = results.filter((result) => result.effect === 'applied');
    const waiting = results.filter((result) => result.code === 'APPROVAL_PENDING');
    expect(waiting).toHaveLength(4);
    expect(applied).toHaveLength(4);
    expect(await appliedRefunds()).toBe(before + 4);
    const listed = await grantOf(grant.grant.grantId);
    expect(listed).toMatchObject({ state: 'active', usedCalls: 4, usedAmount: 1_000, remainingAmount: 0 });
    expect(listed?.calls.sort()).toEqual(applied.map((result) => result.callId).sort());
    // Above the per-call cap: waits for a human though the grant has room.
    const big = await refund(301);
    expect(big.code).toBe('APPROVAL_PENDING');
    await cancelAll([...waiting, big]);
  });

  it('stops the next call once revoked, by an approver of the grant or an operator, and durably', async () => {
    const before = await appliedRefunds();
    const signed = grantFor({ maxCalls: 5 });
    const { grant } = accepted(await add(signed));
    expect(await refund(311)).toMatchObject({ code: 'OK', effect: 'applied' });

    // bob did not sign it: refused; alice did.
    const byBob = await revokeGrant({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      grantId: grant.grant.grantId,
      by: { approver: 'bob' },
      key: harness.approverKey('bob'),
      reason: 'not mine',
    });
    expect(byBob).toMatchObject({ accepted: false, code: 'REVOCATION_NOT_ALLOWED' });
    const revoked = await revokeGrant({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      grantId: grant.grant.grantId,
      by: { approver: 'alice' },
      key: harness.approverKey('alice'),
      reason: 'the agent refunded the wrong orders',
    });
    expect(revoked).toMatchObject({
      accepted: true,
      grant: { state: 'revoked', revoked: { by: 'alice', reason: 'the agent refunded the wrong orders' } },
    });

    const next = await refund(312);
    expect(next).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    expect(await appliedRefunds()).toBe(before + 1);
    await cancelAll([next]);

    // Durable: a run started anew (here: terminated) rebuilds from the audit store, revocation included.
    const handle = harness.temporal.workflow.getHandle(`toolgate-grants:${harness.taskQueue}`);
    await handle.terminate('test: the grants workflow is rebuilt from the audit store');
    accepted(await add(grantFor({ maxCalls: 1, maxAmountPerCall: 100, reason: 'after the restart' })));
    const restored = await grantOf(grant.grant.grantId);
    expect(restored).toMatchObject({ state: 'revoked', usedCalls: 1, revoked: { by: 'alice' } });
    // The revoked grant sent again is refused: its id is in the audit store.
    expect(await add(signed)).toMatchObject({ accepted: false, code: 'GRANT_REPLAYED' });
    const stillWaits = await refund(313);
    expect(stillWaits.code).toBe('APPROVAL_PENDING');
    await cancelAll([stillWaits]);
    expect(await appliedRefunds()).toBe(before + 1);
  });

  it('refuses a grant whose approver does not hold its level, operates the caller, or lacks a second approver for critical', async () => {
    const outcomes = await Promise.all([
      // bob may approve up to irreversible.
      add(grantFor({ maxLevel: 'critical' }, ['bob', 'alice'])),
      // carol operates support-bot.
      add(grantFor({}, ['carol'])),
      // critical needs two distinct approvers.
      add(grantFor({ maxLevel: 'critical' }, ['alice'])),
      add(grantFor({ maxLevel: 'critical' }, ['alice', 'alice'])),
      // signed with another approver's key; a caller not in the policy.
      add(signedWithWrongKey()),
      add(grantFor({ caller: 'nobody' })),
      // longer than the policy's maxApprovalWindow (30 days by default).
      add(grantFor({ validForMs: 31 * 24 * hourMs })),
    ]);
    expect(outcomes.map((outcome) => (outcome.accepted ? 'accepted' : outcome.code))).toEqual([
      'APPROVER_NOT_ALLOWED',
      'SELF_APPROVAL',
      'QUORUM_NOT_MET',
      'QUORUM_NOT_MET',
      'SIGNATURE_INVALID',
      'CALLER_UNKNOWN',
      'GRANT_INVALID',
    ]);
    // Two approvers who hold critical: accepted, and a critical refund (above 10,000 cents) runs on it.
    const before = await appliedRefunds();
    accepted(await add(grantFor({ maxLevel: 'critical', maxCalls: 1 }, ['alice', 'dave'])));
    expect(await refund(10_500)).toMatchObject({ code: 'OK', effect: 'applied' });
    expect(await appliedRefunds()).toBe(before + 1);
    // Every attempt is audited with its outcome.
    const outcomesAudited = (await harness.audit.grantEvents())
      .filter((event) => event.action === 'grant')
      .map((event) => event.outcome);
    expect(outcomesAudited).toEqual(
      expect.arrayContaining(['APPROVER_NOT_ALLOWED', 'SELF_APPROVAL', 'QUORUM_NOT_MET']),
    );
  });

  it('does not use an expired grant', async () => {
    const before = await appliedRefunds();
    const { grant } = accepted(await add(grantFor({ maxCalls: 5, validForMs: 3_000 })));
    await sleep(3_500);
    const late = await refund(401);
    expect(late).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    expect(await appliedRefunds()).toBe(before);
    expect(await grantOf(grant.grant.grantId)).toMatchObject({ state: 'expired', usedCalls: 0 });
    await cancelAll([late]);
  });
});
