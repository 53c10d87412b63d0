import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineToolContract } from 'toolgate';
import type { ImplementedTool } from 'toolgate';
import type { ApprovalView } from 'toolgate/protocol';
import { refundOrderContract } from '../../examples/orders/orders-contracts';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

/** The refund contract as deployed before each test, with `changes` made by a deploy. */
function refundContract(
  changes: {
    description?: string;
    amountCents?: z.ZodInt;
    output?: typeof refundOrderContract.output;
    risk?: typeof refundOrderContract.risk;
    /** Drops the contract's examples (a tightened schema refuses some of them). */
    withoutExamples?: boolean;
  } = {},
) {
  return defineToolContract({
    name: refundOrderContract.name,
    description: changes.description ?? refundOrderContract.description,
    input: z.strictObject({
      ...refundOrderContract.input.shape,
      ...(changes.amountCents ? { amount_cents: changes.amountCents } : {}),
    }),
    output: changes.output ?? refundOrderContract.output,
    effect: 'write',
    risk: changes.risk ?? refundOrderContract.risk,
    domainCodes: refundOrderContract.domainCodes,
    ...(refundOrderContract.boundParameters ? { boundParameters: refundOrderContract.boundParameters } : {}),
    idempotencyFields: ['order_id', 'amount_cents', 'currency'],
    summarize: refundOrderContract.summarize,
    resource: refundOrderContract.resource,
    // The same amount function: a deploy that dropped it would change the digest (and the limits).
    ...(refundOrderContract.amount ? { amount: refundOrderContract.amount } : {}),
    ...(refundOrderContract.examples && !changes.withoutExamples
      ? { examples: refundOrderContract.examples }
      : {}),
  });
}

let deployed = false;

/** Stops the worker and starts it again with `contract` in place of the refund's (a deploy). */
async function deploy(contract: ImplementedTool['contract']): Promise<void> {
  deployed = true;
  await harness.restartWorker(undefined, {
    tools: (current) =>
      current.map((tool) => (tool.contract.name === contract.name ? { ...tool, contract } : tool)),
  });
}

// Each test starts from the contract every other test file runs with.
afterEach(async () => {
  if (!deployed) return;
  deployed = false;
  await deploy(refundOrderContract);
  deployed = false;
});

/** The call's approval round once it is `round` and open. */
async function openRound(callId: string, round: number): Promise<ApprovalView> {
  await expect
    .poll(async () => (await harness.admin.show(callId))?.approval, { timeout: 20_000 })
    .toMatchObject({ round, state: 'pending' });
  return (await harness.admin.show(callId))!.approval!;
}

/** No workflow task of the call failed: it replayed on the new worker without nondeterminism. */
async function failedTasks(callId: string): Promise<unknown[]> {
  const history = await harness.temporal.workflow.getHandle(callId).fetchHistory();
  return (history.events ?? []).filter((event) => event.workflowTaskFailedEventAttributes);
}

const contractChanged = 'the contract of refund_order changed in a deploy while the call waited';

