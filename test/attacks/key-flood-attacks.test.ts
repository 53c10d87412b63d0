import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type {
  DecisionEnvelope,
  KeyChain,
  SignedDecision,
  SignedInvite,
  SignedKeyRevocation,
} from 'toolgate/protocol';
import {
  enrolApproverKey,
  inviteApprover,
  parseInviteLink,
  revokeApproverKey,
  signEnrolment,
} from 'toolgate/admin';
import {
  addInviteUpdate,
  approverKeysWorkflowId,
  decideUpdate,
  revokeKeyUpdate,
  signValue,
} from 'toolgate/protocol';
import { approvalHelpers } from '../support/approval-helpers';
import { caught } from '../support/caught';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Refused decisions and registry changes must not reach history, or whoever holds a revoked key, an
// old invite link or nothing at all could fill a waiting call's (or the registry's) history until
// its workflow tasks time out and its update budget runs out. Each attack counts the accepted
// updates in history, asserts every refusal's exact code, and ends with the legitimate approver
// deciding and the orders service applying exactly one refund.

let harness: ToolGateHarness;
useHarness((started) => (harness = started));

const { appliedRefunds, proposeRefund } = approvalHelpers(() => harness);
const registry = () => ({ client: harness.temporal, taskQueue: harness.taskQueue });
const newKey = (): KeyObject => generateKeyPairSync('ed25519').privateKey;
/** What a call's round takes in its handler per invite before its validator stops asking the registry (approval-round.ts). */
const keyAttemptsPerInvite = 16;

/** Olivia (an operator in the policy) invites `approver`. */
async function invite(approver = 'alice', options: { validForMs?: number } = {}) {
  const created = await inviteApprover({
    ...registry(),
    approver,
    operator: 'olivia',
    operatorKey: harness.operatorKey('olivia'),
    ...options,
  });
  expect(created.outcome).toMatchObject({ accepted: true });
  return created;
}

/** An approver's key enrolled through `link` (a fresh invite by default): its private half, chain and id. */
async function enrolled(approver = 'alice', link?: string) {
  const privateKey = newKey();
  const { outcome, chain } = await enrolApproverKey({
    ...registry(),
    link: link ?? (await invite(approver)).link,
    privateKey,
    label: 'laptop',
  });
  expect(outcome).toMatchObject({ accepted: true });
  if (!chain || !outcome.accepted || !outcome.keyId) throw new Error('not enrolled');
  return { privateKey, chain, keyId: outcome.keyId };
}

/** A key chain for `privateKey` made by whoever holds an invite link: valid signatures, never enrolled. */
function mintedChain(input: { link: string; invite: SignedInvite; privateKey: KeyObject }): KeyChain {
  const { inviteId, invitePrivateKey } = parseInviteLink(input.link);
  return {
    invite: input.invite,
    enrolment: signEnrolment({
      inviteId,
      approver: input.invite.invite.approver,
      invitePrivateKey,
      privateKey: input.privateKey,
      label: 'minted',
    }),
  };
}

/** The open round's envelope for `approver`; `attempt` makes each one (and its signature) distinct. */
async function envelopeFor(callId: string, approver: string): Promise<(attempt: number) => DecisionEnvelope> {
  const approval = (await harness.admin.show(callId))?.approval;
  if (!approval) throw new Error(`call ${callId} has no approval round`);
  return (attempt) => ({
    callId,
    runId: approval.runId,
    nonce: approval.nonce,
    argsDigest: approval.argsDigest,
    previewDigest: approval.previewDigest,
    contractDigest: approval.contractDigest,
    decision: 'approve',
    approver,
    reason: `attempt ${attempt}`,
    issuedAt: new Date(Date.now() + attempt).toISOString(),
  });
}

const signedWith = (envelope: DecisionEnvelope, privateKey: KeyObject, key: KeyChain): SignedDecision => ({
  envelope,
  signature: signValue({ kind: 'decision', value: envelope, privateKey }),
  key,
});

