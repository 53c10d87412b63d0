import { randomUUID } from 'node:crypto';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import { refundOrderContract } from '../../examples/orders/orders-contracts';
import type { CredentialClaims } from 'toolgate/backend';
import { digestOf, maxCredentialSeconds } from 'toolgate/backend';

/** A refund as the orders client sends it. */
export type RefundRequest = Parameters<OrdersApiClient['refund']>[0];

/**
 * The claims the minter would sign for this refund (arguments as the contract validates them),
 * valid for the longest time a credential may live. `overrides` replace any claim, even with a value
 * no minter would sign, for the tests that forge one.
 */
export function claimsFor(request: RefundRequest, overrides: Record<string, unknown> = {}): CredentialClaims {
  const args = refundOrderContract.input.parse({
    order_id: request.orderId,
    amount_cents: request.amountCents,
    currency: request.currency,
    reason: request.reason,
  });
  const issuedAt = Math.floor(Date.now() / 1000);
  return {
    op: 'refund_order',
    resource: `order:${request.orderId}`,
    callId: request.idempotencyKey,
    argsDigest: digestOf(args),
    jti: randomUUID(),
    iat: issuedAt,
    exp: issuedAt + maxCredentialSeconds,
    ...overrides,
  };
}
