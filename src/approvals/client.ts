import type { CallContext } from '../calls/call-context';
import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { AuditStore } from '../audit/audit-store';
import { signValue } from '../keys/key-files';
import type { DecisionEnvelope, EditEnvelope, SignedDecision, SignedEdit } from './protocol';
import { digestOf } from '../shared/canonical-json';
import type { DenialLift, DenialLifter, SignedDenialLift } from './denial-memory';
import { liftProblem } from './denial-memory';
import type { LoadedPolicy } from '../policy/load-policy';
import type { LiftRefusalCode } from '../shared/codes';
import type { RiskLevel } from '../tools/risk-levels';
import type { KeyChain } from '../approver-keys/protocol';
import { keyIdOf } from '../approver-keys/protocol';
import { isCallId } from '../calls/proposal';
import type { ApprovalView, CallState, DecisionReceipt, EditReceipt } from '../calls/protocol';
import { callStateQuery, decideUpdate, editUpdate, searchAttributes } from '../calls/protocol';

/** A call waiting for approval, as an approver's list shows it. */
export interface PendingApproval {
  callId: string;
  tool: string;
  caller: string;
  /** On whose behalf the call acts (end user, tenant, channel), when its harness said. */
  context?: CallContext;
  riskLevel: string;
  preview: Record<string, unknown>;
  expiresAt: string;
  /** Milliseconds left before the approval window closes. */
  timeLeftMs: number;
  approvals: string[];
  quorum: number;
}

/** A decision that changed nothing, with its decision code (or `CALL_NOT_FOUND`) and why. */
export type DecisionRefusal = { accepted: false; code: string; message: string };

/** The answer to a decision: accepted with the round's state, or refused with a decision code. */
export type DecisionOutcome = ({ accepted: true } & DecisionReceipt) | DecisionRefusal;

/** The answer to an edit: accepted (the round it closed; the next asks for the edited arguments), or refused with an edit code. */
export type EditOutcome = EditReceipt | DecisionRefusal;

/** The answer to a lift: recorded (the same call will be asked again), or refused with a lift code. */
export type LiftOutcome =
  | { accepted: true; deniedCallId: string; liftedBy: string }
  | { accepted: false; code: LiftRefusalCode; message: string };

/**
 * The approver's side: lists pending calls, shows one, and sends signed decisions. Every decision
 * it is asked to send is logged to the audit store (when given) before the answer, accepted or
 * refused, including those it does not send because the call has closed or does not exist.
 */
export class ApprovalAdmin {
  private readonly client: Client;
  private readonly audit: AuditStore | undefined;

  private readonly taskQueue: string | undefined;

  constructor(options: { client: Client; audit?: AuditStore; taskQueue?: string }) {
    this.client = options.client;
    this.audit = options.audit;
    this.taskQueue = options.taskQueue;
  }

  /**
   * Calls waiting for approval now (on this admin's task queue, when it has one), soonest expiry
   * first. A call whose state cannot be read right now (no worker answers) is left out, not fatal.
   */
  async pending(options: { limit?: number } = {}): Promise<PendingApproval[]> {
    const onQueue =
      this.taskQueue !== undefined ? ` AND TaskQueue = "${this.taskQueue.replace(/"/g, '')}"` : '';
    const query = `${searchAttributes.approvalState.name} = "pending" AND ExecutionStatus = "Running"${onQueue}`;
    const found: PendingApproval[] = [];
    for await (const execution of this.client.workflow.list({ query })) {
      let state: CallState | null;
      try {
        state = await this.show(execution.workflowId);
      } catch {
        continue;
      }
      const approval = state?.approval;
      if (!state || !approval || approval.state !== 'pending') continue;
      found.push({
        callId: execution.workflowId,
        tool: state.tool,
        caller: state.caller,
        ...(state.context ? { context: state.context } : {}),
        riskLevel: approval.riskLevel,
        preview: approval.preview,
        expiresAt: approval.expiresAt,
        timeLeftMs: Math.max(0, Date.parse(approval.expiresAt) - Date.now()),
        approvals: approval.approvals,
        quorum: approval.quorum,
      });
      if (found.length >= (options.limit ?? 100)) break;
    }
    return found.sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
  }