/** Sends a decision with a raw Temporal client, past the admin side: the refusal's code and message. */
async function sendRaw(callId: string, decision: SignedDecision): Promise<{ code: string; message: string }> {
  const error = await caught(() =>
    harness.temporal.workflow
      .getHandle(callId)
      .executeUpdate(decideUpdate, { args: [decision], updateId: randomUUID() }),
  );
  const cause = (error as { cause?: { type?: string; message?: string } }).cause;
  return { code: cause?.type ?? `not a refusal: ${String(error)}`, message: cause?.message ?? '' };
}

/** Sends a change to the registry with a raw client: the refusal's code, or `accepted`. */
async function registryRaw(send: () => Promise<unknown>): Promise<string> {
  try {
    await send();
    return 'accepted';
  } catch (error) {
    return (error as { cause?: { type?: string } }).cause?.type ?? `not a refusal: ${String(error)}`;
  }
}

/** How many updates a workflow's history accepted (each is ~6 events, refused in its handler or not). */
async function acceptedUpdates(workflowId: string): Promise<number> {
  const history = await harness.temporal.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((event) => event.workflowExecutionUpdateAcceptedEventAttributes)
    .length;
}

/** Approves with a legitimately enrolled key: accepted, the refund runs once. */
async function approveWith(callId: string, key: { privateKey: KeyObject; chain: KeyChain }) {
  expect(
    await harness.admin.decide({
      callId,
      approver: 'alice',
      privateKey: key.privateKey,
      key: key.chain,
      decision: 'approve',
      reason: 'approved with my enrolled key',
    }),
  ).toMatchObject({ accepted: true, state: 'approved' });
  expect(await harness.client.result(callId)).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
  expect(await appliedRefunds()).toBe(1);
}

