/**
 * The worker's side of sessions (issue 28): the admission a call's first step and a joining proposal
 * make, and the short session operations clients start (stats, end, reset, list, the admission of a
 * proposal that replays a completed call). Everything is one transaction of the audit store's
 * sessions; nothing here is a workflow's state.
 */
import { admissionRefusalRecord } from '../audit/audit-store';
import type { AuditStore } from '../audit/audit-store';
import { verifyWithNode } from '../keys/key-files';
import { isSigned } from '../calls/evaluate-call';
import type { CallerPolicySnapshot, LoadedPolicy } from '../policy/load-policy';
import { durationMs } from '../shared/durations';
import { ownValue } from '../shared/own-records';
import type { Proposal } from '../calls/proposal';
import { defaultSessionLimits } from './session';
import type { SessionLimits } from './session';
import { unauthenticatedMessage } from '../shared/model-messages';
import { rejection } from '../shared/tool-result';
import type { SessionAdmission } from './rules';
import type { SessionOperation, SessionOperationAnswer } from './protocol';
import { sessionOperationWindowMs } from './protocol';

/** What the session activities need, passed in by the worker. */
export interface SessionActivityDependencies {
  policy: () => LoadedPolicy;
  audit: AuditStore;
  /** Told once per circuit a counted outcome opens (the worker's metrics). */
  onCircuitOpened?: (opened: { tool: string; code: string }) => void;
}

/** A proposal to admit, with its signature as the client made it. */
export interface ProposalToAdmit {
  proposalId: string;
  callId: string;
  proposal: Proposal;
  signature?: string;
}

/** The limits a caller's policy gives its sessions, or the defaults. */
export function sessionLimitsOf(snapshot: Pick<CallerPolicySnapshot, 'callerPolicy'>): SessionLimits {
  const session = snapshot.callerPolicy?.session;
  return {
    stepBudget: session?.stepBudget ?? defaultSessionLimits.stepBudget,
    loopLimit: session?.loopLimit ?? defaultSessionLimits.loopLimit,
    circuitThreshold: session?.circuitThreshold ?? defaultSessionLimits.circuitThreshold,
    idleTimeoutMs:
      session?.idleTimeout === undefined
        ? defaultSessionLimits.idleTimeoutMs
        : durationMs(session.idleTimeout),
  };
}

/**
 * Admits a proposal in its session: the signature, checked natively with the caller's key, then one
 * transaction of the store. An unsigned proposal touches no session: it is `UNAUTHENTICATED_CALLER`.
 */
export async function admitProposal(input: {
  policy: LoadedPolicy;
  audit: AuditStore;
  proposal: ProposalToAdmit;
}): Promise<{ signed: boolean; admission: SessionAdmission }> {
  const { proposal, callId, proposalId } = input.proposal;
  const snapshot = input.policy.snapshotFor(proposal.caller);
  const signed = isSigned({ snapshot, check: input.proposal });
  if (!signed) {
    return {
      signed,
      admission: {
        admitted: false,
        counted: false,
        result: rejection({
          tool: proposal.tool,
          callId,
          code: 'UNAUTHENTICATED_CALLER',
          message: unauthenticatedMessage(proposal),
        }),
      },
    };
  }
  const admission = await input.audit.sessions.admit({
    proposalId,
    session: proposal.session,
    callId,
    proposal,
    signed,
    limits: sessionLimitsOf(snapshot),
  });
  return { signed, admission };
}

