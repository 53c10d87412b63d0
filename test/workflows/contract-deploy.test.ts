import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineToolContract } from 'toolgate';
import type { ImplementedTool } from 'toolgate';
import { refundOrderContract } from '../../examples/orders/orders-contracts';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

/**
 * The refund contract after a deploy: the schema now refuses more than 1,000 cents (the waiting call
 * asks 2,590) and the risk function calls every refund "reversible" (it was "irreversible").
 */
const tightenedRefund = defineToolContract({
  name: refundOrderContract.name,
  description: refundOrderContract.description,
  input: z.strictObject({
    ...refundOrderContract.input.shape,
    amount_cents: z.int().positive().max(1_000).describe('Refund amount in cents, at most 1,000.'),
  }),
  output: refundOrderContract.output,
  effect: 'write',
  risk: () => 'reversible',
  domainCodes: refundOrderContract.domainCodes,
  idempotencyFields: ['order_id', 'amount_cents', 'currency'],
  summarize: (args) => `refund ${args.amount_cents} ${args.currency} on ${args.order_id}`,
  resource: (args) => `order:${args.order_id}`,
});

function deploy(current: readonly ImplementedTool[]): ImplementedTool[] {
  return current.map((tool) =>
    tool.contract.name === tightenedRefund.name ? { ...tool, contract: tightenedRefund } : tool,
  );
}

describe('a contract deploy while a call waits for approval', () => {
  it('neither breaks nor re-judges the waiting call: it completes on its recorded evaluation', async () => {
    const pending = await proposeRefund();
    expect(pending.data).toMatchObject({ riskLevel: 'irreversible', quorum: 1 });

    // The worker stops and comes back with the tightened schema and the changed risk function.
    await harness.restartWorker(undefined, { tools: deploy });
    // The new contract is live: the same refund proposed now is refused by the new schema.
    const fresh = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 2_500 }),
    });
    expect(fresh).toMatchObject({ code: 'INVALID_ARGUMENTS', effect: 'none' });

    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
    // The run replayed on the new worker without a single failed workflow task (no nondeterminism).
    const history = await harness.temporal.workflow.getHandle(pending.callId).fetchHistory();
    const failedTasks = (history.events ?? []).filter((event) => event.workflowTaskFailedEventAttributes);
    expect(failedTasks).toEqual([]);
    // What it ran is what was recorded before the deploy: the risk level approvers saw.
    const [record] = harness.audit.recordsOf(pending.callId);
    expect(record).toMatchObject({ riskLevel: 'irreversible', validatedArguments: { amount_cents: 2590 } });
  });
});