describe('a contract deploy while a call waits for approval', () => {
  it('refuses the decision for the old contract and ends the call as the new schema says: nothing applied', async () => {
    const pending = await proposeRefund();
    const before = (await harness.admin.show(pending.callId))!.approval!;
    expect(before.contractDigest).toMatch(/^[0-9a-f]{64}$/);

    // The schema now refuses more than 1,000 cents; the waiting call asks 2,590.
    await deploy(
      refundContract({
        amountCents: z.int().positive().max(1_000).describe('Refund amount in cents, at most 1,000.'),
        withoutExamples: true,
      }),
    );
    const refused = await decide(pending.callId, 'alice');
    expect(refused).toMatchObject({ accepted: false, code: 'CONTRACT_CHANGED' });
    expect(refused.accepted === false && refused.message).toContain(contractChanged);

    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: false, code: 'INVALID_ARGUMENTS', effect: 'none' });
    expect(await appliedRefunds()).toBe(0);
    // The call keeps the reason its round closed, for a person to read.
    const state = await harness.admin.show(pending.callId);
    expect(state?.approval).toMatchObject({
      round: 1,
      state: 'superseded',
      supersededBecause: contractChanged,
      contractDigest: before.contractDigest,
    });
    expect(state?.decisions).toEqual([]);
    expect(await failedTasks(pending.callId)).toEqual([]);
    expect(
      (await harness.audit.decisionAttemptsOf(pending.callId)).map(
        (attempt) => `${attempt.source} ${attempt.outcome}`,
      ),
    ).toEqual(expect.arrayContaining(['workflow CONTRACT_CHANGED', 'admin CONTRACT_CHANGED']));
  });

  it.each([
    [
      'its risk function',
      () =>
        refundContract({
          // Critical from 5,000 cents (it was above 10,000): the contract's 10,000-cent example shows it.
          risk: ({ args }) => (args.amount_cents > 5_000 ? 'critical' : 'irreversible'),
        }),
    ],
    [
      'its output schema',
      () =>
        refundContract({
          output: z.strictObject({
            ...refundOrderContract.output.shape,
            note: z.string().optional(),
          }),
        }),
    ],
  ])(
    'asks again in a new round bound to the new contract when a deploy changes %s; one refund runs',
    async (_change, contract) => {
      const pending = await proposeRefund();
      const before = (await harness.admin.show(pending.callId))!.approval!;

      await deploy(contract());
      expect(await decide(pending.callId, 'alice')).toMatchObject({
        accepted: false,
        code: 'CONTRACT_CHANGED',
      });
      const round = await openRound(pending.callId, 2);
      expect(round.contractDigest).toMatch(/^[0-9a-f]{64}$/);
      expect(round.contractDigest).not.toBe(before.contractDigest);
      expect(round.nonce).not.toBe(before.nonce);
      expect(round.supersedes).toEqual({ round: 1, reason: contractChanged });
      // The agent asking again is told the call waits, for the new round.
      const again = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments(),
      });
      expect(again).toMatchObject({ code: 'APPROVAL_PENDING', data: { round: 2 } });

      expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
      const final = await harness.client.result(pending.callId, { wait: true });
      expect(final).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
      expect(await appliedRefunds()).toBe(1);
      expect(await failedTasks(pending.callId)).toEqual([]);
      const [record] = await harness.audit.recordsOf(pending.callId);
      expect(record?.decisions).toMatchObject([{ approver: 'alice', round: 2, outcome: 'accepted' }]);
    },
  );

  it('keeps the round open through a deploy that changes descriptions only: the decision counts', async () => {
    const pending = await proposeRefund();
    const before = (await harness.admin.show(pending.callId))!.approval!;

    await deploy(
      refundContract({
        description: 'Refund part or all of an order, in the order currency. Call get_order first.',
        amountCents: z.int().positive().describe('How much to refund, in cents (25.90 is 2590).'),
      }),
    );
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({
      round: 1,
      state: 'approved',
      contractDigest: before.contractDigest,
    });
  });

  it('goes on without approval when the new contract lets the caller act alone, as a new call would', async () => {
    const pending = await proposeRefund();

    // Every refund is "reversible" now, within support-bot's autonomy: no approval is needed.
    await deploy(refundContract({ risk: () => 'reversible' }));
    expect(await decide(pending.callId, 'alice')).toMatchObject({
      accepted: false,
      code: 'CONTRACT_CHANGED',
    });
    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
    const [record] = await harness.audit.recordsOf(pending.callId);
    expect(record).toMatchObject({ riskLevel: 'reversible' });
    expect(record?.decisions).toBeUndefined();
    // The state says why the round closed, and that no rule asks for approval any more.
    const state = await harness.admin.show(pending.callId);
    expect(state?.approval).toMatchObject({ state: 'superseded', supersededBecause: contractChanged });
    expect(state?.approvalRule).toBeUndefined();
  });
});
