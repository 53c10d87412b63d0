import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { addGrant, cosignGrant, listGrants, revokeGrant, setToolSwitch, signGrant } from 'toolgate/admin';
import {
  addGrantUpdate,
  grantsWorkflowId,
  releaseGrantUpdate,
  revokeGrantUpdate,
  signValue,
  useGrantUpdate,
} from 'toolgate/protocol';
import type { PolicyFileInput, RiskLevel, ToolResult } from 'toolgate';
import type { GrantReceipt, GrantRefusal, GrantUseRequest, SignedGrant } from 'toolgate/protocol';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import { caught } from '../support/caught';
import { testPolicy } from '../support/test-policy';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { revokeOpenGrants } from '../support/grant-helpers';

// Attacks on bounded standing approvals (grants), from a review. `defect:` tests assert the correct
// behaviour and fail while the defect they name is there; `refuses` tests guard what held. Not tested:
// a raw `releaseGrant` update gives any use back (docs/approvals.md, "Temporal access is part of the trust model": `toolgate-grants:*` is
// kept to workers and operators by Temporal's authorisation).

const hourMs = 60 * 60 * 1000;

// A gate on the orders client the worker's tools use: a held request waits until the test lets it go.
interface Hold {
  kind: 'getOrder' | 'refund';
  orderId: string;
  reached: () => void;
  opened: Promise<void>;
}
const holds: Hold[] = [];

/** The next `kind` request for `orderId` waits: `reached` resolves when it arrives, `release` lets it go. */
function holdNext(kind: Hold['kind'], orderId: string): { reached: Promise<void>; release: () => void } {
  let release!: () => void;
  let reached!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  const arrived = new Promise<void>((resolve) => (reached = resolve));
  holds.push({ kind, orderId, reached, opened });
  return { reached: arrived, release };
}

async function passHold(kind: Hold['kind'], orderId: string): Promise<void> {
  const index = holds.findIndex((entry) => entry.kind === kind && entry.orderId === orderId);
  if (index < 0) return;
  const [entry] = holds.splice(index, 1);
  entry!.reached();
  await entry!.opened;
}

const gatedOrders = (api: OrdersApiClient): OrdersApiClient => ({
  ...api,
  getOrder: async (request) => {
    await passHold('getOrder', request.orderId);
    return api.getOrder(request);
  },
  refund: async (request) => {
    await passHold('refund', request.orderId);
    return api.refund(request);
  },
});

interface GrantShape {
  caller?: string;
  tool?: string;
  maxLevel?: RiskLevel;
  maxCalls?: number;
  maxAmount?: number;
  maxAmountPerCall?: number;
  validForMs?: number;
}

/** Signs a grant (support-bot's refunds up to irreversible, 3 calls, an hour by default) by `approvers`. */
function grantBy(harness: ToolGateHarness, shape: GrantShape = {}, approvers = ['alice']): SignedGrant {
  const [first, ...others] = approvers;
  let signed = signGrant({
    taskQueue: harness.taskQueue,
    caller: shape.caller ?? 'support-bot',
    tool: shape.tool ?? 'refund_order',
    maxLevel: shape.maxLevel ?? 'irreversible',
    maxCalls: shape.maxCalls ?? 3,
    ...(shape.maxAmount !== undefined ? { maxAmount: shape.maxAmount } : {}),
    ...(shape.maxAmountPerCall !== undefined ? { maxAmountPerCall: shape.maxAmountPerCall } : {}),
    expiresAt: new Date(Date.now() + (shape.validForMs ?? hourMs)),
    reason: 'review: grant attacks',
    approver: first!,
    approverKey: harness.approverKey(first!),
  });
  for (const approver of others) {
    signed = cosignGrant({ signed, approver, approverKey: harness.approverKey(approver) });
  }
  return signed;
}

/** A grant with `grant` fields replaced and its signatures kept as they were (signed over the original). */
function tampered(signed: SignedGrant, changes: Record<string, unknown>): SignedGrant {
  return { grant: { ...signed.grant, ...changes }, signatures: signed.signatures };
}

const codeOf = (outcome: GrantReceipt | GrantRefusal): string =>
  outcome.accepted ? 'accepted' : outcome.code;

/** The refusal type of a raw update's failure (a validator's or handler's ApplicationFailure). */
const failureType = (error: unknown): string | undefined =>
  (error as { cause?: { type?: string } }).cause?.type ?? (error as { type?: string }).type;

