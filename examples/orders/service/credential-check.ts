import { digestOf, maxCredentialSeconds, verifyCredential } from 'toolgate/backend';
import type { CredentialRefusal } from 'toolgate/backend';
import type { OrdersDatabase } from './orders-database';
import type { CredentialCheck, CredentialVerdict, VerifyCredential } from './orders-service';

// The tool a credential must name for each operation the service guards.
const TOOL_OF_OPERATION: Record<CredentialCheck['operation'], string> = {
  refund: 'refund_order',
};

// 401: no usable credential (send one); 403: a genuine credential that does not allow this request.
// A Record, so a refusal code added to toolgate's CredentialRefusal fails the type check until it is mapped here.
const REFUSALS: Record<CredentialRefusal, { status: 401 | 403; advice: string }> = {
  CREDENTIAL_MISSING: {
    status: 401,
    advice: 'Send "Authorization: Bearer <credential>" with the credential toolgate minted for this call.',
  },
  CREDENTIAL_INVALID: {
    status: 401,
    advice:
      `Send the credential exactly as minted (it lives at most ${maxCredentialSeconds} s from its issue time), ` +
      'by the minter whose public key this service was started with.',
  },
  CREDENTIAL_EXPIRED: {
    status: 401,
    advice: 'Mint a new credential for this attempt and send it with the same Idempotency-Key.',
  },
  CREDENTIAL_SCOPE_MISMATCH: {
    status: 403,
    advice:
      'Mint a credential for exactly this request: operation refund_order, this order, this Idempotency-Key and these arguments.',
  },
  CREDENTIAL_REPLAYED: {
    status: 403,
    advice:
      'A credential is good for one request: mint a new one for this attempt. GET /refunds/by-key/:key tells whether the refund was applied.',
  },
};

function refuse(code: CredentialRefusal, reason: string): CredentialVerdict {
  const { status, advice } = REFUSALS[code];
  return { accepted: false, status, code, message: `${reason} ${advice} Nothing was applied.` };
}

/**
 * The claims a credential must carry to cover this exact request: the tool name, `order:<id>`, the
 * Idempotency-Key as the call id, and the digest of the refund's tool arguments (reason included).
 */
function expectedClaimsOf(check: CredentialCheck): {
  op: string;
  resource: string;
  callId: string;
  argsDigest: string;
} {
  return {
    op: TOOL_OF_OPERATION[check.operation],
    resource: `order:${check.orderId}`,
    callId: check.idempotencyKey,
    argsDigest: digestOf({
      order_id: check.orderId,
      amount_cents: check.amountCents,
      currency: check.currency,
      reason: check.reason,
      ...(check.customerId !== undefined ? { customer_id: check.customerId } : {}),
    }),
  };
}

/**
 * A credential check that accepts a refund only with a credential the minter signed, issued now for
 * at most `maxCredentialSeconds` and not expired, minted for exactly this refund, and never accepted before. It records the credential's `jti` only
 * when it accepts, and changes nothing else; a refusal carries its code and what to do about it.
 */
export function createCredentialCheck({
  minterPublicKeyHex,
  database,
}: {
  /** The minter's raw Ed25519 public key, 64 hex characters (`readPublicKeyHex` of its `.pub` file). */
  minterPublicKeyHex: string;
  database: Pick<OrdersDatabase, 'recordCredentialUse'>;
}): VerifyCredential {
  // Fail at start-up, not with every refund refused as CREDENTIAL_INVALID.
  if (!/^[0-9a-f]{64}$/i.test(minterPublicKeyHex)) {
    throw new Error(
      'createCredentialCheck: minterPublicKeyHex must be a raw Ed25519 public key in hex (64 characters); read it with readPublicKeyHex.',
    );
  }
  return (check) => {
    const result = verifyCredential({
      token: check.credential,
      minterPublicKeyHex,
      expected: expectedClaimsOf(check),
      ...(check.orderOwner !== undefined ? { resourceOwner: check.orderOwner } : {}),
    });
    if (!result.ok) return refuse(result.code, result.message);
    const { jti } = result.claims;
    // The minter always sets one; without it single use cannot be enforced, so the credential is unusable.
    if (typeof jti !== 'string' || jti === '') {
      return refuse('CREDENTIAL_INVALID', 'The credential has no jti, so its single use cannot be enforced.');
    }
    const firstUse = database.recordCredentialUse({
      jti,
      idempotencyKey: check.idempotencyKey,
      acceptedAt: new Date().toISOString(),
    });
    if (!firstUse) return refuse('CREDENTIAL_REPLAYED', `The credential ${jti} was already used once.`);
    return { accepted: true };
  };
}
