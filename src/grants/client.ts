import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { readGrants } from './activities';
import { signValue } from '../keys/key-files';
import type {
  GrantReceipt,
  GrantRefusal,
  GrantRevoker,
  GrantsView,
  SignedGrant,
  SignedGrantRevocation,
  StandingGrant,
} from './protocol';
import { addGrantUpdate, grantsWorkflowId, grantsWorkflowType, revokeGrantUpdate } from './protocol';
import { defaultTaskQueue } from '../shared/temporal';
import type { RiskLevel } from '../tools/risk-levels';

/**
 * Drafts a standing grant and signs it as its first approver (kind `grant`). A grant that needs a
 * second approver (one covering `critical`, or a caller whose quorum asks for two) goes to them as a
 * file: `cosignGrant` adds their signature; `addGrant` submits it.
 */
export function signGrant(input: {
  /** The deployment's task queue the grant is for (default: toolgate's). */
  taskQueue?: string;
  caller: string;
  tool: string;
  maxLevel: RiskLevel;
  maxCalls: number;
  maxAmount?: number;
  maxAmountPerCall?: number;
  expiresAt: Date;
  reason: string;
  approver: string;
  approverKey: KeyObject;
  now?: () => Date;
}): SignedGrant {
  const grant: StandingGrant = {
    grantId: randomUUID(),
    taskQueue: input.taskQueue ?? defaultTaskQueue,
    caller: input.caller,
    tool: input.tool,
    maxLevel: input.maxLevel,
    maxCalls: input.maxCalls,
    ...(input.maxAmount !== undefined ? { maxAmount: input.maxAmount } : {}),
    ...(input.maxAmountPerCall !== undefined ? { maxAmountPerCall: input.maxAmountPerCall } : {}),
    issuedAt: (input.now?.() ?? new Date()).toISOString(),
    expiresAt: input.expiresAt.toISOString(),
    reason: input.reason.trim(),
  };
  return cosignGrant({
    signed: { grant, signatures: [] },
    approver: input.approver,
    approverKey: input.approverKey,
  });
}

/** Adds `approver`'s signature to a grant (another approver's already there stays; theirs is replaced). */
export function cosignGrant(input: {
  signed: SignedGrant;
  approver: string;
  approverKey: KeyObject;
}): SignedGrant {
  const signature = signValue({ kind: 'grant', value: input.signed.grant, privateKey: input.approverKey });
  return {
    grant: input.signed.grant,
    signatures: [
      ...input.signed.signatures.filter((entry) => entry.approver !== input.approver),
      { approver: input.approver, signature },
    ],
  };
}

/**
 * Submits a signed grant to the task queue's workers: they judge it against their policy (approvers
 * known, signatures, levels, quorum, the tool and caller, its expiry) and audit the attempt. From then
 * on, the caller's calls it covers run without waiting, until it is used up, expires or is revoked.
 */
export async function addGrant(input: {
  client: Client;
  taskQueue?: string;
  signed: SignedGrant;
}): Promise<GrantReceipt | GrantRefusal> {
  const taskQueue = input.taskQueue ?? defaultTaskQueue;
  return refusalOf(() =>
    input.client.workflow.executeUpdateWithStart(addGrantUpdate, {
      args: [input.signed],
      // Each submission is its own update: a grant refused once is judged again when sent with what it
      // lacked, and one accepted already is refused GRANT_REPLAYED, never answered with an old receipt.
      updateId: `grant:${String(input.signed?.grant?.grantId)}:${randomUUID()}`,
      startWorkflowOperation: grantsStart(taskQueue),
    }),
  );
}

/**
 * Revokes a grant at once, signed by one of its approvers or an operator (kind `grant-revocation`):
 * no call takes a use of it after the answer; calls that took one before run on.
 */
export async function revokeGrant(input: {
  client: Client;
  taskQueue?: string;
  grantId: string;
  by: GrantRevoker;
  key: KeyObject;
  reason: string;
  now?: () => Date;
}): Promise<GrantReceipt | GrantRefusal> {
  const taskQueue = input.taskQueue ?? defaultTaskQueue;
  const revocation = {
    revocationId: randomUUID(),
    grantId: input.grantId,
    by: input.by,
    reason: input.reason.trim(),
    issuedAt: (input.now?.() ?? new Date()).toISOString(),
  };
  const signature = signValue({ kind: 'grant-revocation', value: revocation, privateKey: input.key });
  return submitGrantRevocation({ client: input.client, taskQueue, signed: { revocation, signature } });
}

/**
 * Relays a revocation signed elsewhere (an approver's browser, with its enrolled key's chain) to the
 * task queue's workers, as it was signed: they alone judge it (signer, key, chain, registry) and audit
 * the attempt. The revocation id is the update's id: the same revocation sent again (a retried post)
 * gets the first answer, and never counts twice.
 */
export async function submitGrantRevocation(input: {
  client: Client;
  taskQueue?: string;
  signed: SignedGrantRevocation;
}): Promise<GrantReceipt | GrantRefusal> {
  const taskQueue = input.taskQueue ?? defaultTaskQueue;
  return refusalOf(() =>
    input.client.workflow.executeUpdateWithStart(revokeGrantUpdate, {
      args: [input.signed],
      updateId: `revoke:${String(input.signed?.revocation?.revocationId)}`,
      startWorkflowOperation: grantsStart(taskQueue),
    }),
  );
}

/** The grants of a task queue: active ones, and those ended within the last day (none when none was ever added). */
export function listGrants(input: { client: Client; taskQueue?: string }): Promise<GrantsView> {
  return readGrants({ client: input.client, taskQueue: input.taskQueue ?? defaultTaskQueue });
}

function grantsStart(taskQueue: string) {
  return new WithStartWorkflowOperation(grantsWorkflowType, {
    workflowId: grantsWorkflowId(taskQueue),
    taskQueue,
    args: [{}],
    workflowIdConflictPolicy: 'USE_EXISTING',
    staticSummary: "standing grants: callers' calls approved in advance, within caps",
  });
}

async function refusalOf(send: () => Promise<GrantReceipt>): Promise<GrantReceipt | GrantRefusal> {
  try {
    return await send();
  } catch (error) {
    const cause = (error as { cause?: { type?: string; message?: string } }).cause;
    if (!cause?.type) throw error;
    return { accepted: false, code: cause.type, message: cause.message ?? cause.type };
  }
}