const refundArgs = (orderId: string, amount: number) =>
  JSON.stringify({
    order_id: orderId,
    amount_cents: amount,
    currency: orderId === 'ORD-1002' ? 'USD' : 'BRL',
    reason: 'damaged',
  });

/** What each describe's tests do with their harness (read at each call). */
function grantSteps(current: () => ToolGateHarness) {
  const add = (signed: unknown) =>
    addGrant({
      client: current().temporal,
      taskQueue: current().taskQueue,
      signed: signed as SignedGrant,
    });
  const grants = () => current().temporal.workflow.getHandle(grantsWorkflowId(current().taskQueue));
  const grantOf = async (grantId: string) =>
    (await listGrants({ client: current().temporal, taskQueue: current().taskQueue })).grants.find(
      (entry) => entry.grant.grantId === grantId,
    );
  const accepted = async (signed: SignedGrant): Promise<SignedGrant> => {
    expect(codeOf(await add(signed))).toBe('accepted');
    return signed;
  };
  /** A refund proposal by `caller` (support-bot by default) in a fresh session. */
  const refundInput = (input: { orderId?: string; amount: number; caller?: string; intentId?: string }) => ({
    caller: input.caller ?? 'support-bot',
    session: `${current().newSession()}:${input.caller ?? 'support-bot'}`,
    tool: 'refund_order',
    arguments: refundArgs(input.orderId ?? 'ORD-1003', input.amount),
    ...(input.intentId !== undefined ? { intentId: input.intentId } : {}),
  });
  const refund = (input: { orderId?: string; amount: number; caller?: string; intentId?: string }) =>
    current().client.call(refundInput(input));
  const applied = () => current().orders.api.refundCount();
  const appliedCents = async () =>
    (await current().orders.api.listRefunds()).reduce((sum, entry) => sum + entry.amountCents, 0);
  const cancelPending = (results: ToolResult[], caller = 'support-bot') =>
    Promise.all(
      results
        .filter((result) => result.code === 'APPROVAL_PENDING')
        .map((result) => current().client.cancel({ callId: result.callId, caller, reason: 'review done' })),
    );
  const rawUse = (request: unknown) =>
    grants().executeUpdate(useGrantUpdate, { args: [request as GrantUseRequest] });
  /** Revokes every grant that could still cover a call, so each test starts with none. */
  const revokeActive = () => revokeOpenGrants(current(), 'review cleanup');
  return {
    add,
    grants,
    grantOf,
    accepted,
    refundInput,
    refund,
    applied,
    appliedCents,
    cancelPending,
    rawUse,
    revokeActive,
  };
}

