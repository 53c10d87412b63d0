import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { readApproverKeyStatus } from '../approver-keys/client';
import type { RegistryAudit } from '../approver-keys/client';
import type { AuditStore } from '../audit/audit-store';
import { retryingTransient, transientQueryFailure } from '../connection/transient-retry';
import type { LoadedPolicy } from '../policy/load-policy';
import { judgeGrant, judgeRevocation } from './rules';
import { digestOf } from '../shared/canonical-json';
import type { ApproverKeyStatus, VerifiedKey } from '../approver-keys/protocol';
import type { GrantRefusalCode } from '../shared/codes';
import type {
  GrantEvent,
  GrantsView,
  GrantUseRequest,
  GrantUseStatus,
  SignedGrant,
  SignedGrantRevocation,
  StandingGrant,
} from './protocol';
import {
  grantRefusesCall,
  grantsQuery,
  grantsWorkflowId,
  grantUseQuery,
  releaseGrantUpdate,
  revokerName,
  useGrantUpdate,
} from './protocol';

/** A grant as the audit store's events rebuild it: what a new run of the grants workflow starts from. */
export interface HeldGrantRecord {
  signed: SignedGrant;
  approvers: string[];
  uses: [string, Omit<Extract<GrantUseStatus, { held: true }>, 'held'>][];
  revoked?: { by: string; reason: string; at: string };
}

/** The worker's verdict on a grant or a revocation, recorded in the grants workflow's history. */
export type GrantVerdict =
  { ok: true; approvers: string[] } | { ok: false; code: GrantRefusalCode; reason: string };

/** A grant ended this long ago is not rebuilt (the workflow lists ended grants for a day). */
const endedKeptMs = 24 * 60 * 60 * 1000;

/**
 * The activities of standing grants. The grants workflow holds no policy and no keys: it asks the
 * worker whether a grant's signatures hold under the current policy (and audits the attempt), writes
 * each use and release to the audit store before answering, and rebuilds from there at every run.
 * A call asks for a use (`useStandingGrant`) instead of opening an approval round when its evaluation
 * saw a grant that covers it, and gives the use back when it ends without an effect.
 */
