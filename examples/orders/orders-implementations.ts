import type { ImplementedTool } from 'toolgate';
import { defineToolImplementation, toolRejection, transientToolError } from 'toolgate';
import type { Order, OrdersApiClient, Refund } from './orders-api-client';
import {
  createOrdersApiClient,
  isOrdersContractViolation,
  isOrdersRejection,
  isOrdersUnavailable,
} from './orders-api-client';
import { getOrderContract, refundOrderContract } from './orders-contracts';

/** Turns the orders client's errors into toolgate's: refusals keep their code, outages are transient. */
function translateError(error: unknown): Error {
  if (isOrdersRejection(error)) return toolRejection({ code: error.code, message: error.message });
  if (isOrdersUnavailable(error)) return transientToolError({ message: error.message, cause: error });
  return error instanceof Error ? error : new Error(String(error));
}

async function calling<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw translateError(error);
  }
}

/**
 * An executor's request: a success whose body breaks the service's contract took effect, so it is
 * neither retried nor reported as not applied; the body goes up as it came, and toolgate's output
 * contract (step 9) refuses it with OUTPUT_CONTRACT_VIOLATION.
 */
async function executing<T, Output>(
  request: () => Promise<T>,
  output: (answer: T) => Output,
): Promise<Output> {
  let answer: T;
  try {
    answer = await request();
  } catch (error) {
    if (isOrdersContractViolation(error)) return error.body as Output;
    throw translateError(error);
  }
  return output(answer);
}

function orderOutput(order: Order) {
  return {
    order_id: order.orderId,
    customer_id: order.customerId,
    total_cents: order.totalCents,
    refunded_cents: order.refundedCents,
    refundable_cents: order.refundableCents,
    currency: order.currency,
    note: order.note,
  };
}

function refundOutput(refund: Refund) {
  return {
    refund_id: refund.refundId,
    order_id: refund.orderId,
    amount_cents: refund.amountCents,
    currency: refund.currency,
    remaining_refundable_cents: refund.remainingRefundableCents,
  };
}

/**
 * The orders tools' implementations, talking to the orders service over HTTP. Refunds carry the
 * call id as idempotency key on every attempt; a lost response is resolved by asking for the key.
 */
export function createOrdersTools(input: { ordersUrl: string; api?: OrdersApiClient }): ImplementedTool[] {
  const api = input.api ?? createOrdersApiClient({ baseUrl: input.ordersUrl });
  const getOrder = defineToolImplementation(getOrderContract, {
    execute: async ({ args }) => executing(() => api.getOrder({ orderId: args.order_id }), orderOutput),
  });
  const refundOrder = defineToolImplementation(refundOrderContract, {
    check: async ({ args }) => {
      const order = await calling(() => api.getOrder({ orderId: args.order_id }));
      if (args.currency !== order.currency) {
        throw toolRejection({
          code: 'CURRENCY_MISMATCH',
          message: `Order ${order.orderId} is in ${order.currency}, not ${args.currency}. Use the order currency.`,
          data: { orderCurrency: order.currency },
        });
      }
      if (args.amount_cents > order.refundableCents) {
        throw toolRejection({
          code: 'AMOUNT_EXCEEDS_REFUNDABLE',
          message:
            `Only ${order.refundableCents} cents can still be refunded on ${order.orderId}. ` +
            'Ask the user whether to refund that amount instead.',
          data: { refundableCents: order.refundableCents },
        });
      }
    },
    // The approver reads the exact effect on the order as it is now; if the order changes while the
    // call waits, this preview changes and the approval starts a new round.
    preview: async ({ args }) => {
      const order = await calling(() => api.getOrder({ orderId: args.order_id }));
      return {
        action: `refund ${args.amount_cents} ${args.currency} cents on ${order.orderId} (customer ${order.customerId})`,
        order_id: order.orderId,
        customer_id: order.customerId,
        amount_cents: args.amount_cents,
        currency: args.currency,
        reason: args.reason,
        // The order's size next to the amount, so an approver sees at once a refund of the whole order.
        order_total_cents: order.totalCents,
        refunded_before_cents: order.refundedCents,
        refundable_before_cents: order.refundableCents,
        refundable_after_cents: order.refundableCents - args.amount_cents,
      };
    },
    execute: async ({ args, idempotencyKey, credential }) =>
      executing(
        () =>
          api.refund({
            orderId: args.order_id,
            amountCents: args.amount_cents,
            currency: args.currency,
            reason: args.reason,
            idempotencyKey,
            ...(credential !== undefined ? { credential } : {}),
          }),
        (outcome) => refundOutput(outcome.refund),
      ),
    // The service records business refusals under the key too, so a refusal whose answer was lost
    // keeps its domain code instead of passing for an outage.
    findApplied: async ({ idempotencyKey }) => {
      const found = await calling(() => api.lookupRefundKey({ idempotencyKey }));
      switch (found.status) {
        case 'applied':
          return { status: 'applied', output: refundOutput(found.refund) };
        case 'refused':
          return { status: 'refused', code: found.code, message: found.message };
        case 'not-seen':
          return { status: 'not-seen' };
      }
    },
    verify: async ({ args, output, callId }) => {
      const refund = await calling(() => api.findRefundByKey({ idempotencyKey: callId }));
      if (!refund) throw new Error(`no refund is recorded under key ${callId}`);
      if (refund.refundId !== output.refund_id || refund.amountCents !== args.amount_cents) {
        throw new Error(`the recorded refund ${refund.refundId} does not match what was asked`);
      }
    },
  });
  return [getOrder, refundOrder];
}
