// The bare baseline: what a call costs in Temporal with nothing of toolgate around it.
import {
  allHandlersFinished,
  condition,
  defineSignal,
  defineUpdate,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Order, Refund } from '../examples/orders/orders-api-client';
import type { BareActivities } from './bare-activities';
import { shapedAttributes, shapedNames } from './shaped-names';

const activityOptions = { startToCloseTimeout: '10s', retry: { maximumAttempts: 3 } } as const;
const activities = proxyActivities<BareActivities>(activityOptions);
const localActivities = proxyLocalActivities<BareActivities>(activityOptions);

/** One normal activity that reads the order. */
export async function bareRead(input: { orderId: string }): Promise<Order> {
  return activities.readOrder(input);
}

/** The same read as a local activity (no activity task round trip). */
export async function bareLocalRead(input: { orderId: string }): Promise<Order> {
  return localActivities.readOrder(input);
}

/** One refund in one normal activity, the workflow id as its idempotency key. */
export async function bareRefund(input: { orderId: string; amountCents: number }): Promise<Refund> {
  return activities.refundOrder({ ...input, idempotencyKey: workflowInfo().workflowId });
}

/**
 * The bare baseline shaped like a governed read: the same Temporal operations per call with none of
 * toolgate's logic. A long-lived session workflow admits each call in an update that runs one local
 * activity (toolgate's signature check) and counts outcomes a signal reports; each call is its own
 * workflow, started by update-with-start with the same start options, that runs three local activities
 * (evaluation, the read, the audit record and report), upserts one search attribute and answers the
 * update as it closes. What a governed read costs beyond this is toolgate's own work; what this costs
 * beyond `bareRead` is the shape its guarantees take.
 */
export async function shapedSession(): Promise<number> {
  let steps = 0;
  let outcomes = 0;
  let ended = false;
  let policyLoaded = false;
  setHandler(defineUpdate<{ admitted: boolean; step: number }, [unknown]>(shapedNames.admit), async () => {
    // Like toolgate's session: the caller's policy once per run, then the admission's own step.
    if (!policyLoaded) {
      await localActivities.stamp({ what: 'policy' });
      policyLoaded = true;
    }
    await localActivities.stamp({ what: 'admission' });
    steps++;
    return { admitted: true, step: steps };
  });
  setHandler(defineSignal<[{ ok: boolean }]>(shapedNames.outcome), () => {
    outcomes++;
  });
  setHandler(defineUpdate<number>(shapedNames.end), () => {
    ended = true;
    return steps;
  });
  // Ended by its caller, or idle for 30 minutes: one timer for the window, as toolgate's session arms.
  await condition(() => ended, '30 minutes');
  await condition(allHandlersFinished);
  return outcomes;
}

/** One call of {@link shapedSession}: evaluation, read, report (local activities), then the answer. */
export async function shapedCall(input: {
  orderId: string;
  sessionWorkflowId?: string;
  [carried: string]: unknown;
}): Promise<Order> {
  const answered: { order?: Order } = {};
  setHandler(defineUpdate<Order, [unknown]>(shapedNames.propose), async () => {
    await condition(() => answered.order !== undefined);
    return answered.order as Order;
  });
  await localActivities.stamp({ what: 'evaluation' });
  const order = await localActivities.readOrder({ orderId: input.orderId });
  // Without a session to report to (a what-if of the bench), the last step records and signals nothing.
  if (input.sessionWorkflowId === undefined) await localActivities.stamp({ what: 'record' });
  else await localActivities.reportOutcome({ sessionWorkflowId: input.sessionWorkflowId, ok: true });
  upsertSearchAttributes([
    { key: shapedAttributes.riskLevel, value: 0 },
    { key: shapedAttributes.toolCode, value: 'OK' },
  ]);
  answered.order = order;
  await condition(allHandlersFinished);
  return order;
}