  /** A call's state: validated arguments, the rule that asked for approval, the round and the decision history. */
  async show(callId: string): Promise<CallState | null> {
    // A workflow that is not a call (a session, the grants, the controls) holds no call state.
    if (!isCallId(callId)) return null;
    try {
      return await this.client.workflow.getHandle(callId).query(callStateQuery);
    } catch (error) {
      if ((error as Error).name === 'WorkflowNotFoundError') return null;
      throw error;
    }
  }

  /**
   * Signs a decision for the call's open round with the approver's own key and sends it: the
   * policy's key, or an enrolled key, whose chain (`key`, see `keyChainOf`) then travels with the
   * decision. A call with no open round (decided, expired, closed, or not there) is refused without
   * sending, and the refusal is logged like any other attempt.
   */
  async decide(input: {
    callId: string;
    approver: string;
    privateKey: KeyObject;
    /** The chain of the enrolled key `privateKey` is; absent when it is the approver's key in the policy. */
    key?: KeyChain;
    decision: 'approve' | 'deny';
    reason: string;
  }): Promise<DecisionOutcome> {
    const state = await this.show(input.callId);
    const approval = state?.approval;
    if (!state || !approval || approval.state !== 'pending') {
      return this.refusedUnsent({ ...input, state });
    }
    const envelope: DecisionEnvelope = {
      ...roundBinding(input.callId, approval),
      decision: input.decision,
      approver: input.approver,
      reason: input.reason,
      issuedAt: new Date().toISOString(),
    };
    const signed: SignedDecision = {
      envelope,
      signature: signValue({ kind: 'decision', value: envelope, privateKey: input.privateKey }),
      ...(input.key ? { key: input.key } : {}),
    };
    return this.send({ callId: input.callId, decision: signed });
  }

  /**
   * Sends an already signed decision (as a remote approver would, or the console relaying what an
   * approver's browser signed, its key's chain attached) and logs the attempt.
   */
  async send(input: { callId: string; decision: SignedDecision }): Promise<DecisionOutcome> {
    const updateId = randomUUID();
    let outcome: DecisionOutcome;
    if (!isCallId(input.callId)) {
      outcome = closedCallRefusal({ callId: input.callId, state: null });
    } else {
      try {
        const receipt = await this.client.workflow
          .getHandle(input.callId)
          .executeUpdate(decideUpdate, { args: [input.decision], updateId });
        outcome = { ...receipt, accepted: true };
      } catch (error) {
        outcome = refusalOf(error) ?? (await this.closedRunRefusal(input.callId));
      }
    }
    await this.audit?.appendDecisionAttempt({
      updateId,
      callId: input.callId,
      runId: input.decision.envelope.runId,
      approver: input.decision.envelope.approver,
      decision: input.decision.envelope.decision,
      outcome: outcome.accepted ? 'accepted' : outcome.code,
      source: 'admin',
      envelope: input.decision.envelope,
      ...enrolledKeyId(input.decision),
    });
    return outcome;
  }

  /**
   * Signs an edit of the open round's arguments with the approver's key and sends it: `args` are all
   * the fields as they should run (start from the round's `validatedArguments`; bound parameters as
   * they are). The call judges them again and, when they hold, asks in a new round for exactly those:
   * approve it with `decide` (see `waitForRound`). A call with no open round is refused without sending.
   */
  async edit(input: {
    callId: string;
    approver: string;
    privateKey: KeyObject;
    key?: KeyChain;
    args: Record<string, unknown>;
    reason: string;
  }): Promise<EditOutcome> {
    const state = await this.show(input.callId);
    const approval = state?.approval;
    if (!state || !approval || approval.state !== 'pending') {
      return this.refusedUnsent({ ...input, decision: 'edit', state });
    }
    const envelope: EditEnvelope = {
      ...roundBinding(input.callId, approval),
      editedArgs: input.args,
      editedDigest: digestOf(input.args),
      approver: input.approver,
      reason: input.reason,
      issuedAt: new Date().toISOString(),
    };
    const edit: SignedEdit = {
      envelope,
      signature: signValue({ kind: 'edit', value: envelope, privateKey: input.privateKey }),
      ...(input.key ? { key: input.key } : {}),
    };
    return this.sendEdit({ callId: input.callId, edit });
  }

