import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isOrdersRejection } from '../../examples/orders/orders-api-client';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import type { ExecutionApproval, PolicyFileInput } from 'toolgate';
import type { DecisionEnvelope, ExecutionInput } from 'toolgate/protocol';
import { keyPaths, readPrivateKey } from 'toolgate';
import { approvalNonce, signValue } from 'toolgate/protocol';
import type { CredentialClaims } from 'toolgate/backend';
import { canonicalJson, digestOf, maxCredentialSeconds, signCredential } from 'toolgate/backend';
import { prebuildWorkflowBundle } from 'toolgate/testing';
import { caught } from '../support/caught';
import type { RefundRequest } from '../support/refund-claims';
import { claimsFor } from '../support/refund-claims';
import { temporalAddress } from '../support/temporal';
import { testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import type { ForgedExecutionOutcome } from './forged-execution-workflows';

// Attacks on the per-call credential, each asserting the refusal code and the orders service's
// count of applied refunds (the backend's truth). First the backend's check: credentials sent
// straight to the real orders process, which the harness starts with the minter's public key.
// Then the minter's own checks: writes that reach the worker's executor without a valid approval.

/**
 * The workers' policy, loosened against the minter's own copy (the tests' policy), as a bad deploy
 * or a tampered policy file would: `cautious-bot` may refund alone, and one approver is enough for
 * a critical refund by `support-bot`. The workflow acts on it; the minter must not.
 */
const loosenedPolicy: PolicyFileInput = {
  ...testPolicy,
  callers: {
    ...testPolicy.callers,
    'cautious-bot': { ...testPolicy.callers['cautious-bot']!, autonomy: 'critical' },
    'support-bot': {
      ...testPolicy.callers['support-bot']!,
      approval: { ...testPolicy.callers['support-bot']!.approval!, quorum: { critical: 1 } },
    },
  },
};

let harness: ToolGateHarness;

useHarness((started) => (harness = started), { policy: loosenedPolicy, minterPolicy: testPolicy });

const api = (): OrdersApiClient => harness.orders.api;
const appliedRefunds = () => api().refundCount();
const nowSeconds = () => Math.floor(Date.now() / 1000);

const refundOf = (overrides: Partial<RefundRequest> = {}): RefundRequest => ({
  orderId: 'ORD-1001',
  amountCents: 2590,
  currency: 'BRL',
  reason: 'damaged',
  idempotencyKey: `tc-attack-${randomUUID()}`,
  ...overrides,
});

/** The minter's private key: what only the workers hold. An attack that has it signs with it to prove the backend's other checks. */
const minterKey = (): KeyObject =>
  readPrivateKey(keyPaths({ directory: harness.keysDirectory, owner: { kind: 'minter' } }).privateKey);

const credentialFor = (
  request: RefundRequest,
  overrides: Record<string, unknown> = {},
  privateKey: KeyObject = minterKey(),
): string => signCredential({ claims: claimsFor(request, overrides), privateKey });

/** A genuine credential whose claims were changed after signing; the signature is the minter's, over the old claims. */
function edited(credential: string, change: (claims: CredentialClaims) => CredentialClaims): string {
  const [payload, signature] = credential.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as CredentialClaims;
  return `${Buffer.from(canonicalJson(change(claims)), 'utf8').toString('base64url')}.${signature}`;
}

/** Sends the refund and expects it refused with `code` and `status`, with nothing applied for its key. */
async function expectRefused(request: RefundRequest, code: string, status: number): Promise<string> {
  const error = await caught(() => api().refund(request));
  expect(isOrdersRejection(error), String(error)).toBe(true);
  expect(error).toMatchObject({ kind: 'rejection', code, status });
  const { message } = error as Error;
  expect(message).toContain('Nothing was applied.');
  expect(await api().findRefundByKey({ idempotencyKey: request.idempotencyKey })).toBeNull();
  return message;
}

describe('credentials the orders service refuses', () => {
  type Attack = {
    /** The request sent, with the credential it carries (none when absent). */
    send: () => RefundRequest;
    code: string;
    status: 401 | 403;
    /** Words the refusal's message must contain: it says what is wrong. */
    mentions?: string;
  };
  const invalid = (send: () => RefundRequest, mentions?: string): Attack => ({
    send,
    code: 'CREDENTIAL_INVALID',
    status: 401,
    ...(mentions ? { mentions } : {}),
  });
  const outOfScope = (send: () => RefundRequest, mentions: string): Attack => ({
    send,
    code: 'CREDENTIAL_SCOPE_MISMATCH',
    status: 403,
    mentions,
  });
  /** A credential minted for `minted`, sent with `sent` (the same request unless given). */
  const mintedFor = (minted: RefundRequest, sent: RefundRequest = minted) => ({
    ...sent,
    credential: credentialFor(minted),
  });
  /** A genuine credential for `minted`, its claims changed after signing to cover `sent`. */
  const editedFor = (minted: RefundRequest, sent: RefundRequest, change: Record<string, unknown>) => ({
    ...sent,
    credential: edited(credentialFor(minted), (claims) => ({ ...claims, ...change })),
  });

  const attacks: [string, Attack][] = [
    ['a refund with no credential', { send: () => refundOf(), code: 'CREDENTIAL_MISSING', status: 401 }],
    ['something that is not a credential', invalid(() => ({ ...refundOf(), credential: 'opaque-token' }))],
    [
      'a credential signed by another Ed25519 key',
      invalid(() => {
        const request = refundOf();
        return {
          ...request,
          credential: credentialFor(request, {}, generateKeyPairSync('ed25519').privateKey),
        };
      }, 'not one the minter signed'),
    ],
    [
      'an expired credential',
      {
        send: () => {
          const request = refundOf();
          return {
            ...request,
            credential: credentialFor(request, { iat: nowSeconds() - 70, exp: nowSeconds() - 10 }),
          };
        },
        code: 'CREDENTIAL_EXPIRED',
        status: 401,
      },
    ],
    [
      'a minter-signed credential that lives until 10^12 s after the epoch',
      invalid(() => {
        const request = refundOf();
        return { ...request, credential: credentialFor(request, { exp: 10 ** 12 }) };
      }, `longer than the ${maxCredentialSeconds} s`),
    ],
    [
      'a minter-signed credential issued an hour in the future',
      invalid(() => {
        const request = refundOf();
        const issuedAt = nowSeconds() + 3600;
        return { ...request, credential: credentialFor(request, { iat: issuedAt, exp: issuedAt + 30 }) };
      }, 'in the future'),
    ],
    [
      'a minter-signed credential without an issue time',
      invalid(() => {
        const request = refundOf();
        return { ...request, credential: credentialFor(request, { iat: undefined }) };
      }, 'issue time (iat)'),
    ],
    [
      'a credential whose amount was raised after signing',
      invalid(() => {
        const sent = refundOf();
        return editedFor({ ...sent, amountCents: 1 }, sent, { argsDigest: claimsFor(sent).argsDigest });
      }, 'not one the minter signed'),
    ],
    [
      'a credential moved to another order after signing',
      invalid(() => {
        const minted = refundOf();
        const sent = { ...minted, orderId: 'ORD-1003' };
        const { resource, argsDigest } = claimsFor(sent);
        return editedFor(minted, sent, { resource, argsDigest });
      }, 'not one the minter signed'),
    ],
    [
      'a credential moved to another idempotency key (call id) after signing',
      invalid(() => {
        const minted = refundOf();
        const sent = refundOf();
        return editedFor(minted, sent, { callId: sent.idempotencyKey });
      }, 'not one the minter signed'),
    ],
    [
      'a credential whose arguments digest was changed after signing',
      invalid(() => {
        const minted = refundOf();
        const sent = { ...minted, reason: 'customer_request' as const };
        return editedFor(minted, sent, { argsDigest: claimsFor(sent).argsDigest });
      }, 'not one the minter signed'),
    ],
    [
      'an expired credential whose expiry was extended after signing',
      invalid(() => {
        const request = refundOf();
        const expired = credentialFor(request, { iat: nowSeconds() - 70, exp: nowSeconds() - 10 });
        return {
          ...request,
          credential: edited(expired, (claims) => ({ ...claims, exp: nowSeconds() + 60 })),
        };
      }, 'not one the minter signed'),
    ],
    [
      'a genuine credential for another amount',
      outOfScope(() => {
        const minted = refundOf({ amountCents: 1 });
        return mintedFor(minted, { ...minted, amountCents: 2590 });
      }, 'argsDigest'),
    ],
    [
      'a genuine credential for another currency',
      outOfScope(() => {
        // Checked before the business rules: without the credential check this would be CURRENCY_MISMATCH.
        const minted = refundOf();
        return mintedFor(minted, { ...minted, currency: 'USD' });
      }, 'argsDigest'),
    ],
    [
      'a genuine credential for another reason',
      outOfScope(() => {
        const minted = refundOf();
        return mintedFor(minted, { ...minted, reason: 'customer_request' });
      }, 'argsDigest'),
    ],
    [
      'a genuine credential for another order',
      outOfScope(() => {
        const minted = refundOf({ orderId: 'ORD-1003' });
        return mintedFor(minted, { ...minted, orderId: 'ORD-1001' });
      }, 'resource'),
    ],
    [
      'a genuine credential for another idempotency key (call id)',
      outOfScope(() => {
        const minted = refundOf();
        return mintedFor(minted, refundOf());
      }, 'callId'),
    ],
    [
      'a genuine credential for another operation',
      outOfScope(() => {
        const request = refundOf();
        return { ...request, credential: credentialFor(request, { op: 'get_order' }) };
      }, 'op'),
    ],
  ];

  it.each(attacks)('refuses %s and applies nothing', async (_label, { send, code, status, mentions }) => {
    const message = await expectRefused(send(), code, status);
    if (mentions) expect(message).toContain(mentions);
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a malformed Authorization header as CREDENTIAL_INVALID and applies nothing', async () => {
    const response = await fetch(`${harness.orders.url}/orders/ORD-1001/refunds`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': `tc-attack-${randomUUID()}`,
        authorization: 'Basic dXNlcjpwYXNz',
      },
      body: JSON.stringify({ amount_cents: 2590, currency: 'BRL', reason: 'damaged' }),
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'CREDENTIAL_INVALID' });
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('replayed credentials', () => {
  // A jti is accepted once, full stop: the same credential sent again with the same key is refused
  // too, although the service would only replay the stored refund. Each attempt mints its own.
  it('refuses the same credential sent again with the same key as CREDENTIAL_REPLAYED', async () => {
    const request = refundOf();
    const credential = credentialFor(request);
    await api().refund({ ...request, credential });

    const error = await caught(() => api().refund({ ...request, credential }));
    expect(error).toMatchObject({ kind: 'rejection', code: 'CREDENTIAL_REPLAYED', status: 403 });
    expect(await appliedRefunds()).toBe(1);
    expect((await api().getOrder({ orderId: 'ORD-1001' })).refundedCents).toBe(2590);
  });

  it('accepts one credential sent six times at once exactly once', async () => {
    const request = refundOf();
    const credential = credentialFor(request);
    const settled = await Promise.allSettled(
      Array.from({ length: 6 }, () => api().refund({ ...request, credential })),
    );

    expect(settled.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    for (const result of settled) {
      if (result.status === 'rejected') {
        expect(result.reason).toMatchObject({ code: 'CREDENTIAL_REPLAYED', status: 403 });
      }
    }
    expect(await appliedRefunds()).toBe(1);
  });

  it('refuses a used jti under a fresh key, in a credential otherwise minted for it, as CREDENTIAL_REPLAYED', async () => {
    const jti = randomUUID();
    const first = refundOf();
    await api().refund({ ...first, credential: credentialFor(first, { jti }) });

    const second = refundOf();
    await expectRefused(
      { ...second, credential: credentialFor(second, { jti }) },
      'CREDENTIAL_REPLAYED',
      403,
    );
    expect(await appliedRefunds()).toBe(1);
  });
});

describe('the minter refuses writes that were not approved, whatever the workflow says', () => {
  it('refuses a refund the loosened workers ran without approval: PERMISSION_DENIED, nothing applied', async () => {
    // The workers' policy lets cautious-bot refund alone; the minter's says a human must approve it.
    const result = await harness.call({
      caller: 'cautious-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(result).toMatchObject({ ok: false, code: 'PERMISSION_DENIED', effect: 'none' });
    expect(result.message).toContain('needs approval and none was given');
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a critical refund approved by one approver where the minter needs two: PERMISSION_DENIED', async () => {
    const pending = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 20_000 }),
    });
    expect(pending).toMatchObject({ code: 'APPROVAL_PENDING', data: { riskLevel: 'critical', quorum: 1 } });
    const decision = await harness.admin.decide({
      callId: pending.callId,
      approver: 'alice',
      privateKey: harness.approverKey('alice'),
      decision: 'approve',
      reason: 'looks fine',
    });
    expect(decision).toMatchObject({ accepted: true, state: 'approved' });

    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: false, code: 'PERMISSION_DENIED', effect: 'none' });
    expect(final?.message).toContain('1 distinct approver(s), 2 needed');
    expect(await appliedRefunds()).toBe(0);
  });

  describe('executions forged by a workflow', () => {
    const args = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };
    const criticalArgs = { ...args, order_id: 'ORD-1003', amount_cents: 20_000 };
    const runId = 'run-attacked';
    const previewDigest = digestOf({ preview: 'what alice saw' });
    // The forged workflow runs on a worker of its own, outside the deployment: only its activity
    // reaches the toolgate worker, through that worker's task queue.
    const forgedTaskQueue = `forged-${randomUUID()}`;
    const cleanups: (() => unknown)[] = [];
    // The worker's contract of refund_order, as a real round names it (the minter recomputes it).
    let contractDigest = '';

    beforeAll(async () => {
      const waiting = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 1_111 }),
      });
      contractDigest = (await harness.admin.show(waiting.callId))?.approval?.contractDigest ?? '';
      expect(contractDigest).toMatch(/^[0-9a-f]{64}$/);
      await harness.admin.decide({
        callId: waiting.callId,
        approver: 'alice',
        privateKey: harness.approverKey('alice'),
        decision: 'deny',
        reason: 'only read for its contract digest',
      });
      const directory = mkdtempSync(join(tmpdir(), 'toolgate-forged-'));
      cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
      const connection = await NativeConnection.connect({ address: temporalAddress() });
      cleanups.push(() => connection.close());
      const worker = await Worker.create({
        connection,
        taskQueue: forgedTaskQueue,
        workflowBundle: prebuildWorkflowBundle({
          workflowsPath: join(__dirname, 'forged-execution-workflows.ts'),
          outFile: join(directory, 'workflows.js'),
        }),
      });
      const running = worker.run();
      cleanups.push(async () => {
        worker.shutdown();
        await running;
      });
    });

    afterAll(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });

    /** An approval alice (or `approver`) genuinely signed, for the call, run and arguments given. */
    function approvalBy(input: {
      callId: string;
      runId?: string;
      args?: Record<string, unknown>;
      approvers?: string[];
      contractDigest?: string;
    }): ExecutionApproval {
      const signedRun = input.runId ?? runId;
      const nonce = approvalNonce({ runId: signedRun, round: 1, previewDigest });
      return {
        round: 1,
        nonce,
        previewDigest,
        decisions: (input.approvers ?? ['alice']).map((approver) => {
          const envelope: DecisionEnvelope = {
            callId: input.callId,
            runId: signedRun,
            nonce,
            argsDigest: digestOf(input.args ?? args),
            previewDigest,
            contractDigest: input.contractDigest ?? contractDigest,
            decision: 'approve',
            approver,
            reason: 'checked',
            issuedAt: new Date().toISOString(),
          };
          return {
            envelope,
            signature: signValue({
              kind: 'decision',
              value: envelope,
              privateKey: harness.approverKey(approver),
            }),
          };
        }),
      };
    }

    const execute = (
      input: Omit<ExecutionInput, 'tool' | 'caller' | 'runId'>,
    ): Promise<ForgedExecutionOutcome> =>
      harness.temporal.workflow.execute('forgedExecution', {
        taskQueue: forgedTaskQueue,
        workflowId: `forged-${randomUUID()}`,
        args: [
          {
            executorTaskQueue: harness.taskQueue,
            execution: { tool: 'refund_order', caller: 'support-bot', runId, ...input },
          },
        ],
      });

    const newCallId = () => `tc-forged-${randomUUID()}`;

    it('runs a write whose approval holds (the path the attacks below take reaches the backend)', async () => {
      const callId = newCallId();
      expect(await execute({ callId, args, approval: approvalBy({ callId }) })).toEqual({ ok: true });
      expect(await appliedRefunds()).toBe(1);
    });

    it.each([
      ['no approval at all', (callId: string) => ({ callId, args }), 'needs approval'],
      [
        'a decision alice signed for another call',
        (callId: string) => ({ callId, args, approval: approvalBy({ callId: newCallId() }) }),
        'does not hold',
      ],
      [
        'a decision alice signed for another run of this call',
        (callId: string) => ({ callId, args, approval: approvalBy({ callId, runId: 'run-earlier' }) }),
        'nonce',
      ],
      [
        'a decision alice signed for other arguments',
        (callId: string) => ({
          callId,
          args,
          approval: approvalBy({ callId, args: { ...args, amount_cents: 100 } }),
        }),
        'does not hold',
      ],
      [
        'a decision alice signed for another contract of the tool (the one before a deploy)',
        (callId: string) => ({
          callId,
          args,
          approval: approvalBy({ callId, contractDigest: digestOf({ contract: 'before the deploy' }) }),
        }),
        '(CONTRACT_CHANGED)',
      ],
      [
        'one approver for a critical refund that needs two',
        (callId: string) => ({
          callId,
          args: criticalArgs,
          approval: approvalBy({ callId, args: criticalArgs }),
        }),
        '1 distinct approver(s), 2 needed',
      ],
      [
        'the same approver twice for a critical refund that needs two',
        (callId: string) => ({
          callId,
          args: criticalArgs,
          approval: approvalBy({ callId, args: criticalArgs, approvers: ['alice', 'alice'] }),
        }),
        '1 distinct approver(s), 2 needed',
      ],
    ])('refuses %s: PERMISSION_DENIED, nothing reaches the backend', async (_label, build, reason) => {
      const outcome = await execute(build(newCallId()));
      expect(outcome).toMatchObject({ ok: false, type: 'PERMISSION_DENIED' });
      expect(!outcome.ok && outcome.message).toContain(reason);
      expect(await appliedRefunds()).toBe(0);
    });
  });
});
