import { randomUUID } from 'node:crypto';
import { listToolSwitches, setToolSwitch } from 'toolgate/admin';
import { setSwitchUpdate, signValue } from 'toolgate/protocol';
import type { SignedSwitchChange, SwitchChange } from 'toolgate/protocol';
import { describe, expect, it } from 'vitest';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

/** Flips a switch as `operator` (olivia is in the policy), on the harness's task queue. */
const flip = (
  action: 'disable' | 'enable',
  input: { tool?: string; caller?: string; operator?: string; key?: string; reason?: string } = {},
) =>
  setToolSwitch({
    client: harness.temporal,
    taskQueue: harness.taskQueue,
    action,
    tool: input.tool ?? 'refund_order',
    ...(input.caller !== undefined ? { caller: input.caller } : {}),
    operator: input.operator ?? 'olivia',
    operatorKey: harness.operatorKey(input.key ?? input.operator ?? 'olivia'),
    reason: input.reason ?? `${action}: refund incident`,
  });

const readOrder = () =>
  harness.call({ caller: 'support-bot', tool: 'get_order', arguments: '{"order_id":"ORD-1001"}' });

describe('the kill switch', () => {
  it('stops a tool for everyone at once, closes the calls waiting for its approval, and works again once enabled', async () => {
    const before = await appliedRefunds();
    const waiting = await proposeRefund({ amount_cents: 1_001 });
    // Indexed as waiting before the switch flips, so the controls find it (the lag case is below).
    await waitForApprovalState(waiting.callId, 'pending');

    const off = await flip('disable');
    expect(off).toMatchObject({
      accepted: true,
      disabled: [{ tool: 'refund_order', operator: 'olivia', reason: 'disable: refund incident' }],
      waitingCallsTold: 1,
    });
    const closed = await harness.client.result(waiting.callId);
    expect(closed).toMatchObject({
      ok: false,
      code: 'TOOL_DISABLED',
      effect: 'none',
      data: { tool: 'refund_order', disabledBy: 'olivia', reason: 'disable: refund incident' },
    });
    expect(closed?.message).toContain('Do not retry it');
    // Approving it now is refused: the call has closed.
    expect(await decide(waiting.callId, 'alice')).toMatchObject({ accepted: false });

    const refused = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 1_002 }),
    });
    expect(refused).toMatchObject({ ok: false, code: 'TOOL_DISABLED', effect: 'none' });
    // Other tools run on.
    expect(await readOrder()).toMatchObject({ ok: true, code: 'OK' });
    expect(
      (await listToolSwitches({ client: harness.temporal, taskQueue: harness.taskQueue })).disabled,
    ).toHaveLength(1);
    expect(await appliedRefunds()).toBe(before);

    expect(await flip('enable', { reason: 'incident over' })).toMatchObject({ accepted: true, disabled: [] });
    const again = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 1_003 }),
    });
    expect(again).toMatchObject({ ok: true, effect: 'applied' });
    expect(await appliedRefunds()).toBe(before + 1);

    // Every flip is in the audit store: who, why, and the outcome.
    const events = await harness.audit.controlEvents({ tool: 'refund_order' });
    expect(events.map((event) => [event.action, event.operator, event.reason, event.outcome])).toEqual([
      ['disable', 'olivia', 'disable: refund incident', 'accepted'],
      ['enable', 'olivia', 'incident over', 'accepted'],
    ]);
  });

  it('stops one caller only when a caller is named', async () => {
    expect(await flip('disable', { caller: 'hasty-bot', reason: 'hasty-bot loops' })).toMatchObject({
      accepted: true,
    });
    try {
      const hasty = await harness.call({
        caller: 'hasty-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 1_010 }),
      });
      expect(hasty).toMatchObject({
        code: 'TOOL_DISABLED',
        data: { caller: 'hasty-bot', reason: 'hasty-bot loops' },
      });
      const other = await proposeRefund({ amount_cents: 1_011 });
      expect(other.code).toBe('APPROVAL_PENDING');
      await harness.client.cancel({ callId: other.callId, caller: 'support-bot', reason: 'test done' });
    } finally {
      await flip('enable', { caller: 'hasty-bot', reason: 'fixed' });
    }
  });

  it('never runs a call that started as the switch flipped, whichever way it is caught', async () => {
    const before = await appliedRefunds();
    const racing = await proposeRefund({ amount_cents: 1_020 });
    // No wait for visibility: the controls may not find it; it is then caught before execution.
    await flip('disable');
    try {
      await decide(racing.callId, 'alice');
      expect(await harness.client.result(racing.callId)).toMatchObject({
        code: 'TOOL_DISABLED',
        effect: 'none',
      });
      expect(await appliedRefunds()).toBe(before);
    } finally {
      await flip('enable');
    }
  });

  it('refuses a change not signed by an operator of the policy, for an unknown tool or caller, stale or replayed', async () => {
    const outcomes = await Promise.all([
      flip('disable', { operator: 'mallory' }),
      flip('disable', { operator: 'olivia', key: 'mallory' }),
      flip('disable', { tool: 'refund_everything' }),
      flip('disable', { caller: 'nobody' }),
    ]);
    expect(outcomes.map((outcome) => (outcome.accepted ? 'accepted' : outcome.code))).toEqual([
      'OPERATOR_UNKNOWN',
      'SIGNATURE_INVALID',
      'UNKNOWN_TOOL',
      'CALLER_UNKNOWN',
    ]);
    const handle = harness.temporal.workflow.getHandle(`toolgate-controls:${harness.taskQueue}`);
    const signed = (change: Partial<SwitchChange>): SignedSwitchChange => {
      const full: SwitchChange = {
        changeId: randomUUID(),
        action: 'disable',
        tool: 'refund_order',
        operator: 'olivia',
        reason: 'raw',
        issuedAt: new Date().toISOString(),
        ...change,
      };
      return {
        change: full,
        signature: signValue({ kind: 'tool-switch', value: full, privateKey: harness.operatorKey('olivia') }),
      };
    };
    await expect(
      handle.executeUpdate(setSwitchUpdate, {
        args: [signed({ issuedAt: new Date(Date.now() - 3_600_000).toISOString() })],
      }),
    ).rejects.toMatchObject({ cause: { type: 'SWITCH_INVALID' } });
    await expect(handle.executeUpdate(setSwitchUpdate, { args: [null as never] })).rejects.toMatchObject({
      cause: { type: 'SWITCH_INVALID' },
    });
    const enable = signed({ action: 'enable' });
    expect(await handle.executeUpdate(setSwitchUpdate, { args: [enable] })).toMatchObject({ accepted: true });
    await expect(handle.executeUpdate(setSwitchUpdate, { args: [enable] })).rejects.toMatchObject({
      cause: { type: 'CHANGE_REPLAYED' },
    });
    // Nothing was turned off by any of them, and the refusals the workers checked are audited.
    expect(
      (await listToolSwitches({ client: harness.temporal, taskQueue: harness.taskQueue })).disabled,
    ).toEqual([]);
    const outcomesAudited = (await harness.audit.controlEvents()).map((event) => event.outcome);
    expect(outcomesAudited).toEqual(
      expect.arrayContaining(['OPERATOR_UNKNOWN', 'SIGNATURE_INVALID', 'UNKNOWN_TOOL', 'CALLER_UNKNOWN']),
    );
    expect(await readOrder()).toMatchObject({ ok: true });
  });
});

async function waitForApprovalState(callId: string, state: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const listed = harness.temporal.workflow.list({
      query: `WorkflowId = '${callId}' AND ApprovalState = '${state}'`,
    });
    for await (const _ of listed) return;
    if (Date.now() > deadline) throw new Error(`${callId} never listed as ${state}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
