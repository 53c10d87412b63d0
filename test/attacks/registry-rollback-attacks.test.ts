import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { KeyChain, SignedInvite } from 'toolgate/protocol';
import { openSqliteAuditStore } from 'toolgate';
import {
  enrolApproverKey,
  inviteApprover,
  listApproverKeys,
  parseInviteLink,
  readApproverKeyStatus,
  revokeApproverKey,
  sendEnrolment,
  signEnrolment,
} from 'toolgate/admin';
import { addInviteUpdate, approverKeysWorkflowId, approverKeysWorkflowType } from 'toolgate/protocol';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// The approver-key registry is a workflow: whoever holds a raw Temporal client (the forger of
// docs/design.md's Approval section) can reset it to before a revocation, or terminate it and replay the
// public, operator-signed invites into a fresh run. The audit store, append-only, remembers what the
// registry forgets: the key lookups and the registry's own handlers consult it. Each attack asserts
// its refusal code and the orders service's count of applied refunds.

let harness: ToolGateHarness;
useHarness((started) => (harness = started));

const { appliedRefunds, proposeRefund } = approvalHelpers(() => harness);
const registry = () => ({ client: harness.temporal, taskQueue: harness.taskQueue });
const newKey = (): KeyObject => generateKeyPairSync('ed25519').privateKey;
const registryId = () => approverKeysWorkflowId(harness.taskQueue);

/** `temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_NONE`: the rolled-back updates stay rolled back. */
const resetReapplyNone = 2;

/** Olivia (an operator in the policy) invites alice. */
async function invite() {
  const created = await inviteApprover({
    ...registry(),
    approver: 'alice',
    operator: 'olivia',
    operatorKey: harness.operatorKey('olivia'),
  });
  expect(created.outcome).toMatchObject({ accepted: true });
  return created;
}

/** Enrols a new key through `link`; the outcome, the key and its chain (when accepted). */
async function enrolThrough(link: string) {
  const privateKey = newKey();
  const { outcome, chain } = await enrolApproverKey({ ...registry(), link, privateKey, label: 'laptop' });
  return { outcome, privateKey, chain, keyId: outcome.accepted ? outcome.keyId : undefined };
}

/** A chain the holder of a leaked link builds alone: the public signed invite and an enrolment of a key of its own. */
function selfMadeChain(input: { invite: SignedInvite; link: string; privateKey: KeyObject }): KeyChain {
  const { inviteId, invitePrivateKey } = parseInviteLink(input.link);
  return {
    invite: input.invite,
    enrolment: signEnrolment({
      inviteId,
      approver: input.invite.invite.approver,
      invitePrivateKey,
      privateKey: input.privateKey,
      label: 'not mine',
    }),
  };
}

/** Alice's approval of `callId` signed with an enrolled key, through the admin side. */
const approveAsAlice = (callId: string, key: { privateKey: KeyObject; chain: KeyChain }) =>
  harness.admin.decide({
    callId,
    approver: 'alice',
    privateKey: key.privateKey,
    key: key.chain,
    decision: 'approve',
    reason: 'looks fine',
  });

/** Waits until the worker's sink recorded an accepted change of `action` naming `keyId`. */
async function auditedChange(action: 'enrolKey' | 'revokeKey', keyId: string): Promise<void> {
  await expect
    .poll(async () =>
      (await harness.audit.registryEvents()).some(
        (event) => event.action === action && event.outcome === 'accepted' && event.keyId === keyId,
      ),
    )
    .toBe(true);
}