  /** Sends an already signed edit (the console relaying what an approver's browser signed) and logs the attempt. */
  async sendEdit(input: { callId: string; edit: SignedEdit }): Promise<EditOutcome> {
    const updateId = randomUUID();
    let outcome: EditOutcome;
    if (!isCallId(input.callId)) {
      outcome = closedCallRefusal({ callId: input.callId, state: null });
    } else {
      try {
        outcome = await this.client.workflow
          .getHandle(input.callId)
          .executeUpdate(editUpdate, { args: [input.edit], updateId });
      } catch (error) {
        outcome = refusalOf(error) ?? (await this.closedRunRefusal(input.callId));
      }
    }
    const envelope = input.edit?.envelope as Partial<EditEnvelope> | undefined;
    await this.audit?.appendDecisionAttempt({
      updateId,
      callId: input.callId,
      runId: typeof envelope?.runId === 'string' ? envelope.runId : '',
      approver: typeof envelope?.approver === 'string' ? envelope.approver : '(unknown)',
      decision: 'edit',
      outcome: outcome.accepted ? 'accepted' : outcome.code,
      source: 'admin',
      envelope: envelope ?? null,
      ...enrolledKeyId(input.edit as unknown as SignedDecision),
    });
    return outcome;
  }

  /**
   * Waits until the call has an open round after `round` (the one an edit closed), and returns its
   * state; null when the call ended first (its checks refused the edited arguments, say) or
   * `timeoutMs` passed.
   */
  async waitForRound(input: {
    callId: string;
    after: number;
    timeoutMs?: number;
  }): Promise<CallState | null> {
    const deadline = Date.now() + (input.timeoutMs ?? 10_000);
    for (;;) {
      const state = await this.show(input.callId).catch(() => null);
      const approval = state?.approval;
      if (state && approval && approval.round > input.after && approval.state === 'pending') return state;
      if (!state || state.stage === 'done' || Date.now() >= deadline) return null;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /**
   * Lifts the remembered denial of a call (see docs/approvals.md, denial memory): signed with the key
   * of an approver of the policy or an operator, kept in the audit store as the call's decision
   * attempt `lift`. The worker verifies it against its own policy when the same call is proposed
   * again, and a person is asked again. With `policy`, a lift the workers would not honour is
   * refused here (`LIFT_NOT_ALLOWED`) and nothing is recorded. Needs the audit store.
   */
  async liftDenial(input: {
    deniedCallId: string;
    by: DenialLifter;
    privateKey: KeyObject;
    reason: string;
    policy?: LoadedPolicy;
  }): Promise<LiftOutcome> {
    if (!this.audit) throw new Error('lifting a denial needs the audit store: give the admin one');
    const records = await this.audit.recordsOf(input.deniedCallId);
    const denied = records.filter((record) => record.code === 'APPROVAL_DENIED').at(-1);
    if (!denied) {
      return {
        accepted: false,
        code: 'DENIAL_NOT_FOUND',
        message: `DENIAL_NOT_FOUND: no denial of ${input.deniedCallId} is in the audit store`,
      };
    }
    const lift: DenialLift = {
      deniedCallId: input.deniedCallId,
      by: input.by,
      reason: input.reason,
      issuedAt: new Date().toISOString(),
    };
    const signed: SignedDenialLift = {
      lift,
      signature: signValue({ kind: 'denial-lift', value: lift, privateKey: input.privateKey }),
    };
    if (input.policy) {
      const { approvers, operators } = input.policy.snapshotFor(denied.caller);
      const problem = liftProblem({
        value: signed,
        deniedCallId: input.deniedCallId,
        riskLevel: (denied.riskLevel ?? 'critical') as RiskLevel,
        caller: denied.caller,
        approvers,
        operators,
      });
      if (problem)
        return { accepted: false, code: 'LIFT_NOT_ALLOWED', message: `LIFT_NOT_ALLOWED: ${problem}` };
    }
    const by = 'approver' in input.by ? input.by.approver : input.by.operator;
    await this.audit.appendDecisionAttempt({
      updateId: randomUUID(),
      callId: input.deniedCallId,
      runId: denied.runId,
      approver: by,
      decision: 'lift',
      outcome: 'accepted',
      source: 'admin',
      envelope: signed,
    });
    return { accepted: true, deniedCallId: input.deniedCallId, liftedBy: by };
  }

  /**
   * A decision or an edit for a call with no open round: refused without signing or sending, and the
   * attempt logged, naming the run of the call's last round ('' when it had none).
   */
  private async refusedUnsent(input: {
    callId: string;
    approver: string;
    decision: string;
    state: CallState | null;
  }): Promise<DecisionRefusal> {
    const outcome = closedCallRefusal({ callId: input.callId, state: input.state });
    await this.audit?.appendDecisionAttempt({
      updateId: randomUUID(),
      callId: input.callId,
      runId: input.state?.approval?.runId ?? '',
      approver: input.approver,
      decision: input.decision,
      outcome: outcome.code,
      source: 'admin',
      envelope: null,
    });
    return outcome;
  }

  /** No run took the decision: says why from the call's last state (decided when it cannot be read). */
  private async closedRunRefusal(callId: string): Promise<DecisionRefusal> {
    let state: CallState | null;
    try {
      state = await this.show(callId);
    } catch {
      return { accepted: false, code: 'ALREADY_DECIDED', message: 'ALREADY_DECIDED: this call has closed' };
    }
    return closedCallRefusal({ callId, state });
  }
}

/** What a decision or an edit names of the round it is for: the call, run, nonce and the three digests. */
function roundBinding(callId: string, approval: ApprovalView) {
  return {
    callId,
    runId: approval.runId,
    nonce: approval.nonce,
    argsDigest: approval.argsDigest,
    previewDigest: approval.previewDigest,
    contractDigest: approval.contractDigest,
  };
}

/** The enrolled key a decision says it was signed with, for the audit (nothing when it names none). */
function enrolledKeyId(decision: SignedDecision): { keyId?: string } {
  const publicKeyHex = (
    decision.key as { enrolment?: { enrolment?: { publicKeyHex?: unknown } } } | undefined
  )?.enrolment?.enrolment?.publicKeyHex;
  return typeof publicKeyHex === 'string' ? { keyId: keyIdOf(publicKeyHex) } : {};
}

/** The workflow's refusal of a decision; undefined when no run took it (the run has closed, or never was). */
function refusalOf(error: unknown): DecisionRefusal | undefined {
  const cause = (error as { cause?: { type?: string; message?: string } }).cause;
  if (cause?.type) return { accepted: false, code: cause.type, message: cause.message ?? cause.type };
  const message = error instanceof Error ? error.message : String(error);
  const notFound = error instanceof Error && error.name === 'WorkflowNotFoundError';
  if (notFound || /completed|closed|not found/i.test(message)) {
    return undefined;
  }
  throw error;
}

/**
 * Why a call with no open round takes no decision: it does not exist, it expired, its round was
 * superseded (the tool's contract changed; a new round may open), or it was decided.
 */
function closedCallRefusal(input: { callId: string; state: CallState | null }): DecisionRefusal {
  if (!input.state) {
    return { accepted: false, code: 'CALL_NOT_FOUND', message: `No call ${input.callId} is visible to you.` };
  }
  const approval = input.state.approval;
  if (approval?.state === 'superseded' && approval.editedBy !== undefined) {
    const why = approval.supersededBecause ?? `${approval.editedBy} edited the arguments`;
    return {
      accepted: false,
      code: 'ALREADY_DECIDED',
      message: `ALREADY_DECIDED: ${why}: open the call again to see the new round`,
    };
  }
  if (approval?.state === 'superseded') {
    const why = approval.supersededBecause ?? "the tool's contract changed";
    return {
      accepted: false,
      code: 'CONTRACT_CHANGED',
      message: `CONTRACT_CHANGED: ${why}: open the call again to see the new round`,
    };
  }
  // An expiry is never reported as a decision: the approver is told the window closed.
  const code = input.state.approval?.state === 'expired' ? 'APPROVAL_EXPIRED' : 'ALREADY_DECIDED';
  return { accepted: false, code, message: `${code}: this call has no open approval` };
}