describe('standing grants under attack', () => {
  let harness: ToolGateHarness;
  useHarness((started) => (harness = started), { ordersApi: gatedOrders });
  const {
    add,
    grants,
    grantOf,
    accepted,
    refundInput,
    refund,
    applied,
    appliedCents,
    cancelPending,
    rawUse,
    revokeActive,
  } = grantSteps(() => harness);

  afterEach(async () => {
    holds.length = 0;
    await revokeActive();
  });

  // The defect this once reproduced: a write proposed again under the same intentId with a larger amount reuses the use its first run kept, counted at the first amount, and the total cap is exceeded.
  it('counts a write proposed again under the same intentId with a larger amount at its own amount, so the total cap holds', async () => {
    await accepted(grantBy(harness, { maxCalls: 3, maxAmount: 1_000 }));
    const intentId = `intent-${randomUUID()}`;
    const first = refundInput({ amount: 100, intentId });
    const callId = harness.client.callIdOf(first);
    // Nothing is committed and the service cannot say so: effect unknown, the use (100 cents) is kept.
    await harness.orders.api.setFaults({ idempotencyKey: callId, unavailable: 3, lookupUnavailable: 3 });
    expect(await harness.client.call(first)).toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      effect: 'unknown',
    });
    // Same intent, same call id, 900 cents: answered from the held use, which still counts 100.
    const second = await refund({ amount: 900, intentId });
    const third = await refund({ amount: 900 });
    await cancelPending([second, third]);
    // The grant allows 1,000 cents in total.
    expect(await appliedCents()).toBeLessThanOrEqual(1_000);
  });

  // The defect this once reproduced: the minter mints on a use the grants workflow counted at another amount (a raw useGrant of 0 cents under the call id).
  it('refuses to mint on a use the grants workflow counted at another amount (a raw useGrant of 0 cents under the call id)', async () => {
    await accepted(grantBy(harness, { maxCalls: 2, maxAmount: 1_000, maxAmountPerCall: 1_000 }));
    const input = refundInput({ amount: 1_000 });
    const callId = harness.client.callIdOf(input);
    expect(
      await rawUse({
        reservationId: callId,
        callId,
        runId: 'raw-client',
        caller: 'support-bot',
        tool: 'refund_order',
        riskLevel: 'irreversible',
        amount: 0,
      }),
    ).toMatchObject({ ok: true });
    const results = [await harness.client.call(input), await refund({ amount: 1_000 })];
    await cancelPending(results);
    expect(await appliedCents()).toBeLessThanOrEqual(1_000);
  });

  // The defect this once reproduced: a grant whose last use is held by a call in flight cannot be revoked (GRANT_NOT_ACTIVE), and when that call gives its use back the grant runs the next call.
  it('revokes a grant whose last use is held by a call in flight, so a use given back never brings it back', async () => {
    const signed = await accepted(grantBy(harness, { maxCalls: 1 }));
    const input = refundInput({ orderId: 'ORD-1002', amount: 500 });
    // The call takes the use, then its refund waits at the gate; the service will then be down for it.
    await harness.orders.api.setFaults({ idempotencyKey: harness.client.callIdOf(input), unavailable: 3 });
    const gate = holdNext('refund', 'ORD-1002');
    const inFlight = harness.client.call(input);
    await gate.reached;
    const revoked = await revokeGrant({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      grantId: signed.grant.grantId,
      by: { approver: 'alice' },
      key: harness.approverKey('alice'),
      reason: 'the agent misbehaves',
    });
    gate.release();
    expect(await inFlight).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', effect: 'none' });
    const next = await refund({ amount: 503 });
    await cancelPending([next]);
    expect.soft(codeOf(revoked)).toBe('accepted');
    // alice revoked it (or tried to, and was told it was used up): nothing runs on it any more.
    expect(next.code).toBe('APPROVAL_PENDING');
    expect(await applied()).toBe(0);
  });

  // The defect this once reproduced: a later run of a write gives back the use its earlier run kept after an effect that was applied but unknown, and the grant runs one call more than it allows.
  it('never gives back, from a later run of a write, the use an earlier run kept after a possibly applied effect: the grant runs no more calls than it allows', async () => {
    const flip = (action: 'disable' | 'enable') =>
      setToolSwitch({
        client: harness.temporal,
        taskQueue: harness.taskQueue,
        action,
        tool: 'refund_order',
        caller: 'support-bot',
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
        reason: `review: ${action}`,
      });
    await accepted(grantBy(harness, { maxCalls: 2 }));
    const input = refundInput({ amount: 700 });
    const callId = harness.client.callIdOf(input);
    // Committed, its answer lost, then the service is down and cannot say: applied, reported unknown.
    await harness.orders.api.setFaults({
      idempotencyKey: callId,
      loseResponseAfterCommit: 1,
      unavailable: 2,
      lookupUnavailable: 10,
    });
    expect(await harness.client.call(input)).toMatchObject({ effect: 'unknown' });
    expect(await applied()).toBe(1);
    // Proposed again (its use is still held): its check waits while an operator turns refunds off for
    // support-bot, so this run ends TOOL_DISABLED, effect none, and gives the use back.
    const gate = holdNext('getOrder', 'ORD-1003');
    const again = harness.client.call(input);
    await gate.reached;
    try {
      expect(await flip('disable')).toMatchObject({ accepted: true });
      gate.release();
      expect(await again).toMatchObject({ code: 'TOOL_DISABLED', effect: 'none' });
    } finally {
      await flip('enable');
    }
    const more = [await refund({ amount: 701 }), await refund({ amount: 702 })];
    await cancelPending(more);
    // Two calls allowed, one already applied: one more runs, the other waits.
    expect(more.map((result) => result.code)).toEqual(['OK', 'APPROVAL_PENDING']);
    expect(await applied()).toBe(2);
  });

  // The defect this once reproduced: a grant for a tool outside the caller's allowlist, or above the caller's approval ceiling, is accepted.
  it("refuses a grant for a tool outside the caller's allowlist, or above the caller's approval ceiling", async () => {
    const outsideAllowlist = await add(grantBy(harness, { caller: 'readonly-bot' }));
    const aboveCeiling = await add(
      grantBy(harness, { caller: 'cautious-bot', maxLevel: 'critical' }, ['alice', 'dave']),
    );
    expect([codeOf(outsideAllowlist), codeOf(aboveCeiling)]).not.toContain('accepted');
  });

  it('refuses (waits for a human at once) a call a terminated grants workflow covered in its last state', async () => {
    await accepted(grantBy(harness, { maxCalls: 3 }));
    await grants().terminate('review: ops terminated the grants workflow');
    const startedAt = Date.now();
    const result = await refund({ amount: 804 });
    const tookMs = Date.now() - startedAt;
    await cancelPending([result]);
    expect(result).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    expect(await applied()).toBe(0);
    expect(tookMs).toBeLessThan(10_000);
  });

  it('accepts the same signed grant sent 10 times at once only once, the others GRANT_REPLAYED, and its uses never reset', async () => {
    const signed = grantBy(harness, { maxCalls: 2 });
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => add(signed)));
    expect(outcomes.map(codeOf).filter((code) => code === 'accepted')).toHaveLength(1);
    expect(outcomes.map(codeOf).filter((code) => code !== 'accepted')).toEqual(
      Array(9).fill('GRANT_REPLAYED'),
    );
    expect(await refund({ amount: 301 })).toMatchObject({ code: 'OK', effect: 'applied' });
    expect(await grantOf(signed.grant.grantId)).toMatchObject({ usedCalls: 1, remainingCalls: 1 });
    // Sent again once it was used: refused, and the use stays counted.
    expect(codeOf(await add(signed))).toBe('GRANT_REPLAYED');
    expect(await grantOf(signed.grant.grantId)).toMatchObject({ usedCalls: 1, remainingCalls: 1 });
    expect(await refund({ amount: 302 })).toMatchObject({ code: 'OK', effect: 'applied' });
    const third = await refund({ amount: 303 });
    expect(third).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    await cancelPending([third]);
    expect(await applied()).toBe(2);
  });

  it('refuses a grant tampered after signing (calls, total, caller, expiry, a cap removed) with SIGNATURE_INVALID', async () => {
    const signed = grantBy(harness, { maxCalls: 1, maxAmount: 500, maxAmountPerCall: 500 });
    const withoutTotal: Partial<SignedGrant['grant']> = { ...signed.grant };
    delete withoutTotal.maxAmount;
    const outcomes = await Promise.all([
      add(tampered(signed, { maxCalls: 1_000 })),
      add(tampered(signed, { maxAmount: 1_000_000 })),
      add(tampered(signed, { caller: 'hasty-bot' })),
      add(tampered(signed, { expiresAt: new Date(Date.now() + 2 * hourMs).toISOString() })),
      add({ grant: withoutTotal, signatures: signed.signatures }),
    ]);
    expect(outcomes.map(codeOf)).toEqual(Array(5).fill('SIGNATURE_INVALID'));
    const result = await refund({ amount: 400 });
    expect(result).toMatchObject({ code: 'APPROVAL_PENDING' });
    await cancelPending([result]);
    expect(await applied()).toBe(0);
  });

  it('refuses grants signed by the wrong people: a level too low, an operator of the caller, one approver twice for a quorum of 2, a signature under another name, an approver not in the policy', async () => {
    const critical = () => grantBy(harness, { maxLevel: 'critical', maxCalls: 1 });
    const twice = critical();
    const asDave = critical();
    const asMallory = critical();
    const outcomes = await Promise.all([
      add(grantBy(harness, { maxLevel: 'critical' }, ['alice', 'bob'])),
      add(grantBy(harness, {}, ['alice', 'carol'])),
      add({ grant: twice.grant, signatures: [twice.signatures[0]!, { ...twice.signatures[0]! }] }),
      add({
        grant: asDave.grant,
        signatures: [asDave.signatures[0]!, { approver: 'dave', signature: asDave.signatures[0]!.signature }],
      }),
      add({
        grant: asMallory.grant,
        signatures: [{ approver: 'mallory', signature: asMallory.signatures[0]!.signature }],
      }),
    ]);
    expect(outcomes.map(codeOf)).toEqual([
      'APPROVER_NOT_ALLOWED',
      'SELF_APPROVAL',
      'QUORUM_NOT_MET',
      'SIGNATURE_INVALID',
      'APPROVER_UNKNOWN',
    ]);
    const result = await refund({ amount: 10_500 });
    expect(result).toMatchObject({ code: 'APPROVAL_PENDING' });
    await cancelPending([result]);
    expect(await applied()).toBe(0);
  });

  it('refuses malformed and out-of-range grants: prototype names, huge or fractional counts, amount caps on a read, expired, issued in the future, too long', async () => {
    const now = Date.now();
    const attempts: unknown[] = [
      grantBy(harness, { caller: '__proto__' }),
      grantBy(harness, { caller: 'constructor' }),
      grantBy(harness, { tool: 'constructor' }),
      grantBy(harness, { tool: '__proto__' }),
      grantBy(harness, { maxCalls: 2 ** 53 }),
      grantBy(harness, { maxCalls: 1.5 }),
      grantBy(harness, { maxAmount: 1e300 }),
      grantBy(harness, { maxAmountPerCall: -5 }),
      grantBy(harness, { tool: 'get_order', maxLevel: 'read', maxAmount: 100 }),
      grantBy(harness, { validForMs: -1_000 }),
      cosignGrant({
        signed: {
          grant: {
            ...grantBy(harness).grant,
            grantId: randomUUID(),
            issuedAt: new Date(now + 2 * hourMs).toISOString(),
            expiresAt: new Date(now + 3 * hourMs).toISOString(),
          },
          signatures: [],
        },
        approver: 'alice',
        approverKey: harness.approverKey('alice'),
      }),
      grantBy(harness, { validForMs: 31 * 24 * hourMs }),
      { grant: { ...grantBy(harness).grant, maxLevel: 'constructor' }, signatures: [] },
      null,
    ];
    // One at a time: more than 10 updates in flight on one workflow are refused by the server.
    const outcomes: (GrantReceipt | GrantRefusal)[] = [];
    for (const attempt of attempts) outcomes.push(await add(attempt));
    expect(outcomes.map(codeOf)).toEqual([
      'CALLER_UNKNOWN',
      'CALLER_UNKNOWN',
      'UNKNOWN_TOOL',
      'UNKNOWN_TOOL',
      'GRANT_INVALID',
      'GRANT_INVALID',
      'GRANT_INVALID',
      'GRANT_INVALID',
      'GRANT_INVALID',
      'GRANT_INVALID',
      'GRANT_INVALID',
      'GRANT_INVALID',
      'GRANT_INVALID',
      'GRANT_INVALID',
    ]);
    const result = await refund({ amount: 400 });
    expect(result).toMatchObject({ code: 'APPROVAL_PENDING' });
    await cancelPending([result]);
    expect(await applied()).toBe(0);
  });

  it('refuses every call past the last use when many sessions race for it, and past the per-call cap, another caller or a level above the grant', async () => {
    await accepted(grantBy(harness, { maxCalls: 1, maxAmountPerCall: 5_000 }));
    const results = await Promise.all([1, 2, 3, 4, 5, 6].map((index) => refund({ amount: 100 + index })));
    expect(results.filter((result) => result.code === 'OK')).toHaveLength(1);
    expect(results.filter((result) => result.code === 'APPROVAL_PENDING')).toHaveLength(5);
    await cancelPending(results);
    await accepted(grantBy(harness, { maxCalls: 5, maxAmountPerCall: 5_000 }));
    const outside = [
      await refund({ amount: 5_001 }),
      await refund({ amount: 500, caller: 'cautious-bot' }),
      await refund({ amount: 10_500 }),
    ];
    expect(outside.map((result) => result.code)).toEqual([
      'APPROVAL_PENDING',
      'APPROVAL_PENDING',
      'APPROVAL_PENDING',
    ]);
    await cancelPending([outside[0]!, outside[2]!]);
    await cancelPending([outside[1]!], 'cautious-bot');
    expect(await applied()).toBe(1);
  });

  it('refuses revocations by someone not allowed, replays of a revocation, and the revoked grant sent again', async () => {
    const signed = await accepted(grantBy(harness, { maxCalls: 5 }));
    const revoke = (
      by: { approver: string } | { operator: string },
      key: string,
      kind: 'approver' | 'operator',
    ) =>
      revokeGrant({
        client: harness.temporal,
        taskQueue: harness.taskQueue,
        grantId: signed.grant.grantId,
        by,
        key: kind === 'approver' ? harness.approverKey(key) : harness.operatorKey(key),
        reason: 'review',
      });
    const revocation = {
      revocationId: randomUUID(),
      grantId: signed.grant.grantId,
      by: { approver: 'alice' },
      reason: 'review',
      issuedAt: new Date().toISOString(),
    };
    const refused = [
      await revoke({ approver: 'bob' }, 'bob', 'approver'),
      await revoke({ approver: '__proto__' }, 'bob', 'approver'),
      await revoke({ operator: 'mallory' }, 'mallory', 'operator'),
      // olivia's name, mallory's key; alice's name, bob's key.
      await revoke({ operator: 'olivia' }, 'mallory', 'operator'),
      await revoke({ approver: 'alice' }, 'bob', 'approver'),
      // a chain that is no chain.
      codeOf(
        await grants()
          .executeUpdate(revokeGrantUpdate, {
            args: [
              {
                revocation,
                signature: signValue({
                  kind: 'grant-revocation',
                  value: revocation,
                  privateKey: harness.approverKey('alice'),
                }),
                key: {} as never,
              },
            ],
          })
          .catch((error: unknown) => ({
            accepted: false as const,
            code: failureType(error) ?? '?',
            message: '',
          })),
      ),
    ];
    expect(refused.map((outcome) => (typeof outcome === 'string' ? outcome : codeOf(outcome)))).toEqual([
      'REVOCATION_NOT_ALLOWED',
      'REVOCATION_NOT_ALLOWED',
      'OPERATOR_UNKNOWN',
      'SIGNATURE_INVALID',
      'SIGNATURE_INVALID',
      'SIGNATURE_INVALID',
    ]);
    expect(await refund({ amount: 311 })).toMatchObject({ code: 'OK', effect: 'applied' });
    // The same signed revocation twice: once.
    const signedRevocation = {
      revocation: { ...revocation, revocationId: randomUUID() },
      signature: '',
    };
    signedRevocation.signature = signValue({
      kind: 'grant-revocation',
      value: signedRevocation.revocation,
      privateKey: harness.approverKey('alice'),
    });
    const first = await grants().executeUpdate(revokeGrantUpdate, { args: [signedRevocation] });
    expect(first).toMatchObject({ accepted: true, grant: { state: 'revoked' } });
    expect(
      failureType(
        await caught(() => grants().executeUpdate(revokeGrantUpdate, { args: [signedRevocation] })),
      ),
    ).toBe('GRANT_REPLAYED');
    expect(
      failureType(
        await caught(() =>
          grants().executeUpdate(addGrantUpdate, { args: [signed], updateId: randomUUID() }),
        ),
      ),
    ).toBe('GRANT_REPLAYED');
    await add(signed);
    expect(await grantOf(signed.grant.grantId)).toMatchObject({ state: 'revoked' });
    const after = await refund({ amount: 312 });
    expect(after).toMatchObject({ code: 'APPROVAL_PENDING' });
    await cancelPending([after]);
    expect(await applied()).toBe(1);
    // Every attempt is in the audit store, refused ones with their code.
    const outcomes = (await harness.audit.grantEvents({ grantId: signed.grant.grantId }))
      .filter((event) => event.action === 'revoke-grant')
      .map((event) => event.outcome);
    expect(outcomes).toEqual(
      expect.arrayContaining(['REVOCATION_NOT_ALLOWED', 'OPERATOR_UNKNOWN', 'SIGNATURE_INVALID', 'accepted']),
    );
  });

  it('refuses malformed raw updates in their validators, and the grants workflow keeps serving', async () => {
    const signed = await accepted(grantBy(harness, { maxCalls: 2 }));
    const use = {
      reservationId: 'r',
      callId: 'c',
      runId: 'run',
      caller: 'support-bot',
      tool: 'refund_order',
      riskLevel: 'irreversible',
    };
    const malformed: [typeof useGrantUpdate | typeof releaseGrantUpdate | typeof addGrantUpdate, unknown][] =
      [
        [useGrantUpdate, null],
        [useGrantUpdate, { ...use, reservationId: 1 }],
        [useGrantUpdate, { ...use, caller: { toString: 'support-bot' } }],
        [useGrantUpdate, { ...use, amount: -1 }],
        [useGrantUpdate, { ...use, amount: 1.5 }],
        [useGrantUpdate, { ...use, amount: '5' }],
        [useGrantUpdate, { ...use, amount: 2 ** 60 }],
        [useGrantUpdate, { ...use, runId: 5 }],
        [releaseGrantUpdate, { grantId: 'g', reservationId: 'r', runId: 5 }],
        [releaseGrantUpdate, { grantId: 5, reservationId: 'r' }],
        [releaseGrantUpdate, null],
        [addGrantUpdate, { grant: signed.grant, signatures: [{ approver: 'alice', signature: 5 }] }],
        [
          addGrantUpdate,
          { grant: { ...signed.grant, grantId: randomUUID(), maxCalls: '3' }, signatures: signed.signatures },
        ],
        [addGrantUpdate, { grant: signed.grant, signatures: Array(9).fill(signed.signatures[0]) }],
      ];
    const types: (string | undefined)[] = [];
    for (const [update, request] of malformed) {
      types.push(
        failureType(
          await caught(() => grants().executeUpdate(update as never, { args: [request as never] })),
        ),
      );
    }
    expect(types).toEqual(Array(malformed.length).fill('GRANT_INVALID'));
    // Levels that are no levels cover nothing.
    for (const riskLevel of ['constructor', '__proto__', 'toString', '']) {
      expect(await rawUse({ ...use, reservationId: randomUUID(), riskLevel })).toEqual({ ok: false });
    }
    expect(
      await grants().executeUpdate(releaseGrantUpdate, { args: [{ grantId: 'none', reservationId: 'r' }] }),
    ).toEqual({
      released: false,
    });
    expect(await refund({ amount: 321 })).toMatchObject({ code: 'OK', effect: 'applied' });
    expect(await grantOf(signed.grant.grantId)).toMatchObject({ usedCalls: 1 });
  });

  it("refuses a call whose use a raw client took in another caller's grant", async () => {
    await accepted(grantBy(harness, { caller: 'cautious-bot', maxCalls: 1 }));
    await accepted(grantBy(harness, { maxCalls: 1 }));
    const input = refundInput({ amount: 500 });
    const callId = harness.client.callIdOf(input);
    expect(
      await rawUse({
        reservationId: callId,
        callId,
        runId: 'raw-client',
        caller: 'cautious-bot',
        tool: 'refund_order',
        riskLevel: 'irreversible',
        amount: 500,
      }),
    ).toMatchObject({ ok: true });
    // The reservation is held for another caller: not this call's use, so a human decides (and the
    // minter, asked anyway, would refuse a use counted for another caller).
    const result = await harness.client.call(input);
    expect(result).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    await cancelPending([result]);
    expect(await applied()).toBe(0);
  });

  it('refuses to use an expired grant, and one whose workflow id is taken by another workflow', async () => {
    await accepted(grantBy(harness, { maxCalls: 5, validForMs: 1_500 }));
    await sleep(2_000);
    const late = await refund({ amount: 601 });
    expect(late).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    await cancelPending([late]);
    await grants().terminate('review: squat the grants workflow id');
    const squatter = await harness.temporal.workflow.start('toolgateControls', {
      workflowId: grantsWorkflowId(harness.taskQueue),
      taskQueue: harness.taskQueue,
      args: [{}],
    });
    try {
      expect(
        codeOf(
          await add(grantBy(harness, { maxCalls: 5 })).catch(() => ({
            accepted: false as const,
            code: 'FAILED',
            message: '',
          })),
        ),
      ).not.toBe('accepted');
      const waits = await refund({ amount: 602 });
      expect(waits).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
      await cancelPending([waits]);
    } finally {
      await squatter.terminate('review cleanup');
      // A grants run again, so the listing (and the next tests) find one.
      await accepted(grantBy(harness, { maxCalls: 1, validForMs: 1_000 }));
    }
    expect(await applied()).toBe(0);
  });

  // The defect this once reproduced: a grant signed for one deployment (task queue) is accepted by another that trusts the same approvers, even after it was revoked on the first.
  it('refuses a grant signed for another deployment (task queue) that trusts the same approvers', async () => {
    const signed = await accepted(grantBy(harness, { maxCalls: 1 }));
    expect(
      codeOf(
        await revokeGrant({
          client: harness.temporal,
          taskQueue: harness.taskQueue,
          grantId: signed.grant.grantId,
          by: { approver: 'alice' },
          key: harness.approverKey('alice'),
          reason: 'wrong orders refunded',
        }),
      ),
    ).toBe('accepted');
    const other = await startHarness({ address: temporalAddress(), keysDirectory: harness.keysDirectory });
    try {
      const replayed = await addGrant({ client: other.temporal, taskQueue: other.taskQueue, signed });
      const result = await other.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: refundArgs('ORD-1003', 900),
      });
      if (result.code === 'APPROVAL_PENDING') {
        await other.client.cancel({ callId: result.callId, caller: 'support-bot', reason: 'review done' });
      }
      expect.soft(codeOf(replayed)).not.toBe('accepted');
      expect(await other.orders.api.refundCount()).toBe(0);
    } finally {
      await other.stop();
    }
  });
});

