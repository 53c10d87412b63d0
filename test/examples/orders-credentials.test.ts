import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isOrdersRejection, isOrdersUnavailable } from '../../examples/orders/orders-api-client';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import { refundOrderContract } from '../../examples/orders/orders-contracts';
import { createCredentialCheck } from '../../examples/orders/service/credential-check';
import { openOrdersDatabase } from '../../examples/orders/service/orders-database';
import type { OrdersDatabase } from '../../examples/orders/service/orders-database';
import { startOrdersProcess } from '../../examples/orders/service/orders-process';
import type { OrdersProcess } from '../../examples/orders/service/orders-process';
import type { CredentialCheck, VerifyCredential } from '../../examples/orders/service/orders-service';
import { signCredential } from '../../src/keys/credential-token';
import { generateKeyPairFiles, readPrivateKey, readPublicKeyHex } from '../../src/keys/key-files';
import type { CredentialClaims } from '../../src/shared/approval';
import { canonicalJson, digestOf } from '../../src/shared/canonical-json';
import { caught } from '../support/caught';

type RefundRequest = Parameters<OrdersApiClient['refund']>[0];

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

/** The claims the minter would sign for this refund, computed from the tool arguments as the contract validates them. */
function claimsFor(request: RefundRequest, overrides: Partial<CredentialClaims> = {}): CredentialClaims {
  const args = refundOrderContract.input.parse({
    order_id: request.orderId,
    amount_cents: request.amountCents,
    currency: request.currency,
    reason: request.reason,
  });
  return {
    op: 'refund_order',
    resource: `order:${request.orderId}`,
    callId: request.idempotencyKey,
    argsDigest: digestOf(args),
    jti: randomUUID(),
    exp: nowSeconds() + 60,
    ...overrides,
  };
}

