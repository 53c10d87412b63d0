import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isOrdersRejection, isOrdersUnavailable } from '../../examples/orders/orders-api-client';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import { createCredentialCheck } from '../../examples/orders/service/credential-check';
import { openOrdersDatabase } from '../../examples/orders/service/orders-database';
import type { OrdersDatabase } from '../../examples/orders/service/orders-database';
import { startOrdersProcess } from '../../examples/orders/service/orders-process';
import type { OrdersProcess } from '../../examples/orders/service/orders-process';
import type { CredentialCheck, VerifyCredential } from '../../examples/orders/service/orders-service';
import { generateKeyPairFiles, readPrivateKey, readPublicKeyHex } from 'toolgate';
import type { CredentialClaims } from 'toolgate/backend';
import { signCredential } from 'toolgate/backend';
import { caught } from '../support/caught';
import type { RefundRequest } from '../support/refund-claims';
import { claimsFor } from '../support/refund-claims';

function newKey(): string {
  return `test-${randomUUID()}`;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function refundOf(overrides: Partial<RefundRequest> = {}): RefundRequest {
  return {
    orderId: 'ORD-1001',
    amountCents: 2590,
    currency: 'BRL',
    reason: 'damaged',
    idempotencyKey: newKey(),
    ...overrides,
  };
}

/** Makes a minter key pair in a fresh temp dir; `remove()` deletes it. */
function makeKeys(): {
  minterPublicKeyPath: string;
  minterPublicKeyHex: string;
  minterKey: KeyObject;
  remove(): void;
} {
  const directory = mkdtempSync(join(tmpdir(), 'toolgate-credentials-'));
  const minter = generateKeyPairFiles({ directory, owner: { kind: 'minter' } });
  return {
    minterPublicKeyPath: minter.publicKey,
    minterPublicKeyHex: readPublicKeyHex(minter.publicKey),
    minterKey: readPrivateKey(minter.privateKey),
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

async function expectRefusal(action: () => Promise<unknown>, code: string, status: number): Promise<string> {
  const error = await caught(action);
  expect(isOrdersRejection(error), String(error)).toBe(true);
  expect(error).toMatchObject({ kind: 'rejection', code, status });
  const { message } = error as Error;
  expect(message).toContain('Nothing was applied.');
  return message;
}

describe('orders service with --minter-public-key (real process)', () => {
  let keys: ReturnType<typeof makeKeys>;
  let service: OrdersProcess;
  let api: OrdersApiClient;

  const credentialFor = (
    request: RefundRequest,
    overrides: Partial<CredentialClaims> = {},
    privateKey: KeyObject = keys.minterKey,
  ): string => signCredential({ claims: claimsFor(request, overrides), privateKey });

  // Every test starts from one applied refund, so counts are checked against a non-empty state.
  const baseline = refundOf({ amountCents: 1000 });

  beforeAll(async () => {
    keys = makeKeys();
    service = await startOrdersProcess({ minterPublicKeyPath: keys.minterPublicKeyPath });
    api = service.api;
  }, 60_000);

  afterAll(async () => {
    const ended = await service.stop();
    keys.remove();
    expect(ended).toEqual({ exitCode: 0, signal: null });
  }, 15_000);

  beforeEach(async () => {
    await api.reset();
    baseline.idempotencyKey = newKey();
    await api.refund({ ...baseline, credential: credentialFor(baseline) });
  });

  it('applies a refund with a credential minted for exactly that refund, once', async () => {
    const request = refundOf();
    const outcome = await api.refund({ ...request, credential: credentialFor(request) });

    expect(outcome.replayed).toBe(false);
    expect(outcome.refund).toMatchObject({ orderId: 'ORD-1001', amountCents: 2590, reason: 'damaged' });
    expect(await api.refundCount()).toBe(2);
    expect(await api.getOrder({ orderId: 'ORD-1001' })).toMatchObject({
      refundedCents: 3590,
      refundableCents: 8410,
    });
  });

  // The refusals (missing, foreign, edited, expired, long-lived, out of scope, replayed) are attacks:
  // test/attacks/credential-attacks.test.ts sends each to the real orders process. Here: what a
  // genuine caller relies on.

  it('replays a refund whose response was lost when the retry brings a newly minted credential', async () => {
    const request = refundOf();
    await api.setFaults({ idempotencyKey: request.idempotencyKey, loseResponseAfterCommit: 1 });
    const lost = await caught(() => api.refund({ ...request, credential: credentialFor(request) }));
    expect(isOrdersUnavailable(lost), String(lost)).toBe(true);

    const retry = await api.refund({ ...request, credential: credentialFor(request) });
    expect(retry.replayed).toBe(true);
    expect(await api.refundCount()).toBe(2);
    expect((await api.getOrder({ orderId: 'ORD-1001' })).refundedCents).toBe(3590);
  });

  it('leaves a refused key unapplied, so a credential minted for it then applies the refund', async () => {
    const request = refundOf();
    await expectRefusal(
      () => api.refund({ ...request, credential: credentialFor(request, { exp: nowSeconds() - 5 }) }),
      'CREDENTIAL_EXPIRED',
      401,
    );
    const outcome = await api.refund({ ...request, credential: credentialFor(request) });
    expect(outcome.replayed).toBe(false);
    expect(await api.refundCount()).toBe(2);
  });

  it('keeps used credentials refused after a reset', async () => {
    const request = refundOf();
    const credential = credentialFor(request);
    await api.refund({ ...request, credential });
    await api.reset();

    await expectRefusal(() => api.refund({ ...request, credential }), 'CREDENTIAL_REPLAYED', 403);
    expect(await api.refundCount()).toBe(0);
  });
});

describe('orders service start-up with a minter key', () => {
  it('fails to start, naming the flag, when the key file cannot be read', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'toolgate-credentials-'));
    try {
      const error = await caught(() =>
        startOrdersProcess({ minterPublicKeyPath: join(directory, 'missing.pub') }),
      );
      expect(String(error)).toMatch(/exited before listening \(code 2[\s\S]*--minter-public-key/);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("refuses to start with the minter's private key, which a backend must never hold", async () => {
    const keys = makeKeys();
    try {
      const error = await caught(() =>
        startOrdersProcess({ minterPublicKeyPath: keys.minterPublicKeyPath.replace(/\.pub$/, '.key') }),
      );
      expect(String(error)).toMatch(/exited before listening \(code 2[\s\S]*is the minter's private key/);
    } finally {
      keys.remove();
    }
  });
});

describe('createCredentialCheck (in process)', () => {
  let keys: ReturnType<typeof makeKeys>;
  let database: OrdersDatabase;
  let check: VerifyCredential;

  const checkOf = (request: RefundRequest, credential: string | null): CredentialCheck => ({
    credential,
    operation: 'refund',
    orderId: request.orderId,
    amountCents: request.amountCents,
    currency: request.currency,
    reason: request.reason,
    idempotencyKey: request.idempotencyKey,
  });

  beforeAll(() => {
    keys = makeKeys();
  });
  afterAll(() => keys.remove());
  beforeEach(() => {
    database = openOrdersDatabase({ path: ':memory:' });
    check = createCredentialCheck({ minterPublicKeyHex: keys.minterPublicKeyHex, database });
  });
  afterEach(() => database.close());

  it('accepts a credential once and refuses it the second time', async () => {
    const request = refundOf();
    const credential = signCredential({ claims: claimsFor(request), privateKey: keys.minterKey });

    expect(await check(checkOf(request, credential))).toEqual({ accepted: true });
    expect(await check(checkOf(request, credential))).toMatchObject({
      accepted: false,
      status: 403,
      code: 'CREDENTIAL_REPLAYED',
    });
  });

  it('records a jti only when it accepts the credential', async () => {
    const request = refundOf();
    const jti = randomUUID();
    const wrongScope = signCredential({
      claims: claimsFor(request, { jti, op: 'get_order' }),
      privateKey: keys.minterKey,
    });
    const right = signCredential({ claims: claimsFor(request, { jti }), privateKey: keys.minterKey });

    expect(await check(checkOf(request, wrongScope))).toMatchObject({ code: 'CREDENTIAL_SCOPE_MISMATCH' });
    expect(await check(checkOf(request, right))).toEqual({ accepted: true });
    expect(database.recordCredentialUse({ jti, idempotencyKey: 'x', acceptedAt: 'now' })).toBe(false);
  });

  it('refuses a signed credential without a jti, since its single use could not be enforced', async () => {
    const request = refundOf();
    const { jti: _jti, ...claims } = claimsFor(request);
    const credential = signCredential({ claims: claims as CredentialClaims, privateKey: keys.minterKey });

    expect(await check(checkOf(request, credential))).toMatchObject({
      accepted: false,
      status: 401,
      code: 'CREDENTIAL_INVALID',
    });
  });

  it('fails at creation, not at the first refund, when the minter key is not a raw Ed25519 key', () => {
    expect(() => createCredentialCheck({ minterPublicKeyHex: keys.minterPublicKeyPath, database })).toThrow(
      /64 characters/,
    );
  });
});
