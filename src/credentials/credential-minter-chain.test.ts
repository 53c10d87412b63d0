import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { refundOrderContract } from '../../examples/orders/orders-contracts';
import { createCredentialMinter } from './credential-minter';
import { publicKeyHex, signValue } from '../keys/key-files';
import { checkPolicy } from '../policy/load-policy';
import type { DecisionEnvelope, GrantApproval, RoundApproval } from '../approvals/protocol';
import { approvalNonce } from '../approvals/protocol';
import { digestOf } from '../shared/canonical-json';
import { contractDigestOf } from '../tools/contract-digest';
import { createToolRegistry } from '../tools/tool-registry';

// The minter verifies an approval chain from its own policy: each group's quorum, in order, routed
// as the evaluation routed it; it mints nothing for approvals a forged workflow put in another order.

const pair = () => generateKeyPairSync('ed25519');
const keys = { lee: pair(), fay: pair(), ann: pair() };
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
        approval: {
          ceiling: 'critical',
          chains: {
            irreversible: [{ group: 'support-lead' }, { group: 'finance-{claims.region}' }],
          },
        },
      },
    },
    approvers: {
      lee: { publicKey: inline(keys.lee), maxLevel: 'critical', groups: ['support-lead'] },
      fay: { publicKey: inline(keys.fay), maxLevel: 'critical', groups: ['finance-eu'] },
      ann: { publicKey: inline(keys.ann), maxLevel: 'critical', groups: ['support-lead'] },
    },
  },
});
const minter = createCredentialMinter({ privateKey: pair().privateKey, policy: () => policy });
const args = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };
const callId = 'tc-chain';
const runId = 'run-1';
const previewDigest = digestOf({ preview: 1 });
const nonce = approvalNonce({ runId, round: 1, previewDigest });

type Signer = keyof typeof keys;

/** Decisions by `signers`, each signed for the step it is listed at unless `signedFor` says another. */
function approvalBy(
  signers: Signer[],
  signedFor: number[] = signers.map((_, index) => index + 1),
): RoundApproval {
  return {
    round: 1,
    nonce,
    previewDigest,
    decisions: signers.map((approver, index) => {
      const envelope: DecisionEnvelope = {
        callId,
        runId,
        nonce: approvalNonce({ runId, round: 1, previewDigest, step: signedFor[index]! }),
        argsDigest: digestOf(args),
        previewDigest,
        contractDigest: contractDigestOf({ contract: refundOrderContract }),
        decision: 'approve',
        approver,
        reason: 'ok',
        issuedAt: '2026-12-07T00:00:00Z',
      };
      return {
        envelope,
        signature: signValue({ kind: 'decision', value: envelope, privateKey: keys[approver].privateKey }),
      };
    }),
  };
}

type Approval = Parameters<typeof minter.mint>[0]['approval'];

const mintWith = (approval: Approval, region: string | null = 'eu') =>
  minter.mint({
    contract: refundOrderContract,
    caller: 'support-bot',
    callId,
    runId,
    args,
    ...(region ? { context: { claims: { region } } } : {}),
    approval,
  });

const mint = (signers: Signer[], region: string | null = 'eu', signedFor?: number[]) =>
  mintWith(approvalBy(signers, signedFor), region);

describe('the minter verifies the approval chain', () => {
  it('mints for the lead, then finance of the routed region', async () => {
    await expect(mint(['lee', 'fay'])).resolves.toEqual(expect.any(String));
  });

  it.each([
    [['fay', 'lee'], 'fay approved for step 1'],
    [['lee'], '1 distinct approver(s), 2 needed'],
    [['lee', 'ann'], 'ann approved for step 2'],
  ] as [Signer[], string][])('refuses %j: %s', async (signers, reason) => {
    await expect(mint(signers)).rejects.toThrow(reason);
  });

  it("refuses a step's decision signed for another step: each step has its own nonce", async () => {
    // Both signed with the round's (step 1's) nonce: finance's does not hold for step 2.
    await expect(mint(['lee', 'fay'], 'eu', [1, 1])).rejects.toThrow('the decision of fay does not hold');
    // Signed for their own steps, then listed in the other order by a forged workflow.
    await expect(mint(['fay', 'lee'], 'eu', [2, 1])).rejects.toThrow('the decision of fay does not hold');
  });

  it('refuses when its own policy routes the step to a group nobody is in', async () => {
    await expect(mint(['lee', 'fay'], 'us')).rejects.toThrow('group "finance-us"');
    await expect(mint(['lee', 'fay'], null)).rejects.toThrow('{claims.region}');
  });

  it('takes no standing grant for a level that asks a chain', async () => {
    const grant = { grant: { grant: { grantId: 'g-1' } }, reservationId: 'r-1' } as unknown as GrantApproval;
    await expect(mintWith(grant)).rejects.toThrow('no standing grant covers it');
  });
});