// Its own task queue: the grant it revives stays usable (a used-up grant cannot be revoked).
describe("standing grants' audit events", () => {
  let harness: ToolGateHarness;
  useHarness((started) => (harness = started));
  const { add, grants, accepted, refund, applied, cancelPending, revokeActive } = grantSteps(() => harness);

  afterEach(revokeActive);

  // The defect this once reproduced: a grant whose id is another grant's next use event id (`<grantId>:1`) suppresses that use's audit event, and a new run of the grants workflow forgets the use.
  it("audits every use whatever the grant ids (no id can take another grant's use event id), and a new run of the grants workflow keeps the use", async () => {
    const victim = grantBy(harness, { maxCalls: 1 });
    // carol operates support-bot and may grant it nothing; she signs a grant for another caller.
    const squatter = grantBy(harness, { caller: 'cautious-bot' }, ['carol']);
    const collidingId = `${victim.grant.grantId}:1`;
    const renamed = cosignGrant({
      signed: { grant: { ...squatter.grant, grantId: collidingId }, signatures: [] },
      approver: 'carol',
      approverKey: harness.approverKey('carol'),
    });
    // Refused now: a grant id is a UUID, and use events are keyed `use:<grantId>:<reservation>:<run>`.
    expect(codeOf(await add(renamed))).toBe('GRANT_INVALID');
    await accepted(victim);
    const first = await refund({ amount: 501 });
    expect(first).toMatchObject({ code: 'OK', effect: 'applied' });
    const uses = (await harness.audit.grantEvents({ grantId: victim.grant.grantId })).filter(
      (event) => event.action === 'use-grant',
    );
    expect.soft(uses.map((event) => event.callId)).toEqual([first.callId]);
    // Any new run (terminated here; a continue-as-new after 500 updates does the same) rebuilds from the audit store.
    await grants().terminate('review: a new run of the grants workflow');
    await accepted(grantBy(harness, { caller: 'cautious-bot', maxCalls: 1 }));
    const second = await refund({ amount: 502 });
    await cancelPending([second]);
    // The grant allows one call.
    expect(second.code).toBe('APPROVAL_PENDING');
    expect(await applied()).toBe(1);
  });

  // The defect this once reproduced: a grant refused once through addGrant is refused again with the same answer once it holds (Temporal's cached result for the update id `grant:<id>`): sent before its second approver signed, or burnt by anyone who saw the file with an unsigned attempt.
  it('judges a grant again once it holds after an earlier refusal (sent before its second approver signed, or burnt by an unsigned attempt)', async () => {
    // alice submits a critical grant before dave signs: QUORUM_NOT_MET; dave signs and submits it.
    const early = grantBy(harness, { maxLevel: 'critical', maxCalls: 1 }, ['alice']);
    expect(codeOf(await add(early))).toBe('QUORUM_NOT_MET');
    const cosigned = cosignGrant({
      signed: early,
      approver: 'dave',
      approverKey: harness.approverKey('dave'),
    });
    // Someone who saw the file on its way to dave sends it first with a signature that is none.
    const signed = grantBy(harness, { maxLevel: 'critical', maxCalls: 1 }, ['alice', 'dave']);
    const burnt = await add({
      grant: signed.grant,
      signatures: [{ approver: 'alice', signature: 'not-a-signature' }],
    });
    expect(codeOf(burnt)).toBe('SIGNATURE_INVALID');
    expect([codeOf(await add(cosigned)), codeOf(await add(signed))]).toEqual(['accepted', 'accepted']);
  });
});