/** Resets the registry, with a raw client, to the last workflow task before the last `update` it accepted. */
async function resetRegistryBefore(update: 'enrolKey' | 'revokeKey'): Promise<void> {
  const handle = harness.temporal.workflow.getHandle(registryId());
  const { runId } = await handle.describe();
  const events = (await handle.fetchHistory()).events ?? [];
  const acceptedAt = events
    .map((event) => event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name)
    .lastIndexOf(update);
  expect(acceptedAt).toBeGreaterThan(0);
  const before = events
    .slice(0, acceptedAt)
    .filter((event) => event.workflowTaskCompletedEventAttributes)
    .at(-1);
  if (!before?.eventId) throw new Error(`no workflow task before the ${update} update`);
  await harness.temporal.workflowService.resetWorkflowExecution({
    namespace: harness.temporal.options.namespace,
    workflowExecution: { workflowId: registryId(), runId },
    reason: `attack: roll back ${update}`,
    workflowTaskFinishEventId: before.eventId,
    requestId: randomUUID(),
    resetReapplyType: resetReapplyNone,
  });
}

/** The call still waits with no approvals and nothing was refunded. */
async function expectNothingApplied(callId: string): Promise<void> {
  const state = await harness.admin.show(callId);
  expect(state?.result).toBeUndefined();
  expect(state?.approval).toMatchObject({ state: 'pending', approvals: [] });
  expect(await appliedRefunds()).toBe(0);
}

