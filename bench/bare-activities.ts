import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { shapedNames } from './shaped-names';
import { createOrdersApiClient } from '../examples/orders/orders-api-client';
import type { Order, Refund } from '../examples/orders/orders-api-client';
import { readPrivateKey } from 'toolgate';
import { digestOf, maxCredentialSeconds, signCredential } from 'toolgate/backend';

/** The bare baseline's activities: one read of the orders service, or one refund, nothing else. */
export interface BareActivities {
  readOrder(input: { orderId: string }): Promise<Order>;
  /** One refund under the given idempotency key, with a credential signed on the spot (the service asks for one). */
  refundOrder(input: { orderId: string; amountCents: number; idempotencyKey: string }): Promise<Refund>;
  /** A step that does nothing but answer: the shaped baseline's admission and evaluation. */
  stamp(input: { what: string }): Promise<{ what: string; at: number }>;
  /** Signals a shaped session the call's outcome, as toolgate's last step reports to its session. */
  reportOutcome(input: { sessionWorkflowId: string; ok: boolean }): Promise<void>;
}

/**
 * The same HTTP client the orders tools use, with no validation, policy or audit around it. A refund
 * carries a credential signed with the minter's key, as a hand-written refund against this service
 * would have to: one signature, none of toolgate's checks.
 */
export function createBareActivities(input: {
  ordersUrl: string;
  minterPrivateKeyPath?: string;
}): BareActivities {
  const api = createOrdersApiClient({ baseUrl: input.ordersUrl });
  const minterKey = input.minterPrivateKeyPath ? readPrivateKey(input.minterPrivateKeyPath) : undefined;
  return {
    readOrder: ({ orderId }) => api.getOrder({ orderId }),
    stamp: async ({ what }) => ({ what, at: Date.now() }),
    reportOutcome: async ({ sessionWorkflowId, ok }) => {
      await Context.current()
        .client.workflow.getHandle(sessionWorkflowId)
        .signal(shapedNames.outcome, { ok });
    },
    refundOrder: async ({ orderId, amountCents, idempotencyKey }) => {
      const args = {
        order_id: orderId,
        amount_cents: amountCents,
        currency: 'BRL' as const,
        reason: 'damaged' as const,
      };
      const issuedAt = Math.floor(Date.now() / 1000);
      const credential = minterKey
        ? signCredential({
            claims: {
              op: 'refund_order',
              resource: `order:${orderId}`,
              callId: idempotencyKey,
              argsDigest: digestOf(args),
              jti: randomUUID(),
              iat: issuedAt,
              exp: issuedAt + maxCredentialSeconds,
            },
            privateKey: minterKey,
          })
        : undefined;
      const outcome = await api.refund({
        orderId,
        amountCents,
        currency: args.currency,
        reason: args.reason,
        idempotencyKey,
        ...(credential !== undefined ? { credential } : {}),
      });
      return outcome.refund;
    },
  };
}