describe('decisions signed with keys the registry refused do not flood a waiting call', () => {
  it('a revoked key: only its first attempt reaches history, every attempt is KEY_REVOKED and audited', async () => {
    const lost = await enrolled('alice');
    expect(
      await revokeApproverKey({
        ...registry(),
        keyId: lost.keyId,
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
        reason: 'phone lost',
      }),
    ).toMatchObject({ accepted: true });
    const laptop = await enrolled('alice');
    const { callId } = await proposeRefund();
    const envelope = await envelopeFor(callId, 'alice');
    const before = await acceptedUpdates(callId);

    const attempts = 30;
    const codes: string[] = [];
    for (let attempt = 0; attempt < attempts; attempt++) {
      codes.push((await sendRaw(callId, signedWith(envelope(attempt), lost.privateKey, lost.chain))).code);
    }
    expect(codes).toEqual(Array.from({ length: attempts }, () => 'KEY_REVOKED'));
    // The first asked the registry (an accepted update, refused in the handler); the rest were
    // refused by the validator from what the call learned, and left no trace in history.
    expect((await acceptedUpdates(callId)) - before).toBe(1);
    // Every attempt still reaches the audit store.
    await expect
      .poll(
        async () =>
          (await harness.audit.decisionAttemptsOf(callId)).filter(
            (entry) => entry.source === 'workflow' && entry.outcome === 'KEY_REVOKED',
          ).length,
      )
      .toBe(attempts);
    expect(await appliedRefunds()).toBe(0);

    await approveWith(callId, laptop);
  });

  it('a revoked key sent by 8 senders at once: history takes at most the updates in flight before the first answer', async () => {
    const lost = await enrolled('alice');
    await revokeApproverKey({
      ...registry(),
      keyId: lost.keyId,
      operator: 'olivia',
      operatorKey: harness.operatorKey('olivia'),
      reason: 'laptop stolen',
    });
    const laptop = await enrolled('alice');
    const { callId } = await proposeRefund();
    const envelope = await envelopeFor(callId, 'alice');
    const before = await acceptedUpdates(callId);

    const attempts = 200;
    let next = 0;
    const codes = new Map<string, number>();
    const sender = async () => {
      while (next < attempts) {
        const attempt = next++;
        const { code } = await sendRaw(callId, signedWith(envelope(attempt), lost.privateKey, lost.chain));
        codes.set(code, (codes.get(code) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    expect(Object.fromEntries(codes)).toEqual({ KEY_REVOKED: attempts });
    // Temporal holds at most 10 updates in flight; once one answer is learned, the rest stop at the validator.
    expect((await acceptedUpdates(callId)) - before).toBeLessThanOrEqual(10);

    await approveWith(callId, laptop);
  });

  it('many fresh keys chained to a used invite: one reaches history, all are KEY_UNKNOWN, its own key still approves', async () => {
    const { link, invite: usedInvite } = await invite('alice');
    const own = await enrolled('alice', link);
    // Eve finds the used link later (a chat log) and mints a chain for key after key.
    const { callId } = await proposeRefund();
    const envelope = await envelopeFor(callId, 'alice');
    const before = await acceptedUpdates(callId);

    const attempts = 30;
    const codes: string[] = [];
    for (let attempt = 0; attempt < attempts; attempt++) {
      const eve = newKey();
      const chain = mintedChain({ link, invite: usedInvite, privateKey: eve });
      codes.push((await sendRaw(callId, signedWith(envelope(attempt), eve, chain))).code);
    }
    expect(codes).toEqual(Array.from({ length: attempts }, () => 'KEY_UNKNOWN'));
    expect((await acceptedUpdates(callId)) - before).toBe(1);
    expect(await appliedRefunds()).toBe(0);

    // The key that did enrol through that invite is not caught by what the call learned of it.
    await approveWith(callId, own);
  });

  it('keys chained to an invite that expired unused: one reaches history, all are KEY_UNKNOWN', async () => {
    const brief = await invite('alice', { validForMs: 1_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const laptop = await enrolled('alice');
    const { callId } = await proposeRefund();
    const envelope = await envelopeFor(callId, 'alice');
    const before = await acceptedUpdates(callId);

    const codes: string[] = [];
    for (let attempt = 0; attempt < 10; attempt++) {
      const key = newKey();
      const chain = mintedChain({ link: brief.link, invite: brief.invite, privateKey: key });
      codes.push((await sendRaw(callId, signedWith(envelope(attempt), key, chain))).code);
    }
    expect(new Set(codes)).toEqual(new Set(['KEY_UNKNOWN']));
    expect((await acceptedUpdates(callId)) - before).toBe(1);

    await approveWith(callId, laptop);
  });

  it('keys chained to an open invite: the round takes a bounded number of them in its handler, then only verified keys; another invite’s new key still approves', async () => {
    // Whoever holds an open invite's link signs with key after key instead of enrolling one: the
    // registry cannot refuse such keys for good (each could still be enrolled), so the cap does.
    const open = await invite('alice');
    const { callId } = await proposeRefund();
    const envelope = await envelopeFor(callId, 'alice');
    const before = await acceptedUpdates(callId);

    const attempts = keyAttemptsPerInvite + 10;
    const refusals: { code: string; message: string }[] = [];
    for (let attempt = 0; attempt < attempts; attempt++) {
      const key = newKey();
      const chain = mintedChain({ link: open.link, invite: open.invite, privateKey: key });
      refusals.push(await sendRaw(callId, signedWith(envelope(attempt), key, chain)));
    }
    expect(new Set(refusals.map((refusal) => refusal.code))).toEqual(new Set(['KEY_UNKNOWN']));
    expect(
      refusals.slice(keyAttemptsPerInvite).every((refusal) => refusal.message.includes('already verified')),
    ).toBe(true);
    expect((await acceptedUpdates(callId)) - before).toBe(keyAttemptsPerInvite);

    // The flooded invite stops only itself: a key Alice enrolled just now, through her own invite,
    // never verified in this call, still approves, and the refund runs once.
    const newlyEnrolled = await enrolled('alice');
    await approveWith(callId, newlyEnrolled);
    expect((await acceptedUpdates(callId)) - before).toBe(keyAttemptsPerInvite + 1);
  });

  it('keys chained to an open invite, sent in bursts of 10: the handler takes no more than the cap', async () => {
    // Bob's invite link leaked (Bob may approve irreversible calls only); Alice's browser key was
    // enrolled before the call and is never verified in it.
    const laptop = await enrolled('alice');
    const open = await invite('bob');
    const { callId } = await proposeRefund();
    const envelope = await envelopeFor(callId, 'bob');
    const before = await acceptedUpdates(callId);
    const send = (attempt: number) => {
      const key = newKey();
      const chain = mintedChain({ link: open.link, invite: open.invite, privateKey: key });
      return sendRaw(callId, signedWith(envelope(attempt), key, chain));
    };
    const refusals: { code: string; message: string }[] = [];
    for (let burst = 0; burst < 4; burst++) {
      refusals.push(
        ...(await Promise.all(Array.from({ length: 10 }, (_, index) => send(burst * 10 + index)))),
      );
    }
    expect(new Set(refusals.map((refusal) => refusal.code))).toEqual(new Set(['KEY_UNKNOWN']));
    expect((await acceptedUpdates(callId)) - before).toBeLessThanOrEqual(keyAttemptsPerInvite);
    expect(await appliedRefunds()).toBe(0);

    // Alice's browser key, on another invite, still approves.
    await approveWith(callId, laptop);
  });
});

describe('forged operator requests do not reach the registry history', () => {
  it('refuses forged invites and revocations in the validator; the operator still invites and revokes', async () => {
    // A registry that has asked the policy once (any operator request) knows the operators' keys.
    const target = await enrolled('alice');
    const registryId = approverKeysWorkflowId(harness.taskQueue);
    const handle = harness.temporal.workflow.getHandle(registryId);
    const before = await acceptedUpdates(registryId);

    const forger = newKey();
    const forgedInvite = (operator: string, privateKey: KeyObject): SignedInvite => {
      const value = {
        inviteId: `inv-forged-${randomUUID()}`,
        approver: 'alice',
        invitePublicKeyHex: 'ab'.repeat(32),
        operator,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      };
      return { invite: value, signature: signValue({ kind: 'invite', value, privateKey }) };
    };
    const forgedRevocation = (operator: string, privateKey: KeyObject): SignedKeyRevocation => {
      const revocation = {
        keyId: target.keyId,
        operator,
        reason: 'forged',
        issuedAt: new Date().toISOString(),
      };
      return { revocation, signature: signValue({ kind: 'key-revocation', value: revocation, privateKey }) };
    };

    const codes: string[] = [];
    for (let attempt = 0; attempt < 10; attempt++) {
      // In Olivia's name with the forger's key; in the name of Mallory, who is in no policy, with hers.
      for (const [operator, key] of [
        ['olivia', forger],
        ['mallory', harness.operatorKey('mallory')],
      ] as const) {
        codes.push(
          await registryRaw(() =>
            handle.executeUpdate(addInviteUpdate, { args: [forgedInvite(operator, key)] }),
          ),
          await registryRaw(() =>
            handle.executeUpdate(revokeKeyUpdate, { args: [forgedRevocation(operator, key)] }),
          ),
        );
      }
    }
    expect(new Set(codes)).toEqual(new Set(['SIGNATURE_INVALID', 'OPERATOR_UNKNOWN']));
    expect(codes.filter((code) => code === 'SIGNATURE_INVALID')).toHaveLength(20);
    expect((await acceptedUpdates(registryId)) - before).toBe(0);
    // Refused in the validator, every attempt is still audited.
    await expect
      .poll(
        async () =>
          (await harness.audit.registryEvents()).filter(
            (event) => event.keyId === target.keyId && event.outcome === 'SIGNATURE_INVALID',
          ).length,
      )
      .toBe(10);

    // Olivia's own requests still go through, and the forged revocations revoked nothing.
    await invite('alice');
    const { callId } = await proposeRefund();
    await approveWith(callId, target);
    expect(
      await revokeApproverKey({
        ...registry(),
        keyId: target.keyId,
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
        reason: 'laptop retired',
      }),
    ).toMatchObject({ accepted: true, keyId: target.keyId });
    expect((await acceptedUpdates(registryId)) - before).toBe(2);
  });
});
