// The bare baseline: what a call costs in Temporal with nothing of toolgate around it.
import { proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Order, Refund } from '../examples/orders/orders-api-client';
import type { BareActivities } from './bare-activities';

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