export function createGrantActivities(dependencies: {
  policy: () => LoadedPolicy;
  /** The tools this worker runs, and whether each declares an amount. */
  tools: (name: string) => { declaresAmount: boolean } | undefined;
  /** Also the second source of enrolled keys' statuses (see `readApproverKeyStatus`). */
  audit: Pick<AuditStore, 'appendControlEvent' | 'grantEvents'> & RegistryAudit;
  /**
   * The registry's status of an enrolled key now; default: this worker's task queue's registry,
   * cross-checked against `audit`. Throws when it cannot be read.
   */
  approverKeyStatus?: (input: { keyId: string; inviteId: string }) => Promise<ApproverKeyStatus>;
}) {
  const { audit } = dependencies;
  const approverKeyStatus =
    dependencies.approverKeyStatus ??
    ((input: { keyId: string; inviteId: string }) => {
      const { client, info } = Context.current();
      return readApproverKeyStatus({ client, taskQueue: info.taskQueue, ...input, audit });
    });
  /** Why the registry refuses an enrolled key that signed a revocation; fails closed when it cannot answer. */
  const enrolledKeyRefusal = async (
    key: VerifiedKey,
  ): Promise<{ code: GrantRefusalCode; reason: string } | undefined> => {
    let found: ApproverKeyStatus;
    try {
      found = await approverKeyStatus({ keyId: key.keyId, inviteId: key.inviteId });
    } catch {
      return { code: 'KEY_UNKNOWN', reason: 'the key registry did not answer; try again' };
    }
    const same =
      found.status !== 'unknown' &&
      found.key.publicKeyHex.toLowerCase() === key.publicKeyHex.toLowerCase() &&
      found.key.approver === key.approver &&
      found.key.inviteId === key.inviteId;
    if (!same) return { code: 'KEY_UNKNOWN', reason: `key ${key.keyId} is not enrolled for ${key.approver}` };
    if (found.status === 'revoked') return { code: 'KEY_REVOKED', reason: `key ${key.keyId} was revoked` };
    return undefined;
  };
  return {
    /** Judges a grant against the current policy and appends the attempt to the audit store once. */
    async checkGrant(signed: SignedGrant): Promise<GrantVerdict> {
      const judged = judgeGrant({
        signed,
        policy: dependencies.policy(),
        tool: dependencies.tools,
        taskQueue: Context.current().info.taskQueue,
        nowMs: Date.now(),
      });
      const { grant } = signed;
      await audit.appendControlEvent({
        // Keyed by what was signed: the same grant sent again with another signature is its own attempt.
        changeId: `grant:${grant.grantId}:${digestOf(signed).slice(0, 16)}`,
        action: 'grant',
        grantId: grant.grantId,
        tool: grant.tool,
        caller: grant.caller,
        signed,
        outcome: judged.ok ? 'accepted' : judged.code,
      });
      return judged.ok ? { ok: true, approvers: judged.approvers } : judged;
    },

    /**
     * Judges a revocation of `grant` against the current policy and audits the attempt once; one
     * signed with an enrolled key also needs the registry to hold that key, enrolled and not revoked
     * (`KEY_UNKNOWN` when it cannot tell).
     */
    async checkRevocation(input: {
      revocation: SignedGrantRevocation;
      grant: SignedGrant;
    }): Promise<GrantVerdict> {
      let judged = judgeRevocation({
        revocation: input.revocation,
        grant: input.grant,
        policy: dependencies.policy(),
      });
      const key = judged.ok ? judged.key : undefined;
      if (key) {
        const refusal = await enrolledKeyRefusal(key);
        if (refusal) judged = { ok: false, ...refusal };
      }
      const { revocation } = input.revocation;
      const { grant } = input.grant;
      await audit.appendControlEvent({
        changeId: `revoke:${revocation.revocationId}`,
        revocationId: revocation.revocationId,
        action: 'revoke-grant',
        grantId: grant.grantId,
        tool: grant.tool,
        caller: grant.caller,
        by: revokerName(revocation.by),
        reason: revocation.reason,
        issuedAt: revocation.issuedAt,
        ...(key ? { keyId: key.keyId } : {}),
        outcome: judged.ok ? 'accepted' : judged.code,
      });
      return judged.ok ? { ok: true, approvers: [] } : judged;
    },

    /** Appends a use or release (written once under its id). */
    async recordGrantEvent(event: GrantEvent): Promise<void> {
      await audit.appendControlEvent(event);
    },

    /**
     * The grants as the audit store's events leave them, in order: accepted grants, their
     * revocations, uses and releases; grants ended more than a day ago are left out. Every grant and
     * revocation id ever accepted is returned too, so none is accepted twice (a refused one may be
     * sent again with what it lacked).
     */
    async restoreGrants(): Promise<{
      grants: HeldGrantRecord[];
      seenGrants: string[];
      seenRevocations: string[];
    }> {
      // Only this task queue's grants: a shared audit store holds other deployments' too.
      const { taskQueue } = Context.current().info;
      const held = new Map<string, HeldGrantRecord>();
      const seenGrants = new Set<string>();
      const seenRevocations = new Set<string>();
      for (const event of await audit.grantEvents()) {
        if (event.outcome !== 'accepted') continue;
        if (event.action === 'grant') {
          if (!event.signed || event.signed.grant.taskQueue !== taskQueue) continue;
          seenGrants.add(event.grantId);
          const approvers = [...new Set(event.signed.signatures.map((entry) => entry.approver))];
          held.set(event.grantId, { signed: event.signed, approvers, uses: [] });
          continue;
        }
        const record = held.get(event.grantId);
        if (!record) continue;
        if (event.action === 'revoke-grant') {
          if (event.revocationId !== undefined) seenRevocations.add(event.revocationId);
          record.revoked ??= { by: event.by ?? '', reason: event.reason ?? '', at: event.recordedAt ?? '' };
        } else if (event.action === 'use-grant' && event.reservationId !== undefined) {
          record.uses = record.uses.filter(([id]) => id !== event.reservationId);
          record.uses.push([
            event.reservationId,
            {
              callId: event.callId ?? '',
              runId: event.runId ?? '',
              caller: record.signed.grant.caller,
              tool: record.signed.grant.tool,
              riskLevel: event.riskLevel ?? record.signed.grant.maxLevel,
              amount: event.amount ?? 0,
              usedAt: event.usedAt ?? event.recordedAt ?? '',
            },
          ]);
        } else if (event.action === 'release-grant') {
          record.uses = record.uses.filter(([id]) => id !== event.reservationId);
        }
      }
      const nowMs = Date.now();
      const recent = [...held.values()].filter((record) => {
        const endedAtMs = record.revoked
          ? Date.parse(record.revoked.at)
          : Date.parse(record.signed.grant.expiresAt);
        return !(nowMs - endedAtMs > endedKeptMs);
      });
      return { grants: recent, seenGrants: [...seenGrants], seenRevocations: [...seenRevocations] };
    },

    /**
     * Takes one use of a grant that covers the call, from this task queue's grants workflow, and
     * checks the grant it got against the current policy (an approver removed or demoted since it was
     * signed voids it: the use is given back). `{ ok: false }` when no grant covers the call: it then
     * waits for a human.
     */
    async useStandingGrant(
      request: GrantUseRequest,
    ): Promise<{ ok: true; grant: SignedGrant; approvers: string[] } | { ok: false; reason: string }> {
      const { client, info } = Context.current();
      const handle = client.workflow.getHandle(grantsWorkflowId(info.taskQueue));
      let used;
      try {
        used = await retryingTransient(() => handle.executeUpdate(useGrantUpdate, { args: [request] }), {
          forMs: 25_000,
        });
      } catch (error) {
        if (error instanceof WorkflowNotFoundError)
          return { ok: false, reason: 'no grants on this task queue' };
        throw error;
      }
      if (!used.ok) return { ok: false, reason: 'no active grant covers the call' };
      const judged = judgeGrant({
        signed: used.grant,
        policy: dependencies.policy(),
        tool: dependencies.tools,
        taskQueue: info.taskQueue,
        nowMs: Date.now(),
      });
      if (!judged.ok) {
        await handle.executeUpdate(releaseGrantUpdate, {
          args: [
            { grantId: used.grant.grant.grantId, reservationId: request.reservationId, runId: request.runId },
          ],
        });
        return { ok: false, reason: `grant ${used.grant.grant.grantId} no longer holds: ${judged.reason}` };
      }
      return { ok: true, grant: used.grant, approvers: judged.approvers };
    },

    /** Gives a call's use back (it ended without an effect). */
    async releaseStandingGrant(input: {
      grantId: string;
      reservationId: string;
      runId: string;
    }): Promise<void> {
      const { client, info } = Context.current();
      await retryingTransient(
        () =>
          client.workflow
            .getHandle(grantsWorkflowId(info.taskQueue))
            .executeUpdate(releaseGrantUpdate, { args: [input] }),
        { forMs: 25_000 },
      );
    },
  };
}

