import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyObject } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import type { Cancellation, SignedCancellation } from 'toolgate/protocol';
import { buildAuditReport } from 'toolgate/admin';
import { signValue } from 'toolgate/protocol';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { startWebhookReceiver } from '../support/webhook-receiver';

// Attacks on cancelling a call that waits for approval, from a review: each test failed while the
// defect it names was there, and guards its fix.

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let harness: ToolGateHarness;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.stop();
});

useHarness((started) => (harness = started), {
  get notifications() {
    return { channels: { approvers: { url: receiver.url('/approvers') } }, waiting: ['approvers'] };
  },
});

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

/** A cancellation of the call's current run, signed with `privateKey`, as a raw Temporal client sends it. */
async function signedCancellation(input: {
  callId: string;
  by: unknown;
  privateKey: KeyObject;
  reason?: string;
}): Promise<SignedCancellation> {
  const { runId } = await harness.temporal.workflow.getHandle(input.callId).describe();
  const cancellation = {
    callId: input.callId,
    runId,
    by: input.by,
    reason: input.reason ?? 'stop it',
    issuedAt: new Date().toISOString(),
  } as Cancellation;
  return {
    cancellation,
    signature: signValue({ kind: 'cancellation', value: cancellation, privateKey: input.privateKey }),
  };
}

/** Sends a cancellation raw; answers `accepted` or the refusal's type, or `timeout` after `ms`. */
async function sendRaw(callId: string, request: unknown, ms = 10_000): Promise<string> {
  const update = harness.temporal.workflow
    .getHandle(callId)
    .executeUpdate('cancel', { args: [request], updateId: randomUUID() })
    .then(
      () => 'accepted',
      (error: Error & { cause?: { type?: string } }) =>
        error.cause?.type ?? `not a refusal: ${error.message}`,
    );
  const timeout = new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), ms));
  return Promise.race([update, timeout]);
}

/** The types of the call's history events (e.g. to find a failed workflow task). */
async function historyEventTypes(callId: string): Promise<unknown[]> {
  const history = await harness.temporal.workflow.getHandle(callId).fetchHistory();
  return (history.events ?? []).map((event) => event.eventType);
}

const workflowTaskFailed = temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;

/** Closes a call the test left waiting, as its caller, so it does not linger. */
async function cleanUp(callId: string): Promise<void> {
  await harness.client
    .cancel({ callId, caller: 'support-bot', reason: 'test clean-up' })
    .catch(() => undefined);
}