// The minter's own policy no longer has bob (the workers' still does): it must not mint on his grant.
const withoutBob: PolicyFileInput = {
  ...testPolicy,
  version: 'test-1-minter-without-bob',
  approvers: Object.fromEntries(
    Object.entries(testPolicy.approvers ?? {}).filter(([name]) => name !== 'bob'),
  ),
};

describe("a standing grant under the minter's own policy", () => {
  let harness: ToolGateHarness;
  useHarness((started) => (harness = started), { minterPolicy: withoutBob });

  it("refuses (in the minter) a grant whose approver the minter's policy no longer has, and gives the use back", async () => {
    const signed = grantBy(harness, { maxCalls: 2 }, ['bob']);
    expect(codeOf(await addGrant({ client: harness.temporal, taskQueue: harness.taskQueue, signed }))).toBe(
      'accepted',
    );
    const result = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: refundArgs('ORD-1003', 700),
    });
    expect(result).toMatchObject({ code: 'PERMISSION_DENIED', effect: 'none' });
    expect(await harness.orders.api.refundCount()).toBe(0);
    const events = await harness.audit.grantEvents({ grantId: signed.grant.grantId });
    expect(events.map((event) => [event.action, event.callId ?? null])).toEqual([
      ['grant', null],
      ['use-grant', result.callId],
      ['release-grant', result.callId],
    ]);
  });
});
