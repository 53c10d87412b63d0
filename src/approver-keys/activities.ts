import { Context } from '@temporalio/activity';
import { readApproverKeyStatus } from './client';
import type { RegistryAudit } from './client';
import { verifyWithNode } from '../keys/key-files';
import type { LoadedPolicy } from '../policy/load-policy';
import type { ApproverKeyStatus } from './protocol';
import type { RegistryRefusalCode } from '../shared/codes';
import { ownValue } from '../shared/own-records';

/** An operator's signed request as the registry asks the worker to check it against the current policy. */
export interface OperatorRequestCheck {
  kind: 'invite' | 'key-revocation';
  value: unknown;
  signature: string;
  operator: string;
  /** For an invite: the approver it is for, who must be in the policy. */
  approver?: string;
}

/**
 * The worker's verdict on an operator's request, recorded in the registry's history, with the
 * policy's operator keys (public) so the registry's validators can refuse forged requests before
 * they reach its history (optional: verdicts recorded before it still replay).
 */
export type OperatorRequestVerdict = (
  { ok: true; policyVersion: string } | { ok: false; code: RegistryRefusalCode; reason: string }
) & { operators?: Record<string, string> };

/** Whether an invite may still enrol a key, as far as the audit store knows. */
export type InviteUseVerdict = { ok: true } | { ok: false; code: RegistryRefusalCode; reason: string };

/**
 * The local activities behind approver keys: the call workflow asks the registry whether a key is
 * enrolled now, and the registry asks the worker's current policy whether an operator signed a
 * request (the workflow holds no policy) and the audit store whether an invite was used already.
 * Each answer is recorded, so replay never asks again.
 *
 * With the worker's audit store (`audit`), answers are cross-checked against the registry changes it
 * recorded, which a reset or terminated registry forgets: see `crossCheckedKeyStatus`. Without one
 * (a worker assembled without it), the registry's own answers are all there is, as before.
 */
export function createApproverKeyActivities(dependencies: {
  policy: () => LoadedPolicy;
  audit?: RegistryAudit;
}) {
  const { audit } = dependencies;
  /** Why the audit store says `inviteId` enrols nothing more; undefined when it shows it unused (or there is none). */
  const usedInviteRefusal = async (
    inviteId: string,
  ): Promise<Extract<InviteUseVerdict, { ok: false }> | undefined> => {
    const use = (await audit?.acceptedRegistryEventsAbout({ inviteId }))?.find(
      (event) => event.action === 'enrolKey' && event.inviteId === inviteId,
    );
    if (!use) return undefined;
    return {
      ok: false,
      code: 'INVITE_USED',
      reason: `this invite was used already (key ${use.keyId ?? '(not recorded)'}); ask an operator for a new one`,
    };
  };

  return {
    /**
     * The registry's status of one key now, on this worker's task queue; `unknown` when there is no
     * registry. For an unknown key with `inviteId` named, also that invite's status. Cross-checked
     * against the audit store, when the worker has one. Throws when either cannot be read.
     */
    async approverKeyStatus(input: { keyId: string; inviteId?: string }): Promise<ApproverKeyStatus> {
      const { client, info } = Context.current();
      return readApproverKeyStatus({
        client,
        taskQueue: info.taskQueue,
        keyId: input.keyId,
        ...(input.inviteId !== undefined ? { inviteId: input.inviteId } : {}),
        ...(audit ? { audit } : {}),
      });
    },

    /**
     * Whether the audit store shows `inviteId` used already (a key enrolled through it), so that a
     * registry reset to before that enrolment, or started anew, cannot enrol another key with it.
     * `ok` when it does not, or when the worker has no audit store. Throws when it cannot be read.
     */
    async checkInviteUnused(input: { inviteId: string }): Promise<InviteUseVerdict> {
      return (await usedInviteRefusal(input.inviteId)) ?? { ok: true };
    },

    /**
     * Whether `operator` is in the current policy and signed `value` as `kind` (and the invite's
     * approver exists); for an invite, also that the audit store does not show it used already, so
     * that a registry started anew cannot take it back (one check, hence one recorded step).
     */
    async checkOperatorSignature(input: OperatorRequestCheck): Promise<OperatorRequestVerdict> {
      const policy = dependencies.policy();
      const operators = { operators: { ...policy.operators } };
      const publicKeyHex = ownValue(policy.operators, input.operator);
      if (!publicKeyHex) {
        return {
          ok: false,
          code: 'OPERATOR_UNKNOWN',
          reason: `no operator "${input.operator}" in the policy`,
          ...operators,
        };
      }
      const signed = verifyWithNode({
        kind: input.kind,
        value: input.value,
        signature: input.signature,
        publicKeyHex,
      });
      if (!signed) {
        return {
          ok: false,
          code: 'SIGNATURE_INVALID',
          reason: `not signed with ${input.operator}'s key`,
          ...operators,
        };
      }
      if (input.approver !== undefined && !ownValue(policy.approvers, input.approver)) {
        return {
          ok: false,
          code: 'APPROVER_UNKNOWN',
          reason: `no approver "${input.approver}" in the policy`,
          ...operators,
        };
      }
      const inviteId = input.kind === 'invite' ? inviteIdOf(input.value) : undefined;
      const used = inviteId !== undefined ? await usedInviteRefusal(inviteId) : undefined;
      if (used) return { ...used, ...operators };
      return { ok: true, policyVersion: policy.version, ...operators };
    },
  };
}

function inviteIdOf(invite: unknown): string | undefined {
  const inviteId = (invite as { inviteId?: unknown } | null)?.inviteId;
  return typeof inviteId === 'string' ? inviteId : undefined;
}

/** The approver-key activities by name; workflows import this type only. */
export type ApproverKeyActivities = ReturnType<typeof createApproverKeyActivities>;