/** Makes a minter key pair (and a stranger's) in a fresh temp dir; `remove()` deletes it. */
function makeKeys(): {
  minterPublicKeyPath: string;
  minterPublicKeyHex: string;
  minterKey: KeyObject;
  strangerKey: KeyObject;
  remove(): void;
} {
  const directory = mkdtempSync(join(tmpdir(), 'toolgate-credentials-'));
  const minter = generateKeyPairFiles({ directory, owner: { kind: 'minter' } });
  const stranger = generateKeyPairFiles({
    directory: join(directory, 'stranger'),
    owner: { kind: 'minter' },
  });
  return {
    minterPublicKeyPath: minter.publicKey,
    minterPublicKeyHex: readPublicKeyHex(minter.publicKey),
    minterKey: readPrivateKey(minter.privateKey),
    strangerKey: readPrivateKey(stranger.privateKey),
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

  // Every refusal test starts from one applied refund, so "unchanged" is checked against a non-empty state.
  const baseline = refundOf({ amountCents: 1000 });

  async function expectUnchanged(refused?: RefundRequest): Promise<void> {
    expect(await api.refundCount()).toBe(1);
    expect((await api.getOrder({ orderId: 'ORD-1001' })).refundedCents).toBe(1000);
    expect((await api.getOrder({ orderId: 'ORD-1003' })).refundedCents).toBe(0);
    if (refused && refused.idempotencyKey !== baseline.idempotencyKey) {
      expect(await api.findRefundByKey({ idempotencyKey: refused.idempotencyKey })).toBeNull();
    }
  }

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

  type RefusalCase = {
    /** The request sent, with the credential it carries (none when absent). */
    send: () => RefundRequest;
    code: string;
    status: 401 | 403;
    /** A word the message must contain, e.g. the claim that did not match. */
    mentions?: string;
  };
  const refusalCases: [string, RefusalCase][] = [
    ['no credential', { send: () => refundOf(), code: 'CREDENTIAL_MISSING', status: 401 }],
    [
      'a credential signed by another key',
      {
        send: () => {
          const request = refundOf();
          return { ...request, credential: credentialFor(request, {}, keys.strangerKey) };
        },
        code: 'CREDENTIAL_INVALID',
        status: 401,
      },
    ],
    [
      'a credential whose claims were changed after signing',
      {
        send: () => {
          // A genuine signature over a 1-cent refund, put under the claims of this refund.
          const request = refundOf();
          const [, signature] = credentialFor({ ...request, amountCents: 1 }).split('.');
          const forged = Buffer.from(canonicalJson(claimsFor(request)), 'utf8').toString('base64url');
          return { ...request, credential: `${forged}.${signature}` };
        },
        code: 'CREDENTIAL_INVALID',
        status: 401,
      },
    ],
    [
      'something that is not a credential',
      {
        send: () => ({ ...refundOf(), credential: 'opaque-token' }),
        code: 'CREDENTIAL_INVALID',
        status: 401,
      },
    ],
    [
      'an expired credential',
      {
        send: () => {
          const request = refundOf();
          return { ...request, credential: credentialFor(request, { exp: nowSeconds() - 5 }) };
        },
        code: 'CREDENTIAL_EXPIRED',
        status: 401,
      },
    ],
    [
      'a credential minted for a refund on another order',
      {
        send: () => {
          const request = refundOf();
          const other = { ...request, orderId: 'ORD-1003' };
          return { ...request, credential: credentialFor(other) };
        },
        code: 'CREDENTIAL_SCOPE_MISMATCH',
        status: 403,
        mentions: 'resource',
      },
    ],
    [
      'a credential minted for another operation',
      {
        send: () => {
          const request = refundOf();
          return { ...request, credential: credentialFor(request, { op: 'get_order' }) };
        },
        code: 'CREDENTIAL_SCOPE_MISMATCH',
        status: 403,
        mentions: 'op',
      },
    ],
    [
      'a credential minted for another idempotency key',
      {
        send: () => {
          const request = refundOf();
          return { ...request, credential: credentialFor({ ...request, idempotencyKey: newKey() }) };
        },
        code: 'CREDENTIAL_SCOPE_MISMATCH',
        status: 403,
        mentions: 'callId',
      },
    ],
    ...(
      [
        ['amount', { amountCents: 2591 }],
        // Checked before the business rules: without the credential check this would be CURRENCY_MISMATCH.
        ['currency', { currency: 'USD' }],
        ['reason', { reason: 'customer_request' }],
      ] as const
    ).map(([field, change]): [string, RefusalCase] => [
      `a credential minted for another ${field}`,
      {
        send: () => {
          const minted = refundOf();
          return { ...minted, ...change, credential: credentialFor(minted) };
        },
        code: 'CREDENTIAL_SCOPE_MISMATCH',
        status: 403,
        mentions: 'argsDigest',
      },
    ]),
  ];

  it.each(refusalCases)(
    'refuses %s and changes nothing',
    async (_label, { send, code, status, mentions }) => {
      const request = send();
      const message = await expectRefusal(() => api.refund(request), code, status);
      if (mentions) expect(message).toContain(mentions);
      await expectUnchanged(request);
    },
  );

  it('refuses a malformed Authorization header as CREDENTIAL_INVALID and changes nothing', async () => {
    const response = await fetch(`${service.url}/orders/ORD-1001/refunds`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': newKey(),
        authorization: 'Basic dXNlcjpwYXNz',
      },
      body: JSON.stringify({ amount_cents: 2590, currency: 'BRL', reason: 'damaged' }),
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'CREDENTIAL_INVALID' });
    await expectUnchanged();
  });

  // Decision: a jti is accepted once, full stop. The same credential sent again with the same
  // Idempotency-Key is refused too, although the service would only replay the stored refund; a
  // caller retrying a refund mints a new credential for each attempt (the next test).
  it('refuses the same credential sent again with the same key as CREDENTIAL_REPLAYED', async () => {
    const request = refundOf();
    const credential = credentialFor(request);
    await api.refund({ ...request, credential });

    await expectRefusal(() => api.refund({ ...request, credential }), 'CREDENTIAL_REPLAYED', 403);
    expect(await api.refundCount()).toBe(2);
    expect((await api.getOrder({ orderId: 'ORD-1001' })).refundedCents).toBe(3590);
  });

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

  it('refuses a used jti in a credential otherwise valid for a fresh key as CREDENTIAL_REPLAYED', async () => {
    const jti = randomUUID();
    const first = refundOf();
    await api.refund({ ...first, credential: credentialFor(first, { jti }) });
    expect(await api.refundCount()).toBe(2);

    // Signed by the minter for exactly this refund and key; only the jti was used before.
    const second = refundOf();
    await expectRefusal(
      () => api.refund({ ...second, credential: credentialFor(second, { jti }) }),
      'CREDENTIAL_REPLAYED',
      403,
    );
    expect(await api.refundCount()).toBe(2);
    expect((await api.getOrder({ orderId: 'ORD-1001' })).refundedCents).toBe(3590);
    expect(await api.findRefundByKey({ idempotencyKey: second.idempotencyKey })).toBeNull();
  });

  it('accepts one credential sent concurrently exactly once', async () => {
    const request = refundOf();
    const credential = credentialFor(request);
    const settled = await Promise.allSettled(
      Array.from({ length: 6 }, () => api.refund({ ...request, credential })),
    );

    expect(settled.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    for (const result of settled) {
      if (result.status === 'rejected') {
        expect(result.reason).toMatchObject({ code: 'CREDENTIAL_REPLAYED', status: 403 });
      }
    }
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