describe('a registry rolled back by a raw Temporal client', () => {
  it('refuses a revoked key after a reset to before its revocation (KEY_REVOKED): the round stays pending, nothing is refunded', async () => {
    const created = await invite();
    const stolen = await enrolThrough(created.link);
    if (!stolen.keyId || !stolen.chain) throw new Error('not enrolled');
    // The admin side records the revocation in its own audit store as well: this one has no worker sink behind it.
    const adminAudit = openSqliteAuditStore({ path: ':memory:' });
    try {
      expect(
        await revokeApproverKey({
          ...registry(),
          audit: adminAudit,
          keyId: stolen.keyId,
          operator: 'olivia',
          operatorKey: harness.operatorKey('olivia'),
          reason: 'laptop stolen',
        }),
      ).toMatchObject({ accepted: true });
      await auditedChange('revokeKey', stolen.keyId);

      // The thief resets the registry to the last task before the revocation: it holds the key enrolled again.
      await resetRegistryBefore('revokeKey');
      await expect
        .poll(async () => (await readApproverKeyStatus({ ...registry(), keyId: stolen.keyId! })).status, {
          timeout: 20_000,
        })
        .toBe('enrolled');
      // Every lookup given an audit store says revoked: the worker's, and the admin's alone.
      for (const audit of [harness.audit, adminAudit]) {
        expect(await readApproverKeyStatus({ ...registry(), audit, keyId: stolen.keyId })).toMatchObject({
          status: 'revoked',
          key: { keyId: stolen.keyId, revoked: { operator: 'olivia', reason: 'laptop stolen' } },
        });
      }
    } finally {
      await adminAudit.close();
    }

    const pending = await proposeRefund();
    expect(
      await approveAsAlice(pending.callId, { privateKey: stolen.privateKey, chain: stolen.chain }),
    ).toMatchObject({
      accepted: false,
      code: 'KEY_REVOKED',
    });
    await expectNothingApplied(pending.callId);
  });

  it('refuses a used invite after a reset to before its use (INVITE_USED), and the self-made key is KEY_UNKNOWN', async () => {
    const created = await invite();
    const alices = await enrolThrough(created.link);
    if (!alices.keyId) throw new Error('not enrolled');
    await auditedChange('enrolKey', alices.keyId);

    // Reset to before alice's enrolment: the registry holds her invite open again, her key unknown.
    await resetRegistryBefore('enrolKey');
    await expect
      .poll(async () => (await readApproverKeyStatus({ ...registry(), keyId: alices.keyId! })).status, {
        timeout: 20_000,
      })
      .toBe('unknown');

    // The leaked link cannot enrol the attacker's key: the registry's handler asks the audit store.
    const attackers = await enrolThrough(created.link);
    expect(attackers.outcome).toMatchObject({ accepted: false, code: 'INVITE_USED' });
    expect(
      await readApproverKeyStatus({
        ...registry(),
        audit: harness.audit,
        keyId: attackers.keyId ?? 'none',
        inviteId: created.invite.invite.inviteId,
      }),
    ).toEqual({ status: 'unknown', invite: { status: 'used', by: alices.keyId } });

    // A chain it builds alone verifies, but the key is enrolled nowhere.
    const pending = await proposeRefund();
    const privateKey = newKey();
    const chain = selfMadeChain({ invite: created.invite, link: created.link, privateKey });
    expect(await approveAsAlice(pending.callId, { privateKey, chain })).toMatchObject({
      accepted: false,
      code: 'KEY_UNKNOWN',
    });
    await expectNothingApplied(pending.callId);
  });

  it('refuses a used invite sent again into a fresh registry after a terminate (INVITE_USED): the leaked link enrols nothing', async () => {
    const created = await invite();
    const alices = await enrolThrough(created.link);
    if (!alices.keyId) throw new Error('not enrolled');
    await auditedChange('enrolKey', alices.keyId);
    const leakedLink = created.link;
    expect((await enrolThrough(leakedLink)).outcome).toMatchObject({ accepted: false, code: 'INVITE_USED' });

    // The attacker reads the signed invite (public in the registry's view), terminates the registry,
    // starts a fresh one and sends the invite again.
    const view = await listApproverKeys(registry());
    const signedInvite = view.invites.find(
      (held) => held.invite.invite.inviteId === created.invite.invite.inviteId,
    )!.invite;
    await harness.temporal.workflow.getHandle(registryId()).terminate('attack: a fresh registry');
    const fresh = await harness.temporal.workflow.start(approverKeysWorkflowType, {
      workflowId: registryId(),
      taskQueue: harness.taskQueue,
      args: [{}],
    });
    const refusal = await fresh
      .executeUpdate(addInviteUpdate, { args: [signedInvite], updateId: randomUUID() })
      .then(
        () => 'accepted',
        (error: { cause?: { type?: string } }) => error.cause?.type,
      );
    expect(refusal).toBe('INVITE_USED');

    // The leaked link enrols nothing, through the admin side or sent as signed.
    expect((await enrolThrough(leakedLink)).outcome).toMatchObject({
      accepted: false,
      code: 'INVITE_UNKNOWN',
    });
    const privateKey = newKey();
    const chain = selfMadeChain({ invite: signedInvite, link: leakedLink, privateKey });
    expect(await sendEnrolment({ ...registry(), enrolment: chain.enrolment })).toMatchObject({
      accepted: false,
      code: 'INVITE_UNKNOWN',
    });

    // Its key, with the chain it builds alone, approves nothing.
    const pending = await proposeRefund();
    expect(await approveAsAlice(pending.callId, { privateKey, chain })).toMatchObject({
      accepted: false,
      code: 'KEY_UNKNOWN',
    });
    await expectNothingApplied(pending.callId);
  });

  it('still lets an approver enrol a key and approve with it: the orders service applies exactly one refund', async () => {
    const created = await invite();
    const key = await enrolThrough(created.link);
    if (!key.keyId || !key.chain) throw new Error('not enrolled');
    expect(
      await readApproverKeyStatus({ ...registry(), audit: harness.audit, keyId: key.keyId }),
    ).toMatchObject({ status: 'enrolled', key: { keyId: key.keyId } });
    const pending = await proposeRefund();
    expect(
      await approveAsAlice(pending.callId, { privateKey: key.privateKey, chain: key.chain }),
    ).toMatchObject({
      accepted: true,
      state: 'approved',
    });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);

    // Revoked through the admin side with the worker's audit store: one record, the sink's and the admin's.
    expect(
      await revokeApproverKey({
        ...registry(),
        audit: harness.audit,
        keyId: key.keyId,
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
        reason: 'rotated',
      }),
    ).toMatchObject({ accepted: true });
    await auditedChange('revokeKey', key.keyId);
    expect(
      (await harness.audit.registryEvents()).filter(
        (event) => event.action === 'revokeKey' && event.keyId === key.keyId,
      ),
    ).toHaveLength(1);
  });
});
