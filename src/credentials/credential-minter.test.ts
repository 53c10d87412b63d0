import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { refundOrderContract } from '../../examples/orders/orders-contracts';
import { createCredentialMinter } from './credential-minter';
import type { ExecutionApproval } from './credential-minter';
import { verifyCredential } from './credential-token';
import { publicKeyHex, signValue } from '../keys/key-files';
import { checkPolicy } from '../policy/load-policy';
import type { DecisionEnvelope, RoundApproval, SignedDecision } from '../shared/approval';
import { approvalNonce, maxCredentialSeconds } from '../shared/approval';
import { digestOf } from '../shared/canonical-json';
import { contractDigestOf } from '../tools/contract-digest';
import { defineToolContract } from '../tools/define-tool';
import { createToolRegistry } from '../tools/tool-registry';

const pair = () => generateKeyPairSync('ed25519');
const minterKeys = pair();
const alice = pair();
const bob = pair();
const dave = pair();
const erin = pair();
const inline = (key: ReturnType<typeof pair>) => `ed25519:${publicKeyHex(key.publicKey)}`;
const policy = checkPolicy({
  source: 'test',
  registry: createToolRegistry({ tools: [refundOrderContract] }),
  value: {
    callers: {
      'support-bot': {
        publicKey: inline(pair()),
        tools: ['refund_order'],
        autonomy: 'reversible',
        limits: { refund_order: { amount_cents: { max: 50_000 } } },
        approval: { ceiling: 'critical', quorum: { critical: 2 } },
      },
    },
    approvers: {
      alice: { publicKey: inline(alice), maxLevel: 'critical' },
      bob: { publicKey: inline(bob), maxLevel: 'irreversible' },
      dave: { publicKey: inline(dave), maxLevel: 'critical', operates: ['support-bot'] },
      erin: { publicKey: inline(erin), maxLevel: 'critical' },
    },
  },
});
const minter = createCredentialMinter({ privateKey: minterKeys.privateKey, policy: () => policy });
const args = { order_id: 'ORD-1003', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };
const callId = 'tc-call';
const runId = 'run-1';
const previewDigest = digestOf({ preview: 1 });
const nonce = approvalNonce({ runId, round: 1, previewDigest });
// The contract the round was opened under: the minter recomputes it from the contract it is given.
const contractDigest = contractDigestOf({ contract: refundOrderContract });

function approvalBy(
  signers: [string, ReturnType<typeof pair>][],
  overrides: Partial<DecisionEnvelope> = {},
  callArgs = args,
): RoundApproval {
  return {
    round: 1,
    nonce,
    previewDigest,
    decisions: signers.map(([approver, key]) => {
      const envelope: DecisionEnvelope = {
        callId,
        runId,
        nonce,
        argsDigest: digestOf(callArgs),
        previewDigest,
        contractDigest,
        decision: 'approve',
        approver,
        reason: 'ok',
        issuedAt: '2026-11-30T00:00:00Z',
        ...overrides,
      };
      return {
        envelope,
        signature: signValue({ kind: 'decision', value: envelope, privateKey: key.privateKey }),
      };
    }),
  };
}

const critical = { ...args, amount_cents: 20_000 };

const mint = (approval: ExecutionApproval | undefined, callArgs = args) =>
  minter.mint({
    contract: refundOrderContract,
    caller: 'support-bot',
    callId,
    runId,
    args: callArgs,
    ...(approval ? { approval } : {}),
  });

describe('the credential minter trusts no flag from the workflow', () => {
  it('mints a credential the backend accepts when the approvals hold', async () => {
    const token = await mint(approvalBy([['alice', alice]]));
    const checked = verifyCredential({
      token,
      minterPublicKeyHex: publicKeyHex(minterKeys.publicKey),
      expected: { op: 'refund_order', resource: 'order:ORD-1003', callId, argsDigest: digestOf(args) },
    });
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    expect(Math.abs(checked.claims.iat - Date.now() / 1000)).toBeLessThanOrEqual(5);
    expect(checked.claims.exp - checked.claims.iat).toBe(maxCredentialSeconds);
  });

  it.each([
    ['no approval at all', () => mint(undefined), 'needs approval'],
    [
      'a decision for another call',
      () => mint(approvalBy([['alice', alice]], { callId: 'tc-other' })),
      'does not hold',
    ],
    [
      'a decision for other arguments',
      () => mint(approvalBy([['alice', alice]], { argsDigest: digestOf({}) })),
      'does not hold',
    ],
    [
      'a decision for another definition of the tool (a deploy since it was signed)',
      () =>
        mint(approvalBy([['alice', alice]], { contractDigest: digestOf({ contract: 'before the deploy' }) })),
      '(CONTRACT_CHANGED)',
    ],
    ['a decision signed with another key', () => mint(approvalBy([['alice', bob]])), 'does not hold'],
    [
      'a denial passed off as approval',
      () => mint(approvalBy([['alice', alice]], { decision: 'deny' })),
      'does not hold',
    ],
    ['an approver who operates the caller', () => mint(approvalBy([['dave', dave]])), 'does not hold'],
    [
      'one approver for a critical refund that needs two',
      () =>
        mint(approvalBy([['alice', alice]], {}, { ...args, amount_cents: 20_000 }), {
          ...args,
          amount_cents: 20_000,
        }),
      '1 distinct approver(s), 2 needed',
    ],
    [
      'an approver not granted the level',
      () =>
        mint(
          approvalBy(
            [
              ['alice', alice],
              ['bob', bob],
            ],
            {},
            { ...args, amount_cents: 20_000 },
          ),
          { ...args, amount_cents: 20_000 },
        ),
      'does not hold',
    ],
    [
      'a refund over the policy',
      () => mint(approvalBy([['alice', alice]]), { ...args, amount_cents: 9_000_000 }),
      'refuses',
    ],
    [
      'the same approver twice for a critical refund that needs two',
      () =>
        mint(
          approvalBy(
            [
              ['alice', alice],
              ['alice', alice],
            ],
            {},
            critical,
          ),
          critical,
        ),
      '1 distinct approver(s), 2 needed',
    ],
  ])('refuses %s', async (_case, attempt, message) => {
    await expect(attempt()).rejects.toThrow(message);
  });

  it('mints a critical refund approved by two distinct approvers granted its level', async () => {
    const approval = approvalBy(
      [
        ['alice', alice],
        ['erin', erin],
      ],
      {},
      critical,
    );
    expect(typeof (await mint(approval, critical))).toBe('string');
  });
});

