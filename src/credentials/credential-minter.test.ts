import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { refundOrderContract } from '../../examples/orders/orders-contracts';
import { createCredentialMinter } from './credential-minter';
import type { CredentialMinter, ExecutionApproval } from './credential-minter';
import { verifyCredential } from './credential-token';
import { publicKeyHex, signValue } from '../keys/key-files';
import { checkPolicy } from '../policy/load-policy';
import type { LoadedPolicy } from '../policy/load-policy';
import type {
  DecisionEnvelope,
  EditEnvelope,
  GrantApproval,
  RoundApproval,
  SignedDecision,
  SignedEdit,
} from '../approvals/protocol';
import { approvalNonce, maxCredentialSeconds } from '../approvals/protocol';
import { digestOf } from '../shared/canonical-json';
import type { SignedGrant, StandingGrant } from '../grants/protocol';
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

describe('the credential minter verifies a call run on a standing grant', () => {
  const grantPolicyValue = {
    callers: {
      'support-bot': {
        publicKey: inline(pair()),
        tools: ['refund_order'],
        autonomy: 'reversible',
        limits: { refund_order: { amount_cents: { max: 50_000 } } },
        approval: { ceiling: 'critical', quorum: { critical: 2 } },
      },
      'night-bot': {
        publicKey: inline(pair()),
        tools: ['refund_order'],
        autonomy: 'reversible',
        approval: { ceiling: 'critical' },
      },
      // Runs refunds alone: its calls need no approval at all.
      'ops-bot': { publicKey: inline(pair()), tools: ['refund_order'], autonomy: 'critical' },
    },
    approvers: {
      alice: { publicKey: inline(alice), maxLevel: 'critical' },
      bob: { publicKey: inline(bob), maxLevel: 'irreversible' },
    },
  };
  const grantPolicy = checkPolicy({
    source: 'test',
    registry: createToolRegistry({ tools: [refundOrderContract] }),
    value: grantPolicyValue,
  });
  const nowMs = Date.now();
  const minuteMs = 60 * 1000;
  const issuedAt = new Date(nowMs - 10 * minuteMs).toISOString();
  const expiresAt = new Date(nowMs + 60 * minuteMs).toISOString();
  const usedAt = new Date(nowMs - minuteMs).toISOString();

  const grantOf = (overrides: Partial<StandingGrant> = {}): StandingGrant => ({
    grantId: '6f1c1d0e-1111-4a4a-9b9b-000000000001',
    taskQueue: 'toolgate',
    caller: 'support-bot',
    tool: 'refund_order',
    maxLevel: 'irreversible',
    maxCalls: 3,
    maxAmount: 10_000,
    maxAmountPerCall: 5_000,
    issuedAt,
    expiresAt,
    reason: 'small damaged-goods refunds while the queue is long',
    ...overrides,
  });
  const signedBy = (grant: StandingGrant, key = alice, approver = 'alice'): SignedGrant => ({
    grant,
    signatures: [
      { approver, signature: signValue({ kind: 'grant', value: grant, privateKey: key.privateKey }) },
    ],
  });
  const grantApproval = (signed = signedBy(grantOf()), reservationId = callId): GrantApproval => ({
    grant: signed,
    reservationId,
  });

  type GrantUse = NonNullable<Parameters<typeof createCredentialMinter>[0]['grantUse']>;
  /** The use the grants workflow holds for this very call (its caller, tool, level and amount), taken at `at`. */
  const heldUse = (at: string, overrides: Record<string, unknown> = {}) => ({
    held: true as const,
    usedAt: at,
    callId,
    runId,
    caller: 'support-bot',
    tool: 'refund_order',
    riskLevel: 'irreversible' as const,
    amount: args.amount_cents,
    ...overrides,
  });
  /** A minter whose grants workflow answers `answer` (held since `usedAt` by default), recording what it was asked. */
  const minterWith = (
    input: { grantUse?: GrantUse | null; policy?: LoadedPolicy } = {},
  ): { minter: CredentialMinter; asked: { grantId: string; reservationId: string }[] } => {
    const asked: { grantId: string; reservationId: string }[] = [];
    const grantUse: GrantUse =
      input.grantUse ??
      (async (request) => {
        asked.push(request);
        return heldUse(usedAt);
      });
    const policyHeld = input.policy ?? grantPolicy;
    return {
      asked,
      minter: createCredentialMinter({
        privateKey: minterKeys.privateKey,
        policy: () => policyHeld,
        ...(input.grantUse === null ? {} : { grantUse }),
      }),
    };
  };
  const mintGranted = (
    approval: ExecutionApproval,
    input: { minter?: CredentialMinter; caller?: string; callArgs?: Record<string, unknown> } = {},
  ) =>
    (input.minter ?? minterWith().minter).mint({
      contract: refundOrderContract,
      caller: input.caller ?? 'support-bot',
      callId,
      runId,
      args: input.callArgs ?? args,
      approval,
    });
  const heldAt =
    (at: string): GrantUse =>
    async () =>
      heldUse(at);

  it('mints a credential the backend accepts for a covered call whose use the grants workflow holds', async () => {
    const { minter: granted, asked } = minterWith();
    const token = await mintGranted(grantApproval(), { minter: granted });
    const checked = verifyCredential({
      token,
      minterPublicKeyHex: publicKeyHex(minterKeys.publicKey),
      expected: { op: 'refund_order', resource: 'order:ORD-1003', callId, argsDigest: digestOf(args) },
    });
    expect(checked.ok).toBe(true);
    expect(asked).toEqual([{ grantId: grantOf().grantId, reservationId: callId }]);
  });

  it('mints a call whose use was taken before the grant expired, though it has expired since', async () => {
    const lapsed = grantOf({ expiresAt: new Date(nowMs - minuteMs).toISOString() });
    const { minter: granted } = minterWith({
      grantUse: heldAt(new Date(nowMs - 2 * minuteMs).toISOString()),
    });
    expect(typeof (await mintGranted(grantApproval(signedBy(lapsed)), { minter: granted }))).toBe('string');
  });

  it('mints a call covered by a grant when the call needs no approval, without asking the grants workflow', async () => {
    const { minter: noGrants } = minterWith({ grantUse: null });
    const forOps = signedBy(grantOf({ caller: 'ops-bot' }));
    expect(typeof (await mintGranted(grantApproval(forOps), { minter: noGrants, caller: 'ops-bot' }))).toBe(
      'string',
    );
  });

  const failing: GrantUse = async () => {
    throw new Error('the grants workflow is not running');
  };

  it.each([
    [
      'no way to look up grants',
      () => mintGranted(grantApproval(), { minter: minterWith({ grantUse: null }).minter }),
      'the minter cannot look up standing grants (grant 6f1c1d0e-1111-4a4a-9b9b-000000000001)',
    ],
    [
      "a grant's use by another call",
      () => mintGranted(grantApproval(signedBy(grantOf()), 'tc-other')),
      `was used by another call, not ${callId}`,
    ],
    [
      'a use the grants workflow does not hold',
      () =>
        mintGranted(grantApproval(), {
          minter: minterWith({ grantUse: async () => ({ held: false }) }).minter,
        }),
      `holds no use for call ${callId}`,
    ],
    [
      'a held use without its time',
      () =>
        mintGranted(grantApproval(), {
          minter: minterWith({ grantUse: async () => ({ held: true }) as never }).minter,
        }),
      `holds no use for call ${callId}`,
    ],
    [
      'a grants workflow that does not answer',
      () => mintGranted(grantApproval(), { minter: minterWith({ grantUse: failing }).minter }),
      'the grants workflow did not answer for grant',
    ],
    [
      'a use taken at the moment the grant expired',
      () => mintGranted(grantApproval(), { minter: minterWith({ grantUse: heldAt(expiresAt) }).minter }),
      `does not hold (GRANT_INVALID: the grant expired at ${expiresAt})`,
    ],
    [
      'a use taken after the grant expired',
      () =>
        mintGranted(grantApproval(), {
          minter: minterWith({ grantUse: heldAt(new Date(Date.parse(expiresAt) + minuteMs).toISOString()) })
            .minter,
        }),
      '(GRANT_INVALID: the grant expired at',
    ],
    [
      "a grant whose approver the minter's policy no longer lists",
      () =>
        mintGranted(grantApproval(), {
          minter: minterWith({
            policy: checkPolicy({
              source: 'test',
              registry: createToolRegistry({ tools: [refundOrderContract] }),
              value: { ...grantPolicyValue, approvers: { bob: grantPolicyValue.approvers.bob } },
            }),
          }).minter,
        }),
      'does not hold (APPROVER_UNKNOWN',
    ],
    [
      "a grant whose approver has another key in the minter's policy",
      () =>
        mintGranted(grantApproval(), {
          minter: minterWith({
            policy: checkPolicy({
              source: 'test',
              registry: createToolRegistry({ tools: [refundOrderContract] }),
              value: {
                ...grantPolicyValue,
                approvers: {
                  ...grantPolicyValue.approvers,
                  alice: { publicKey: inline(erin), maxLevel: 'critical' },
                },
              },
            }),
          }).minter,
        }),
      'does not hold (SIGNATURE_INVALID',
    ],
    [
      'a grant signed with another key',
      () => mintGranted(grantApproval(signedBy(grantOf(), bob))),
      'does not hold (SIGNATURE_INVALID',
    ],
    [
      'a grant whose calls were raised after it was signed',
      () => {
        const signed = signedBy(grantOf());
        return mintGranted(grantApproval({ ...signed, grant: { ...signed.grant, maxCalls: 300 } }));
      },
      'does not hold (SIGNATURE_INVALID',
    ],
    [
      'a malformed grant',
      () => mintGranted({ grant: {} as SignedGrant, reservationId: callId }),
      'does not hold (GRANT_INVALID',
    ],
    [
      'a call above the per-call cap',
      () => mintGranted(grantApproval(signedBy(grantOf({ maxAmountPerCall: 2_589 })))),
      'does not cover this call (above the per-call cap)',
    ],
    [
      "a call above the grant's total",
      () => mintGranted(grantApproval(signedBy(grantOf({ maxAmount: 2_000, maxAmountPerCall: undefined })))),
      'does not cover this call (above what is left)',
    ],
    [
      "a call above the grant's risk level",
      () =>
        mintGranted(grantApproval(signedBy(grantOf({ maxAmountPerCall: 50_000, maxAmount: 50_000 }))), {
          callArgs: critical,
        }),
      'does not cover this call (risk level "critical" above its ceiling)',
    ],
    [
      'a grant for another caller',
      () => mintGranted(grantApproval(signedBy(grantOf({ caller: 'night-bot' })))),
      'does not cover this call (another caller or tool)',
    ],
    [
      'a grant for a caller not in the policy',
      () => mintGranted(grantApproval(signedBy(grantOf({ caller: 'stranger-bot' })))),
      'does not hold (CALLER_UNKNOWN',
    ],
    [
      'a grant for another tool',
      () => mintGranted(grantApproval(signedBy(grantOf({ tool: 'cancel_order' })))),
      'does not hold (UNKNOWN_TOOL',
    ],
  ])('refuses %s', async (_case, attempt, message) => {
    await expect(attempt()).rejects.toThrow(expect.objectContaining({ name: 'MintRefusal' }));
    await expect(attempt()).rejects.toThrow(message);
  });

  it.each(['', 'not a time'])(
    'refuses a use whose time is %j rather than judge an expired grant at no time at all',
    async (time) => {
      // What the grants workflow rebuilds when an audit event lacks its recordedAt: ''.
      const lapsed = grantOf({
        issuedAt: '2020-01-01T00:00:00.000Z',
        expiresAt: '2020-01-01T01:00:00.000Z',
      });
      const { minter: granted } = minterWith({ grantUse: heldAt(time) });
      await expect(mintGranted(grantApproval(signedBy(lapsed)), { minter: granted })).rejects.toThrow(
        `holds no use for call ${callId}`,
      );
    },
  );

  it.each([
    ['counted at another amount (a raw use of 0 cents)', { amount: 0 }],
    ['counted for another call', { callId: 'tc-other' }],
    ['counted for another caller', { caller: 'ops-bot' }],
    ['counted at another risk level', { riskLevel: 'reversible' }],
  ])('refuses a use %s', async (_case, overrides) => {
    const { minter: granted } = minterWith({ grantUse: async () => heldUse(usedAt, overrides) });
    await expect(mintGranted(grantApproval(), { minter: granted })).rejects.toThrow(
      'counted its use for another call or amount',
    );
  });

  it('mints a call at exactly the per-call cap and total', async () => {
    const atCap = signedBy(grantOf({ maxAmountPerCall: 2_590, maxAmount: 2_590 }));
    expect(typeof (await mintGranted(grantApproval(atCap)))).toBe('string');
  });
});