/** Builds the session activities; every one runs as a local activity. */
export function createSessionActivities(dependencies: SessionActivityDependencies) {
  const { audit } = dependencies;
  /** A refusal that started no run of its own is audited like every other, once per proposal. */
  const auditRefusal = async (input: ProposalToAdmit & { result: SessionAdmission }) => {
    if (input.result.admitted) return;
    await audit.append(
      admissionRefusalRecord({
        proposalId: input.proposalId,
        callId: input.callId,
        session: input.proposal.session,
        proposal: input.proposal,
        result: input.result.result,
        policyVersion: dependencies.policy().version,
        at: new Date().toISOString(),
      }),
    );
  };
  const admitted = async (proposal: ProposalToAdmit) => {
    const { admission } = await admitProposal({ policy: dependencies.policy(), audit, proposal });
    await auditRefusal({ ...proposal, result: admission });
    return admission.admitted
      ? { admitted: true as const }
      : { admitted: false as const, result: admission.result };
  };
  /** Whether `claims` were signed with `publicKeyHex` as `kind` within the operation window. */
  const signedRecently = (input: {
    kind: 'session-end' | 'session-reset';
    claims: { issuedAt: string };
    signature: string;
    publicKeyHex: string | undefined;
  }): boolean => {
    const at = Date.parse(input.claims.issuedAt);
    return (
      input.publicKeyHex !== undefined &&
      Number.isFinite(at) &&
      Math.abs(Date.now() - at) <= sessionOperationWindowMs &&
      verifyWithNode({
        kind: input.kind,
        value: input.claims,
        signature: input.signature,
        publicKeyHex: input.publicKeyHex,
      })
    );
  };

  return {
    /** A proposal joining a running call is a step of its session too: admitted like the first. */
    async admitJoiningProposal(input: ProposalToAdmit) {
      return admitted(input);
    },

    /** One session operation, for the short workflow a client starts. */
    async sessionOperation(operation: SessionOperation): Promise<SessionOperationAnswer> {
      switch (operation.op) {
        case 'admit': {
          const { op: _op, ...proposal } = operation;
          return { op: 'admit', ...(await admitted(proposal)) };
        }
        case 'stats':
          return { op: 'stats', stats: await audit.sessions.stats({ session: operation.session }) };
        case 'list':
          return {
            op: 'list',
            sessions: await audit.sessions.list({ limit: Math.min(Math.max(operation.limit ?? 50, 1), 500) }),
          };
        case 'end': {
          const { claims, signature } = operation;
          const publicKeyHex = dependencies.policy().snapshotFor(claims.caller).callerKeyHex || undefined;
          if (!signedRecently({ kind: 'session-end', claims, signature, publicKeyHex })) {
            return {
              op: 'end',
              ok: false,
              code: 'SIGNATURE_INVALID',
              message: `the end of session ${claims.session} is not signed with caller ${claims.caller}'s key in the last five minutes; sign it again with the caller's key`,
            };
          }
          const ended = await audit.sessions.end({
            session: claims.session,
            caller: claims.caller,
            ...(claims.reason !== undefined ? { reason: claims.reason } : {}),
          });
          if (!ended.ended) {
            return {
              op: 'end',
              ok: false,
              code: 'UNAUTHENTICATED_CALLER',
              message: `session ${claims.session} is not ${claims.caller}'s; only its own caller ends it`,
            };
          }
          return { op: 'end', ok: true, stats: ended.stats };
        }
        case 'reset': {
          const { claims, signature } = operation;
          const key = ownValue(dependencies.policy().operators, claims.operator);
          if (!key) {
            return {
              op: 'reset',
              ok: false,
              code: 'NOT_AN_OPERATOR',
              message: `no operator "${claims.operator}" in the policy; a session's circuits are reset by an operator with their key`,
            };
          }
          if (!signedRecently({ kind: 'session-reset', claims, signature, publicKeyHex: key })) {
            return {
              op: 'reset',
              ok: false,
              code: 'SIGNATURE_INVALID',
              message: `the reset is not signed with operator ${claims.operator}'s key in the last five minutes; sign it again`,
            };
          }
          const stats = await audit.sessions.reset({
            session: claims.session,
            ...(claims.tool !== undefined ? { tool: claims.tool } : {}),
            by: {
              operator: claims.operator,
              reason: claims.reason,
              ...(claims.tool !== undefined ? { tool: claims.tool } : {}),
              at: new Date().toISOString(),
            },
          });
          return { op: 'reset', ok: true, stats };
        }
      }
    },
  };
}

/** The session activities a workflow schedules, by name; workflows import this type only. */
export type SessionActivities = ReturnType<typeof createSessionActivities>;
