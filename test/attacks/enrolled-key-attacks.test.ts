import { createPrivateKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import type {
  ApproverKeysView,
  DecisionEnvelope,
  KeyChain,
  SignedDecision,
  SignedEnrolment,
  SignedInvite,
} from 'toolgate/protocol';
import {
  enrolApproverKey,
  inviteApprover,
  keyChainOf,
  listApproverKeys,
  readApproverKeyStatus,
  revokeApproverKey,
  sendEnrolment,
  signEnrolment,
} from 'toolgate/admin';
import {
  addInviteUpdate,
  approverKeysWorkflowId,
  decideUpdate,
  enrolKeyUpdate,
  keyIdOf,
  signValue,
} from 'toolgate/protocol';
import type { ConsoleProcessPlan } from '../../examples/orders/start';
import { approvalHelpers } from '../support/approval-helpers';
import { caught } from '../support/caught';
import { harnessAuditPath, harnessConsolePlan, harnessPolicy } from '../support/console-helpers';
import { testApprovers } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { createReadGate } from '../support/read-gate';

// Approvers' enrolled keys: enrolment through operator-signed invites, decisions signed with an
// enrolled key, revocation, and what a console server holding every file it can read cannot do.
// Each attack asserts its refusal code and the orders service's count of applied refunds.

let harness: ToolGateHarness;

const { gate, gatedReads } = createReadGate();

useHarness((started) => (harness = started), { ordersApi: gatedReads });

const { appliedRefunds, proposeRefund } = approvalHelpers(() => harness);
const registry = () => ({ client: harness.temporal, taskQueue: harness.taskQueue });
const newKey = (): KeyObject => generateKeyPairSync('ed25519').privateKey;

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

/** An approver's enrolled key, through a fresh invite: its private half and its chain. */
async function enrolled(
  approver = 'alice',
): Promise<{ privateKey: KeyObject; chain: KeyChain; keyId: string }> {
  const { link } = await invite(approver);
  const privateKey = newKey();
  const { outcome, chain } = await enrolApproverKey({ ...registry(), link, privateKey, label: 'laptop' });
  expect(outcome).toMatchObject({ accepted: true });
  if (!chain || !outcome.accepted || !outcome.keyId) throw new Error('not enrolled');
  return { privateKey, chain, keyId: outcome.keyId };
}

/** An envelope for the call's open round. */
async function envelopeFor(callId: string, approver: string): Promise<DecisionEnvelope> {
  const approval = (await harness.admin.show(callId))?.approval;
  if (!approval) throw new Error(`call ${callId} has no approval round`);
  return {
    callId,
    runId: approval.runId,
    nonce: approval.nonce,
    argsDigest: approval.argsDigest,
    previewDigest: approval.previewDigest,
    contractDigest: approval.contractDigest,
    decision: 'approve',
    approver,
    reason: `checked by ${approver}`,
    issuedAt: new Date().toISOString(),
  };
}

const signedWith = (envelope: DecisionEnvelope, privateKey: KeyObject, key?: KeyChain): SignedDecision => ({
  envelope,
  signature: signValue({ kind: 'decision', value: envelope, privateKey }),
  ...(key ? { key } : {}),
});

/** Sends a decision with a raw Temporal client, past the admin side; the refusal code the workflow answered. */
async function sendRaw(callId: string, decision: unknown): Promise<string> {
  const error = await caught(() =>
    harness.temporal.workflow
      .getHandle(callId)
      .executeUpdate(decideUpdate, { args: [decision as SignedDecision], updateId: randomUUID() }),
  );
  return (error as { cause?: { type?: string } }).cause?.type ?? `not a refusal: ${String(error)}`;
}

/** Sends a change to the registry with a raw client; the refusal code (or `accepted`). */
async function registryRaw(send: () => Promise<unknown>): Promise<string> {
  try {
    await send();
    return 'accepted';
  } catch (error) {
    return (error as { cause?: { type?: string } }).cause?.type ?? `not a refusal: ${String(error)}`;
  }
}

const registryHandle = () => harness.temporal.workflow.getHandle(approverKeysWorkflowId(harness.taskQueue));

/** The call still waits with no approvals and nothing was refunded. */
async function expectNothingApplied(callId: string): Promise<void> {
  const state = await harness.admin.show(callId);
  expect(state?.result).toBeUndefined();
  expect(state?.approval).toMatchObject({ state: 'pending', approvals: [] });
  expect(await appliedRefunds()).toBe(0);
}

describe('an approver enrols a key through an operator-signed invite', () => {
  it('approves a refund with the enrolled key: the orders service applies exactly one refund', async () => {
    const key = await enrolled('alice');
    const pending = await proposeRefund();
    const outcome = await harness.admin.decide({
      callId: pending.callId,
      approver: 'alice',
      privateKey: key.privateKey,
      key: key.chain,
      decision: 'approve',
      reason: 'approved from my laptop',
    });
    expect(outcome).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId)).toMatchObject({
      ok: true,
      code: 'OK',
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
    // The registry lists the key; the decision's audit names it; the registry's changes are audited.
    const view = await listApproverKeys({ ...registry(), approver: 'alice' });
    expect(view.keys.find((listed) => listed.keyId === key.keyId)).toMatchObject({
      approver: 'alice',
      label: 'laptop',
      invitedBy: 'olivia',
    });
    expect(await harness.audit.decisionAttemptsOf(pending.callId)).toContainEqual(
      expect.objectContaining({ source: 'admin', outcome: 'accepted', keyId: key.keyId }),
    );
    await expect
      .poll(async () => (await harness.audit.registryEvents()).filter((event) => event.keyId === key.keyId))
      .toContainEqual(
        expect.objectContaining({ action: 'enrolKey', outcome: 'accepted', approver: 'alice' }),
      );
  });

  it('refuses the same invite used twice (INVITE_USED), and the second key cannot approve', async () => {
    const { link, invitePrivateKey, invite: signedInvite } = await invite('alice');
    const first = await enrolApproverKey({ ...registry(), link, privateKey: newKey(), label: 'first' });
    expect(first.outcome).toMatchObject({ accepted: true });
    // Whoever holds the link a second time signs a perfectly valid enrolment for another key.
    const secondKey = newKey();
    const second = signEnrolment({
      inviteId: signedInvite.invite.inviteId,
      approver: 'alice',
      invitePrivateKey,
      privateKey: secondKey,
      label: 'second',
    });
    expect(await sendEnrolment({ ...registry(), enrolment: second })).toMatchObject({
      accepted: false,
      code: 'INVITE_USED',
    });
    expect(
      await enrolApproverKey({ ...registry(), link, privateKey: newKey(), label: 'third' }),
    ).toMatchObject({
      outcome: { accepted: false, code: 'INVITE_USED' },
    });
    // Its chain verifies on its own (operator-signed invite, both signatures): only the registry knows better.
    const pending = await proposeRefund();
    const chain: KeyChain = { invite: signedInvite, enrolment: second };
    const decision = signedWith(await envelopeFor(pending.callId, 'alice'), secondKey, chain);
    expect(await harness.admin.send({ callId: pending.callId, decision })).toMatchObject({
      accepted: false,
      code: 'KEY_UNKNOWN',
    });
    await expectNothingApplied(pending.callId);
  });

  it('refuses an expired invite (INVITE_EXPIRED), at registration and at enrolment', async () => {
    const late = await inviteApprover({
      ...registry(),
      approver: 'alice',
      operator: 'olivia',
      operatorKey: harness.operatorKey('olivia'),
      validForMs: -1_000,
    });
    expect(late.outcome).toMatchObject({ accepted: false, code: 'INVITE_EXPIRED' });
    const brief = await invite('alice', { validForMs: 1_500 });
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(
      await enrolApproverKey({ ...registry(), link: brief.link, privateKey: newKey(), label: 'late' }),
    ).toMatchObject({ outcome: { accepted: false, code: 'INVITE_EXPIRED' } });
  });

  it('refuses an invite signed by a non-operator (SIGNATURE_INVALID) or naming an unknown operator (OPERATOR_UNKNOWN)', async () => {
    const byApprover = await inviteApprover({
      ...registry(),
      approver: 'alice',
      operator: 'olivia',
      operatorKey: harness.approverKey('bob'),
    });
    expect(byApprover.outcome).toMatchObject({ accepted: false, code: 'SIGNATURE_INVALID' });
    const byStranger = await inviteApprover({
      ...registry(),
      approver: 'alice',
      operator: 'mallory',
      operatorKey: harness.operatorKey('mallory'),
    });
    expect(byStranger.outcome).toMatchObject({ accepted: false, code: 'OPERATOR_UNKNOWN' });
    const forNobody = await inviteApprover({
      ...registry(),
      approver: 'zed',
      operator: 'olivia',
      operatorKey: harness.operatorKey('olivia'),
    });
    expect(forNobody.outcome).toMatchObject({ accepted: false, code: 'APPROVER_UNKNOWN' });
    // A refused invite enrols nothing.
    expect(
      await enrolApproverKey({ ...registry(), link: byStranger.link, privateKey: newKey(), label: 'x' }),
    ).toMatchObject({ outcome: { accepted: false, code: 'INVITE_UNKNOWN' } });
  });

  it('refuses an enrolment whose possession or invite signature is wrong (SIGNATURE_INVALID)', async () => {
    const { invite: signedInvite, invitePrivateKey } = await invite('alice');
    const privateKey = newKey();
    const good = signEnrolment({
      inviteId: signedInvite.invite.inviteId,
      approver: 'alice',
      invitePrivateKey,
      privateKey,
      label: 'phone',
    });
    const stranger = newKey();
    const attempts: [string, SignedEnrolment][] = [
      [
        'possession signed by another key',
        {
          ...good,
          keySignature: signValue({ kind: 'enrolment', value: good.enrolment, privateKey: stranger }),
        },
      ],
      [
        'the right to enrol signed by another key',
        {
          ...good,
          inviteSignature: signValue({ kind: 'enrolment', value: good.enrolment, privateKey: stranger }),
        },
      ],
      ['a label changed after signing', { ...good, enrolment: { ...good.enrolment, label: 'admin' } }],
      ['another approver named', { ...good, enrolment: { ...good.enrolment, approver: 'dave' } }],
    ];
    for (const [, enrolment] of attempts) {
      expect(await sendEnrolment({ ...registry(), enrolment })).toMatchObject({
        accepted: false,
        code: 'SIGNATURE_INVALID',
      });
    }
    // The invite is still unused: the right key enrols with it.
    expect(await sendEnrolment({ ...registry(), enrolment: good })).toMatchObject({ accepted: true });
  });
});

describe('decisions signed with an enrolled key', () => {
  it('refuses a decision whose chain names another approver (SIGNATURE_INVALID)', async () => {
    const alices = await enrolled('alice');
    const pending = await proposeRefund();
    // Alice's key, Alice's chain, but an envelope in Dave's name.
    const decision = signedWith(await envelopeFor(pending.callId, 'dave'), alices.privateKey, alices.chain);
    expect(await sendRaw(pending.callId, decision)).toBe('SIGNATURE_INVALID');
    expect(await harness.admin.send({ callId: pending.callId, decision })).toMatchObject({
      accepted: false,
      code: 'SIGNATURE_INVALID',
    });
    await expectNothingApplied(pending.callId);
  });

  it("refuses a revoked key's decision (KEY_REVOKED) sent while the call waited, and applies nothing", async () => {
    const key = await enrolled('alice');
    const pending = await proposeRefund();
    const decision = signedWith(await envelopeFor(pending.callId, 'alice'), key.privateKey, key.chain);
    // Revoked while the call waits, before the decision arrives.
    expect(
      await revokeApproverKey({
        ...registry(),
        keyId: key.keyId,
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
        reason: 'laptop stolen',
      }),
    ).toMatchObject({ accepted: true, keyId: key.keyId });
    expect(await readApproverKeyStatus({ ...registry(), keyId: key.keyId })).toMatchObject({
      status: 'revoked',
    });
    expect(await harness.admin.send({ callId: pending.callId, decision })).toMatchObject({
      accepted: false,
      code: 'KEY_REVOKED',
    });
    expect(await sendRaw(pending.callId, decision)).toBe('KEY_REVOKED');
    await expectNothingApplied(pending.callId);
    await expect
      .poll(async () =>
        (await harness.audit.decisionAttemptsOf(pending.callId)).filter(
          (attempt) => attempt.source === 'workflow',
        ),
      )
      .toContainEqual(expect.objectContaining({ outcome: 'KEY_REVOKED', keyId: key.keyId }));
    // Revoking twice, or by someone who is not an operator, changes nothing.
    const again = { ...registry(), keyId: key.keyId, reason: 'again' };
    expect(
      await revokeApproverKey({ ...again, operator: 'olivia', operatorKey: harness.operatorKey('olivia') }),
    ).toMatchObject({ accepted: false, code: 'KEY_REVOKED' });
    const other = await enrolled('alice');
    expect(
      await revokeApproverKey({
        ...again,
        keyId: other.keyId,
        operator: 'olivia',
        operatorKey: other.privateKey,
      }),
    ).toMatchObject({ accepted: false, code: 'SIGNATURE_INVALID' });
  });

  it('the minter refuses to mint when the key was revoked between approval and execution', async () => {
    const key = await enrolled('alice');
    // An order no other test of this file refunds, so the gate holds this call's re-check and no other read.
    const pending = await proposeRefund({ order_id: 'ORD-1002', currency: 'USD' });
    // The approval is accepted; the call then re-checks the order (step 7b), held here while Olivia revokes.
    const held = new Promise<void>((resolve) => (gate.held = resolve));
    gate.orderId = 'ORD-1002';
    gate.armed = true;
    expect(
      await harness.admin.decide({
        callId: pending.callId,
        approver: 'alice',
        privateKey: key.privateKey,
        key: key.chain,
        decision: 'approve',
        reason: 'fine',
      }),
    ).toMatchObject({ accepted: true, state: 'approved' });
    await held;
    expect(
      await revokeApproverKey({
        ...registry(),
        keyId: key.keyId,
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
        reason: 'revoked after approving',
      }),
    ).toMatchObject({ accepted: true });
    gate.release?.();
    const result = await harness.client.result(pending.callId);
    expect(result).toMatchObject({ ok: false, code: 'PERMISSION_DENIED', effect: 'none' });
    expect(result?.message).toContain('KEY_REVOKED');
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('a console server, given every file it can read, cannot produce a decision the workflow accepts', () => {
  /**
   * Every file the approvals console's process (as `npm start` runs it, examples/orders/start.ts) is
   * configured to read: each existing path among its command's options (its policy, its audit store,
   * with SQLite's side files), every file in its working folder, and every key file its policy names.
   * The program itself (node, tsx, toolgate's modules) is code, not configuration, and is left out.
   */
  function consoleProcessFiles(plan: ConsoleProcessPlan): string[] {
    const options = plan.args.slice(plan.args.indexOf('console') + 1);
    const named = options
      .filter((argument) => isAbsolute(argument) && existsSync(argument))
      // The audit store is named through a link in its own folder (the permission model's grant).
      .map((path) => realpathSync(path))
      .flatMap((path) => [path, `${path}-wal`, `${path}-shm`])
      .filter((path) => existsSync(path));
    const files = new Set([...named.flatMap(filesUnder), ...filesUnder(plan.cwd)]);
    for (const path of [...files].filter((file) => file.endsWith('.json'))) {
      const policy = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      for (const group of ['callers', 'approvers', 'operators']) {
        const entries = (policy[group] ?? {}) as Record<string, { publicKey?: string }>;
        for (const { publicKey } of Object.values(entries)) {
          if (publicKey && !publicKey.startsWith('ed25519:')) files.add(resolve(dirname(path), publicKey));
        }
      }
    }
    return [...files];
  }

  /**
   * What a console server can read: every file its process is configured to read (above), its
   * command line and environment, the registry's contents and the calls' states (its queries), and it
   * holds a Temporal client. Not the approvers' or operators' private keys, nor any invite link's fragment.
   */
  async function consoleServerKnowledge(plan: ConsoleProcessPlan, callIds: string[]) {
    const files = consoleProcessFiles(plan);
    const view: ApproverKeysView = await listApproverKeys(registry());
    const states = await Promise.all(callIds.map((callId) => harness.admin.show(callId)));
    const texts = [
      ...files.map((path) => readFileSync(path, 'latin1')),
      plan.args.join('\n'),
      Object.entries(plan.env).join('\n'),
      JSON.stringify(view),
      JSON.stringify(states),
    ];
    return { files, view, texts };
  }

  it('every private-key-shaped value it can find signs nothing the workflow accepts, and no refund is applied', async () => {
    // Alice enrols a key and approves one refund through the console (which relays, and so sees, it).
    const alices = await enrolled('alice');
    const earlier = await proposeRefund({ amount_cents: 1000 });
    const relayed = signedWith(await envelopeFor(earlier.callId, 'alice'), alices.privateKey, alices.chain);
    expect(await harness.admin.send({ callId: earlier.callId, decision: relayed })).toMatchObject({
      accepted: true,
    });
    expect(await harness.client.result(earlier.callId)).toMatchObject({ ok: true });
    await harness.orders.api.reset();
    // An open invite exists too (its link went to Bob by another channel).
    const openInvite = await invite('bob');
    const target = await proposeRefund();

    const plan = harnessConsolePlan(harness);
    try {
      const known = await consoleServerKnowledge(plan, [earlier.callId, target.callId]);
      // Node's permission model lets it read its code and, besides, its own folder alone (its policy
      // and the link to the audit store): what this search covers.
      const root = resolve(__dirname, '..', '..');
      const code = [join(root, 'src') + sep, join(root, 'node_modules') + sep, join(root, 'package.json')];
      const grants = plan.args
        .filter((argument) => argument.startsWith('--allow-fs-read='))
        .map((argument) => argument.slice('--allow-fs-read='.length));
      expect(
        grants.filter((path) => !code.includes(path) && relative(plan.cwd, path).startsWith('..')),
      ).toEqual([]);
      // It reads its policy and the audit store, and nothing in the keys folder.
      expect(known.files).toContain(join(plan.cwd, 'console-policy.json'));
      expect(known.files).toContain(harnessAuditPath(harness));
      expect(known.files.filter((path) => !relative(harness.keysDirectory, path).startsWith('..'))).toEqual(
        [],
      );

      // The search would find a key where there is one: in the keys folder, Alice's policy key.
      const alicePolicyKey = harnessPolicy(harness).approvers.alice?.publicKeyHex;
      const inKeysFolder = walk(harness.keysDirectory).flatMap((path) =>
        privateKeyShapedValues(readFileSync(path, 'latin1')),
      );
      expect(inKeysFolder.map(publicHexOf)).toContain(alicePolicyKey);
      expect(
        privateKeyShapedValues(
          `seed ${Buffer.from(seedOf(alices.privateKey), 'base64url').toString('hex')}.`,
        ).map(publicHexOf),
      ).toEqual([publicHexOf(alices.privateKey)]);

      // In what the console can read, it finds many such values (digests, nonces, public keys)...
      const candidates = uniqueKeys(known.texts.flatMap(privateKeyShapedValues));
      expect(candidates.length).toBeGreaterThan(10);
      // ... none of them the private half of a key that can approve.
      const approverKeys = new Set([
        ...Object.values(harnessPolicy(harness).approvers).map((approver) => approver.publicKeyHex),
        ...known.view.keys.map((key) => key.enrolment.enrolment.publicKeyHex),
      ]);
      expect(candidates.filter((key) => approverKeys.has(publicHexOf(key)))).toEqual([]);

      // Each one signs a decision in every approver's name (the policy's key), and in Alice's name
      // with her enrolled key's public chain: the workflow refuses every one for its signature.
      const aliceChain = known.view.keys.find((key) => key.keyId === alices.keyId);
      if (!aliceChain) throw new Error('the registry lists the key');
      const publicChain: KeyChain = { invite: aliceChain.invite, enrolment: aliceChain.enrolment };
      const attempts: SignedDecision[] = [];
      for (const key of candidates) {
        for (const approver of testApprovers) {
          attempts.push(signedWith(await envelopeFor(target.callId, approver), key));
        }
        attempts.push(signedWith(await envelopeFor(target.callId, 'alice'), key, publicChain));
      }
      const codes: string[] = [];
      // A few at a time: a workflow takes at most 10 updates in flight.
      for (let start = 0; start < attempts.length; start += 8) {
        codes.push(
          ...(await Promise.all(
            attempts.slice(start, start + 8).map((decision) => sendRaw(target.callId, decision)),
          )),
        );
      }
      expect(codes).toHaveLength(candidates.length * (testApprovers.length + 1));
      expect(new Set(codes)).toEqual(new Set(['SIGNATURE_INVALID']));
      await expectNothingApplied(target.callId);
    } finally {
      rmSync(plan.cwd, { recursive: true, force: true });
    }

    // Nor can it forge its way with keys of its own.
    const envelope = await envelopeFor(target.callId, 'alice');
    const own = newKey();
    const ownInviteKey = generateKeyPairSync('ed25519');
    const aliceKey = (await listApproverKeys(registry())).keys.find((key) => key.keyId === alices.keyId);
    if (!aliceKey) throw new Error('the registry lists the key');
    const publicChain: KeyChain = { invite: aliceKey.invite, enrolment: aliceKey.enrolment };

    // 1. A chain forged with its own keys: an invite "by olivia" signed with its own key.
    const forgedInvite: SignedInvite = {
      invite: {
        inviteId: `inv-${randomUUID()}`,
        approver: 'alice',
        invitePublicKeyHex: publicHexOf(ownInviteKey.privateKey),
        operator: 'olivia',
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
      signature: '',
    };
    forgedInvite.signature = signValue({ kind: 'invite', value: forgedInvite.invite, privateKey: own });
    const forgedEnrolment = signEnrolment({
      inviteId: forgedInvite.invite.inviteId,
      approver: 'alice',
      invitePrivateKey: seedOf(ownInviteKey.privateKey),
      privateKey: own,
      label: 'console',
    });
    const forgedChain: KeyChain = { invite: forgedInvite, enrolment: forgedEnrolment };
    expect(await sendRaw(target.callId, signedWith(envelope, own, forgedChain))).toBe('SIGNATURE_INVALID');
    // ... nor can it register that invite, or one in the name of an operator it made up.
    expect(
      await registryRaw(() => registryHandle().executeUpdate(addInviteUpdate, { args: [forgedInvite] })),
    ).toBe('SIGNATURE_INVALID');
    expect(
      await registryRaw(() =>
        registryHandle().executeUpdate(addInviteUpdate, {
          args: [{ ...forgedInvite, invite: { ...forgedInvite.invite, operator: 'console' } }],
        }),
      ),
    ).toBe('OPERATOR_UNKNOWN');

    // 2. Alice's real (public) chain with its own key signing the envelope.
    expect(await sendRaw(target.callId, signedWith(envelope, own, publicChain))).toBe('SIGNATURE_INVALID');
    // ... or her enrolment with its own key swapped in (the signatures no longer cover it).
    const swapped: KeyChain = {
      ...publicChain,
      enrolment: {
        ...publicChain.enrolment,
        enrolment: { ...publicChain.enrolment.enrolment, publicKeyHex: publicHexOf(own) },
      },
    };
    expect(await sendRaw(target.callId, signedWith(envelope, own, swapped))).toBe('SIGNATURE_INVALID');
    // ... or without any chain, with her policy key's name on it.
    expect(await sendRaw(target.callId, signedWith(envelope, own))).toBe('SIGNATURE_INVALID');

    // 3. Replaying the decision it relayed before: another call's round.
    expect(await sendRaw(target.callId, relayed)).toBe('DIGEST_MISMATCH');
    expect(await harness.admin.send({ callId: earlier.callId, decision: relayed })).toMatchObject({
      accepted: false,
      code: 'ALREADY_DECIDED',
    });

    // 4. Enrolling its own key through the used invite (its signatures copied) or the open one.
    const usedInviteId = publicChain.invite.invite.inviteId;
    const throughUsed: SignedEnrolment = {
      enrolment: {
        inviteId: usedInviteId,
        approver: 'alice',
        publicKeyHex: publicHexOf(own),
        label: 'console',
      },
      inviteSignature: publicChain.enrolment.inviteSignature,
      keySignature: '',
    };
    throughUsed.keySignature = signValue({
      kind: 'enrolment',
      value: throughUsed.enrolment,
      privateKey: own,
    });
    expect(
      await registryRaw(() => registryHandle().executeUpdate(enrolKeyUpdate, { args: [throughUsed] })),
    ).toBe('INVITE_USED');
    const openInviteId = openInvite.invite.invite.inviteId;
    const throughOpen = signEnrolment({
      inviteId: openInviteId,
      approver: 'bob',
      invitePrivateKey: seedOf(ownInviteKey.privateKey),
      privateKey: own,
      label: 'console',
    });
    expect(
      await registryRaw(() => registryHandle().executeUpdate(enrolKeyUpdate, { args: [throughOpen] })),
    ).toBe('SIGNATURE_INVALID');
    // Its key is in no registry: nothing it signs counts.
    expect(await readApproverKeyStatus({ ...registry(), keyId: keyIdOf(publicHexOf(own)) })).toEqual({
      status: 'unknown',
    });
    expect(await keyChainOf({ ...registry(), keyId: keyIdOf(publicHexOf(own)) })).toBeUndefined();

    await expectNothingApplied(target.callId);
  });
});

/** A file, or every file under a folder. */
function filesUnder(path: string): string[] {
  return statSync(path).isDirectory() ? walk(path) : [path];
}

// An Ed25519 private key's PKCS#8 wrapping around its 32-byte seed.
const pkcs8Ed25519Prefix = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * Every value in `text` shaped like an Ed25519 private key: a PEM private key, or 32 bytes written as
 * hex, base64url (an invite link's fragment, a JWK's `d`) or base64, each made into a signing key.
 */
function privateKeyShapedValues(text: string): KeyObject[] {
  const keys: KeyObject[] = [];
  const pems =
    text.match(/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g) ?? [];
  for (const pem of pems) {
    try {
      const key = createPrivateKey(pem);
      if (key.asymmetricKeyType === 'ed25519') keys.push(key);
    } catch {
      // Not a key after all.
    }
  }
  const seeds = [
    ...(text.match(/(?<![0-9A-Fa-f])[0-9A-Fa-f]{64}(?![0-9A-Fa-f])/g) ?? []).map((hex) =>
      Buffer.from(hex, 'hex'),
    ),
    ...(text.match(/(?<![\w-])[\w-]{43}(?![\w-=])/g) ?? []).map((value) => Buffer.from(value, 'base64url')),
    ...(text.match(/(?<![\w+/])[\w+/]{43}=/g) ?? []).map((value) => Buffer.from(value, 'base64')),
  ];
  for (const seed of seeds) {
    if (seed.length !== 32) continue;
    keys.push(
      createPrivateKey({ key: Buffer.concat([pkcs8Ed25519Prefix, seed]), format: 'der', type: 'pkcs8' }),
    );
  }
  return keys;
}

/** The keys, each once (by public key). */
function uniqueKeys(keys: KeyObject[]): KeyObject[] {
  return [...new Map(keys.map((key) => [publicHexOf(key), key])).values()];
}

function walk(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(directory, entry.name)) : [join(directory, entry.name)],
  );
}

function publicHexOf(privateKey: KeyObject): string {
  const jwk = privateKey.export({ format: 'jwk' }) as { x: string };
  return Buffer.from(jwk.x, 'base64url').toString('hex');
}

function seedOf(privateKey: KeyObject): string {
  return (privateKey.export({ format: 'jwk' }) as { d: string }).d;
}
