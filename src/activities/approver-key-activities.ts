import { Context } from '@temporalio/activity';
import { readApproverKeyStatus } from '../admin/approver-keys';
import { verifyWithNode } from '../keys/key-files';
import type { LoadedPolicy } from '../policy/load-policy';
import type { ApproverKeyStatus } from '../shared/approver-keys';
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

/**
 * The local activities behind approver keys: the call workflow asks the registry whether a key is
 * enrolled now, and the registry asks the worker's current policy whether an operator signed a
 * request (the workflow holds no policy). Each answer is recorded, so replay never asks again.
 */
export function createApproverKeyActivities(dependencies: { policy: () => LoadedPolicy }) {
  return {
    /**
     * The registry's status of one key now, on this worker's task queue; `unknown` when there is no
     * registry. For an unknown key with `inviteId` named, also that invite's status.
     */
    async approverKeyStatus(input: { keyId: string; inviteId?: string }): Promise<ApproverKeyStatus> {
      const { client, info } = Context.current();
      return readApproverKeyStatus({
        client,
        taskQueue: info.taskQueue,
        keyId: input.keyId,
        ...(input.inviteId !== undefined ? { inviteId: input.inviteId } : {}),
      });
    },

    /** Whether `operator` is in the current policy and signed `value` as `kind` (and the invite's approver exists). */
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
      return { ok: true, policyVersion: policy.version, ...operators };
    },
  };
}

/** The approver-key activities by name; workflows import this type only. */
export type ApproverKeyActivities = ReturnType<typeof createApproverKeyActivities>;