describe('the credential minter judges each decision by the rules the workflow applies', () => {
  const withDecisions = (decisions: unknown[]): RoundApproval => ({
    ...approvalBy([]),
    decisions: decisions as SignedDecision[],
  });
  const [aliceApproval] = approvalBy([['alice', alice]]).decisions;

  it.each([
    [
      'a decision for another run',
      () => mint(approvalBy([['alice', alice]], { runId: 'run-earlier' })),
      'the decision of alice does not hold for this call (DIGEST_MISMATCH)',
    ],
    [
      'a decision signed with another key',
      () => mint(approvalBy([['alice', bob]])),
      'the decision of alice does not hold for this call (SIGNATURE_INVALID)',
    ],
    [
      'an approver who operates the caller',
      () => mint(approvalBy([['dave', dave]])),
      'the decision of dave does not hold for this call (SELF_APPROVAL)',
    ],
    [
      'an approver not granted the level',
      () => mint(approvalBy([['bob', bob]], {}, critical), critical),
      'the decision of bob does not hold for this call (APPROVER_NOT_ALLOWED)',
    ],
    [
      'a denial passed off as approval',
      () => mint(approvalBy([['alice', alice]], { decision: 'deny' })),
      'the decision of alice does not hold for this call (a denial, not an approval)',
    ],
    [
      'a signed decision that is neither approve nor deny',
      () => mint(approvalBy([['alice', alice]], { decision: 'approve all' as DecisionEnvelope['decision'] })),
      'the decision of alice does not hold for this call (SIGNATURE_INVALID)',
    ],
  ])('refuses %s, naming the approver and the rule', async (_case, attempt, message) => {
    await expect(attempt()).rejects.toThrow(message);
  });

  it('refuses a decision for the contract a deploy replaced: it recomputes the digest from the contract it holds', async () => {
    // The worker now registers a refund whose schema refuses more than 5,000 cents: 2,590 still passes
    // it and the policy, so only the contract's digest tells the decision was for another definition.
    const deployed = defineToolContract({
      name: refundOrderContract.name,
      description: refundOrderContract.description,
      input: z.strictObject({
        ...refundOrderContract.input.shape,
        amount_cents: z.int().positive().max(5_000).describe('Refund amount in cents, at most 5,000.'),
      }),
      output: refundOrderContract.output,
      effect: 'write',
      risk: refundOrderContract.risk,
      domainCodes: refundOrderContract.domainCodes,
      resource: refundOrderContract.resource,
    });
    await expect(
      minter.mint({
        contract: deployed,
        caller: 'support-bot',
        callId,
        runId,
        args,
        approval: approvalBy([['alice', alice]]),
      }),
    ).rejects.toThrow('the decision of alice does not hold for this call (CONTRACT_CHANGED)');
    const signedForDeployed = { contractDigest: contractDigestOf({ contract: deployed }) };
    expect(
      typeof (await minter.mint({
        contract: deployed,
        caller: 'support-bot',
        callId,
        runId,
        args,
        approval: approvalBy([['alice', alice]], signedForDeployed),
      })),
    ).toBe('string');
  });

  it.each(['__proto__', 'constructor', 'toString'])(
    'refuses an approver named %s as unknown',
    async (name) => {
      const approval = approvalBy([[name, pair()]]);
      await expect(mint(approval)).rejects.toThrow(
        `the decision of ${name} does not hold for this call (APPROVER_UNKNOWN)`,
      );
    },
  );

  it.each([
    ['null', null, '(unknown)'],
    ['an empty object', {}, '(unknown)'],
    ['an envelope without its signature', { envelope: aliceApproval?.envelope }, 'alice'],
  ])('refuses a malformed decision (%s) as a MintRefusal, not a crash', async (_case, decision, named) => {
    await expect(mint(withDecisions([aliceApproval, decision]))).rejects.toThrow(
      expect.objectContaining({
        name: 'MintRefusal',
        message: `the decision of ${named} does not hold for this call (SIGNATURE_INVALID)`,
      }),
    );
  });

  it('does not let one approver make a quorum of two by naming themselves as ["alice"]', async () => {
    const approval = approvalBy([['alice', alice]], {}, critical);
    const envelope = { ...approval.decisions[0]?.envelope, approver: ['alice'] };
    const asArray = {
      envelope,
      signature: signValue({ kind: 'decision', value: envelope, privateKey: alice.privateKey }),
    };
    await expect(mint(withDecisions([...approval.decisions, asArray]), critical)).rejects.toThrow(
      'does not hold for this call (SIGNATURE_INVALID)',
    );
  });
});