/**
 * The grants of a task queue; none when no grant was ever added. A query answers with the workflow's
 * clock as of its last task, so a grant that expired since reads `expired` here, by this clock.
 */
export async function readGrants(input: { client: Client; taskQueue: string }): Promise<GrantsView> {
  try {
    // Asked again, briefly, while the grants that just continued as new have not run their first task.
    const view = await retryingTransient(
      () => input.client.workflow.getHandle(grantsWorkflowId(input.taskQueue)).query(grantsQuery),
      { failures: transientQueryFailure, forMs: 3_000 },
    );
    const nowMs = Date.now();
    return {
      grants: view.grants.map((entry) =>
        entry.state === 'active' && nowMs >= Date.parse(entry.grant.expiresAt)
          ? { ...entry, state: 'expired' }
          : entry,
      ),
    };
  } catch (error) {
    if (error instanceof Error && error.name === 'WorkflowNotFoundError') return { grants: [] };
    throw error;
  }
}

/** An active grant of `view` that would cover the call now, or undefined. */
export function coveringGrant(
  view: GrantsView,
  call: Omit<GrantUseRequest, 'reservationId' | 'callId' | 'runId'>,
  nowMs: number,
): StandingGrant | undefined {
  return view.grants.find(
    (entry) =>
      entry.state === 'active' &&
      grantRefusesCall({
        grant: entry.grant,
        used: { calls: entry.usedCalls, amount: entry.usedAmount },
        call,
        nowMs,
      }) === undefined,
  )?.grant;
}

/**
 * Whether the grants workflow holds a use of `grantId` for `reservationId`, and when it was taken: the
 * minter's check that a granted call is one of the grant's counted calls. Not held when there is no
 * grants workflow.
 */
export async function readGrantUse(input: {
  client: Client;
  taskQueue: string;
  grantId: string;
  reservationId: string;
}): Promise<GrantUseStatus> {
  try {
    return await input.client.workflow
      .getHandle(grantsWorkflowId(input.taskQueue))
      .query(grantUseQuery, { grantId: input.grantId, reservationId: input.reservationId });
  } catch (error) {
    if (error instanceof Error && error.name === 'WorkflowNotFoundError') return { held: false };
    throw error;
  }
}

/** The grant activities by name; workflows import this type only. */
export type GrantActivities = ReturnType<typeof createGrantActivities>;