describe('the credential minter and edited arguments', () => {
  const edited = { ...args, amount_cents: 2000 };
  const editBy = (
    approver: string,
    key: ReturnType<typeof pair>,
    overrides: Partial<EditEnvelope> = {},
  ): SignedEdit => {
    const envelope: EditEnvelope = {
      callId,
      runId,
      nonce: 'n'.repeat(64),
      argsDigest: digestOf(args),
      previewDigest: digestOf({ preview: 0 }),
      contractDigest,
      editedArgs: edited,
      editedDigest: digestOf(edited),
      approver,
      reason: 'the customer asked for 2,000',
      issuedAt: '2026-12-07T00:00:00Z',
      ...overrides,
    };
    return { envelope, signature: signValue({ kind: 'edit', value: envelope, privateKey: key.privateKey }) };
  };
  const withEdits = (edits: SignedEdit[]): RoundApproval => ({
    ...approvalBy([['alice', alice]], {}, edited),
    edits,
  });

  it('mints for the arguments the last edit signed', async () => {
    const token = await mint(withEdits([editBy('bob', bob)]), edited);
    const checked = verifyCredential({
      token,
      minterPublicKeyHex: publicKeyHex(minterKeys.publicKey),
      expected: { op: 'refund_order', resource: 'order:ORD-1003', callId, argsDigest: digestOf(edited) },
    });
    expect(checked.ok).toBe(true);
  });

  it.each([
    [
      'an edit signed with another approver’s key',
      () => [{ ...editBy('alice', bob) }],
      '(SIGNATURE_INVALID)',
    ],
    ['an edit by an approver who operates the caller', () => [editBy('dave', dave)], '(SELF_APPROVAL)'],
    ['an edit of another call', () => [editBy('bob', bob, { callId: 'tc-other' })], '(DIGEST_MISMATCH)'],
    [
      'an edit whose digest is not its arguments’',
      () => [editBy('bob', bob, { editedDigest: digestOf(args) })],
      '(DIGEST_MISMATCH)',
    ],
    [
      'edits that do not follow one another',
      () => [editBy('bob', bob), editBy('alice', alice, { argsDigest: digestOf({ other: 1 }) })],
      'do not follow one another',
    ],
    [
      'an edit of other arguments than those that run',
      () => [editBy('bob', bob, { editedArgs: args, editedDigest: digestOf(args) })],
      'not the ones the last edit signed',
    ],
  ])('refuses %s', async (_name, edits, reason) => {
    await expect(mint(withEdits(edits()), edited)).rejects.toThrow(reason);
  });

  it('refuses an edit to a level above its editor’s grant', async () => {
    const raised = { ...args, amount_cents: 20_000 };
    const edit = editBy('bob', bob, { editedArgs: raised, editedDigest: digestOf(raised) });
    const approval = {
      ...approvalBy(
        [
          ['alice', alice],
          ['erin', erin],
        ],
        {},
        raised,
      ),
      edits: [edit],
    };
    await expect(mint(approval, raised)).rejects.toThrow('(APPROVER_NOT_ALLOWED)');
  });
});
