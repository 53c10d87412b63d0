// How often step 8 asks the backend, counted by the orders service per idempotency key: a refusal
// or a success it cannot read is asked once, an outage until the retries run out.
import { beforeEach, describe, expect, it } from 'vitest';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

/** The tests' workflows retry an execution this many times in all (`retry` in test/support/toolgate-harness.ts). */
const maximumAttempts = 3;
const refunder = 'test-refunder';
let session = '';

beforeEach(() => {
  session = harness.newSession();
});

/** The refund every test proposes: its call id is known before it runs, to arm faults under it. */
const refund = () => ({
  session,
  caller: refunder,
  tool: 'refund_order',
  arguments: harness.refundArguments(),
});
const refundCallId = () => harness.client.callIdOf(refund());
const callRefund = () => harness.client.call(refund());
/** Refund requests (attempts) the orders service received under this call's key. */
const attemptsOf = (callId: string) => harness.orders.api.refundRequestCount({ idempotencyKey: callId });

describe('attempts at the backend', () => {
  it('tries a refund that a business rule refuses at execution exactly once', async () => {
    // The check passes (ORD-1001 has 12,000 cents refundable); just before the refund reaches the
    // service, another refund takes the whole balance, so the service's own rule refuses this one.
    const callId = refundCallId();
    await harness.orders.api.setFaults({ idempotencyKey: callId, concurrentRefund: 1 });
    const result = await callRefund();
    expect(result).toMatchObject({ ok: false, code: 'AMOUNT_EXCEEDS_REFUNDABLE', effect: 'none', callId });
    expect(await attemptsOf(callId)).toBe(1);
    expect(await harness.orders.api.findRefundByKey({ idempotencyKey: callId })).toBeNull();
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1001' })).toBe(1); // the other refund
  });

  it.each([0, 1, 2, 3, 5])(
    'tries a refund whose backend answers 503 %i time(s) min(N + 1, 3) times, and looks its key up when the retries run out',
    async (outages) => {
      const callId = refundCallId();
      await harness.orders.api.setFaults({ idempotencyKey: callId, unavailable: outages });
      const requestsBefore = await harness.orders.api.businessRequestCount();
      const result = await callRefund();
      const attempts = Math.min(outages + 1, maximumAttempts);
      expect(await attemptsOf(callId)).toBe(attempts);
      // Besides the attempts: the check's read, then the read-back (OK) or the lookup by key (ran out).
      expect((await harness.orders.api.businessRequestCount()) - requestsBefore).toBe(attempts + 2);
      if (outages < maximumAttempts) {
        expect(result).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
        expect(await harness.orders.api.refundCount()).toBe(1);
      } else {
        expect(result).toMatchObject({ ok: false, code: 'UPSTREAM_UNAVAILABLE', effect: 'none' });
        expect(await harness.orders.api.refundCount()).toBe(0);
      }
    },
  );
});

describe('the output contract (step 9)', () => {
  it('reports a refund whose success came back malformed as OUTPUT_CONTRACT_VIOLATION, applied, tried once', async () => {
    const callId = refundCallId();
    await harness.orders.api.setFaults({ idempotencyKey: callId, malformedResponse: 1 });
    const result = await callRefund();
    expect(result).toMatchObject({ ok: false, code: 'OUTPUT_CONTRACT_VIOLATION', effect: 'applied', callId });
    expect(result.message).toContain('after its effect was applied');
    // Not retried as an outage (a retry would have replayed the refund and answered OK).
    expect(await attemptsOf(callId)).toBe(1);
    expect(await harness.orders.api.refundCount()).toBe(1);
    expect(await harness.orders.api.findRefundByKey({ idempotencyKey: callId })).not.toBeNull();
  });

  it('reports a refund whose read-back disagrees as VERIFICATION_FAILED, applied (never none), tried once', async () => {
    const callId = refundCallId();
    await harness.orders.api.setFaults({ idempotencyKey: callId, wrongReadBack: 1 });
    const result = await callRefund();
    expect(result).toMatchObject({ ok: false, code: 'VERIFICATION_FAILED', effect: 'applied', callId });
    expect(result.message).toContain('does not match what was asked');
    expect(await attemptsOf(callId)).toBe(1);
    // The refund did happen, once: the read-back was wrong, not the effect.
    expect(await harness.orders.api.refundCount()).toBe(1);
    expect(await harness.orders.api.findRefundByKey({ idempotencyKey: callId })).toMatchObject({
      amountCents: 2590,
    });
    expect(await harness.audit.recordsOf(callId)).toEqual([
      expect.objectContaining({ code: 'VERIFICATION_FAILED', effect: 'applied' }),
    ]);
  });

  it('reports a tool answer missing a required field as OUTPUT_CONTRACT_VIOLATION', async () => {
    const result = await harness.call({ caller: refunder, tool: 'missing_field', arguments: '{}' });
    expect(result).toMatchObject({ ok: false, code: 'OUTPUT_CONTRACT_VIOLATION', effect: 'none' });
    expect(result).not.toHaveProperty('data');
  });
});