describe('cancelling a call that waits for approval, attacked', () => {
  // The defect this once reproduced: an operator can sign a cancellation that the call records as its caller’s.
  it("records a cancellation under the principal whose key signed it, never an operator's as its caller's", async () => {
    const pending = await proposeRefund({ amount_cents: 1_111 });
    // Olivia signs; `by` also names the caller, as an array so that it is not the caller's string.
    const forged = await signedCancellation({
      callId: pending.callId,
      by: { caller: ['support-bot'], operator: 'olivia' },
      privateKey: harness.operatorKey('olivia'),
      reason: 'the customer withdrew the request',
    });
    const answer = await sendRaw(pending.callId, forged);
    if (answer === 'accepted') {
      const result = (await harness.client.result(pending.callId, { wait: true })) as ToolResult;
      // Whoever signed must be who the result, the audit record and the message to the model name.
      expect(result.data?.cancelledBy).toBe('operator olivia');
    } else {
      expect(answer).toBe('SIGNATURE_INVALID');
      await cleanUp(pending.callId);
    }
  });

  // The defect this once reproduced: a cancellation signed by an operator with an unprintable `by.caller` fails the workflow task.
  it('refuses a cancellation with an unprintable `by.caller` without failing the workflow task', async () => {
    const pending = await proposeRefund({ amount_cents: 1_222 });
    const poisoned = await signedCancellation({
      callId: pending.callId,
      // JSON gives an own `toString` that is not a function: `${by.caller}` throws a TypeError.
      by: { operator: 'olivia', caller: { toString: 'x', valueOf: 'y' } },
      privateKey: harness.operatorKey('olivia'),
    });
    const handle = harness.temporal.workflow.getHandle(pending.callId);
    try {
      const answer = await sendRaw(pending.callId, poisoned, 8_000);
      // A refusal, or an accepted cancellation: anything but a workflow task that fails and holds the
      // call (its caller's own cancellation hangs behind it meanwhile).
      expect(await historyEventTypes(pending.callId)).not.toContain(workflowTaskFailed);
      expect(answer).not.toBe('timeout');
    } finally {
      await handle.terminate('test clean-up').catch(() => undefined);
    }
  }, 60_000);

  // The defect this once reproduced: the approvers channel is never told a call was cancelled (its follow-up is dropped).
  it('tells the approvers channel that a call was cancelled', async () => {
    const pending = await proposeRefund({ amount_cents: 1_333 });
    await expect
      .poll(() => receiver.of(pending.callId).map((received) => received.json.event), { timeout: 15_000 })
      .toContain('approval-requested');
    const cancelled = await harness.client.cancel({
      callId: pending.callId,
      caller: 'support-bot',
      reason: 'the customer withdrew the request',
    });
    expect(cancelled).toMatchObject({ cancelled: true });
    // The notifier delivers the follow-up beside the call; it is told the round ended `cancelled`.
    await expect
      .poll(
        () => receiver.of(pending.callId).map((received) => received.json.outcome ?? received.json.event),
        { timeout: 15_000 },
      )
      .toContain('cancelled');
  }, 60_000);

  // The defect this once reproduced: `toolgate report` and the metrics count a call cancelled after one of two approvals as approved.
  it('does not count a call cancelled after one of two approvals as approved in `toolgate report` and the metrics', async () => {
    // 20,000 cents on ORD-1003 is critical: a quorum of 2.
    const pending = await proposeRefund({ order_id: 'ORD-1003', amount_cents: 20_000 });
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    const cancelled = await harness.client.cancel({
      callId: pending.callId,
      caller: 'support-bot',
      reason: 'the customer withdrew the request',
    });
    expect(cancelled.result).toMatchObject({ code: 'APPROVAL_CANCELLED' });
    expect(await appliedRefunds()).toBe(0);
    const records = await harness.audit.recordsOf(pending.callId);
    expect(records).toHaveLength(1);
    const report = buildAuditReport({
      records,
      sessionRecords: new Map(),
      since: '2000-01-01T00:00:00.000Z',
      until: '2100-01-01T00:00:00.000Z',
    });
    expect(report.approvals.approved.count).toBe(0);
  });

  // The defect this once reproduced: no recorded history of a cancelled call is replayed in CI (the new update and its path are unguarded).
  it('replays a recorded history of a cancelled call in CI', () => {
    const histories = readdirSync(join(__dirname, '..', 'histories'));
    expect(histories.some((file) => /cancel/.test(file))).toBe(true);
  });

  // The defect this once reproduced: a forged cancellation sent with a raw Temporal client leaves no trace in the audit store.
  it('audits a forged cancellation sent with a raw Temporal client', async () => {
    const pending = await proposeRefund({ amount_cents: 1_444 });
    const forged = await signedCancellation({
      callId: pending.callId,
      by: { operator: 'olivia' },
      privateKey: harness.operatorKey('mallory'),
    });
    expect(await sendRaw(pending.callId, forged)).toBe('SIGNATURE_INVALID');
    // Decisions refused by the validator are audited through the worker's sink; a cancellation is
    // a decision on the same approval, so its refusals must be audited too (here: beside decisions).
    await expect
      .poll(async () => (await harness.audit.decisionAttemptsOf(pending.callId)).length, { timeout: 5_000 })
      .toBeGreaterThan(0);
    await cleanUp(pending.callId);
  });

  it('refuses a reason over 500 characters as too long, from the client and sent raw, and the call still waits', async () => {
    const pending = await proposeRefund({ amount_cents: 1_112 });
    const long = 'x'.repeat(100 * 1024);
    const outcome = await harness.client.cancel({
      callId: pending.callId,
      caller: 'support-bot',
      reason: long,
    });
    expect(outcome).toMatchObject({ cancelled: false, code: 'CANCELLATION_INVALID' });
    expect(outcome.cancelled ? '' : outcome.message).toContain('at most 500');
    const raw = await signedCancellation({
      callId: pending.callId,
      by: { caller: 'support-bot' },
      privateKey: harness.operatorKey('olivia'),
      reason: long,
    });
    expect(await sendRaw(pending.callId, raw)).toBe('CANCELLATION_INVALID');
    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({ state: 'pending' });
    expect(await appliedRefunds()).toBe(0);
    await cleanUp(pending.callId);
  });
});
