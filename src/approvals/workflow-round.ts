import {
  ApplicationFailure,
  condition,
  currentUpdateInfo,
  proxyLocalActivities,
  proxySinks,
} from '@temporalio/workflow';
import type { ApproverKeyActivities } from '../approver-keys/activities';
import type { ToolCallActivities } from '../calls/activities';
import type { ApproverKeyStatus, KnownKeyRefusal, VerifiedKey } from '../approver-keys/protocol';
import { keyIdOf, LearnedKeyStatuses, memoisedKeyChainVerifier } from '../approver-keys/protocol';
import type { ApproverGrant } from './decision-rules';
import type { ExecutionApproval, SignedDecision, SignedEdit } from './protocol';
import { approvalNonce } from './protocol';
import type { ApprovalRequirement } from '../calls/call-evaluation';
import type { ChainStepRequirement } from './approval-chain';
import { chainQuorum } from './approval-chain';
import { digestOf } from '../shared/canonical-json';
import { ownValue } from '../shared/own-records';
import type { DecisionRefusalCode, EditRefusalCode } from '../shared/codes';
import type { RoundEnding } from '../notifications/notices';
import {
  decisionShapeProblem,
  editShapeProblem,
  judgeDecision,
  judgeEdit,
  levelRefusal,
} from './decision-rules';
import type {
  ApprovalState,
  ApprovalView,
  CallState,
  ChainView,
  DecisionReceipt,
  EditReceipt,
  RoundSupersession,
} from '../calls/protocol';
import type { CallEvaluation } from '../calls/call-evaluation';
import type { ToolGateSinks } from '../shared/temporal';
import type { RiskLevel } from '../tools/risk-levels';

/**
 * How an approval ended: approved (what the minter gets), or why the call stops. `approval` is absent
 * only when the call, judged again after a contract deploy, no longer needs one.
 */
export type ApprovalOutcome<Stop> =
  | { ok: true; approval?: ExecutionApproval }
  | { ok: false; ended: 'expired'; expiresAt: string }
  | { ok: false; ended: 'denied'; approver: string; reason: string }
  | { ok: false; ended: 'stopped'; stop: Stop };

// The registry lookup of an enrolled key: a local activity, so its answer is recorded for replay.
const keyActivities = proxyLocalActivities<ApproverKeyActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 3, initialInterval: '200ms' },
});

/** What a round asks approvers to approve: one call's arguments and risk level, under one tool contract. */
export interface ApprovalSubject {
  tool: string;
  args: Record<string, unknown>;
  riskLevel: RiskLevel;
  /** The contract the call was evaluated under (its recorded evaluation's `contractDigest`). */
  contractDigest: string;
  requirement: ApprovalRequirement;
}

/** An evaluation of edited arguments that lets them go on (steps 1 to 5 passed). */
export type JudgedEdit = CallEvaluation & { ok: true };

/** What the evaluation of an edit answered: it may go on, or the code and reason the approver is told. */
export type EditVerdict =
  { ok: true; evaluation: JudgedEdit } | { ok: false; code: EditRefusalCode; reason: string };

/**
 * The call judged again under the contract the worker holds now (steps 1 to 5 once more): still in
 * need of approval (`subject`), free to go on without it (`subject` undefined), or stopped.
 */
export type JudgedAgain<Stop> =
  { ok: true; subject: ApprovalSubject | undefined } | { ok: false; stop: Stop };

// The worker's contract of a tool now: a local activity, so its answer is recorded for replay.
const contractActivities = proxyLocalActivities<Pick<ToolCallActivities, 'currentContractDigest'>>({
  startToCloseTimeout: '5s',
  retry: { maximumAttempts: 3, initialInterval: '200ms' },
});

/** What a decision or an edit for a superseded round is told: edited (decided otherwise), or the contract changed. */
function supersededRefusal(view: ApprovalView): { code: DecisionRefusalCode; reason: string } {
  const why = view.supersededBecause ?? "the tool's contract changed";
  return {
    code: view.editedBy !== undefined ? 'ALREADY_DECIDED' : 'CONTRACT_CHANGED',
    reason: `${why}: open the call again to see the new round`,
  };
}

/** Why a round no longer holds when the worker's contract of its tool is not the one it was opened under. */
function contractChangedReason(tool: string): string {
  return `the contract of ${tool} changed in a deploy while the call waited`;
}

/**
 * How many decisions signed with enrolled keys of one invite a round lets reach its handler unverified
 * (in flight, or refused there: the registry said unknown or revoked, or did not answer) before its
 * validator takes that invite's keys only when this call already saw the registry vouch for them.
 * Each refusal in the handler is an accepted update, ~6 events of history, so without a cap a holder
 * of many keys the validator cannot judge (chains that verify, through an invite still open) could
 * fill the call's history and exhaust its update budget. The count is per invite, so a flood of keys
 * minted on one leaked invite stops that invite only, never another approver's newly enrolled key; it
 * counts an attempt before the handler awaits the registry, so a burst of updates sees its own
 * attempts. A key already verified enrolled in this call is always let through; a new round starts
 * a new count.
 */
const maxKeyAttemptsPerInvite = 16;

/**
 * How many edits one round refuses in its handler (after judging them: each an accepted update, a few
 * events of history) before its validator refuses any more without history: an approver who keeps
 * sending edits that do not hold cannot fill the call's history.
 */
const maxRefusedEdits = 16;

/** One round: the preview an approver signs for, the contract it is bound to, the decisions taken, its expiry. */
class ApprovalRound {
  readonly number: number;
  readonly runId: string;
  readonly tool: string;
  readonly argsDigest: string;
  readonly contractDigest: string;
  readonly preview: Record<string, unknown>;
  readonly riskLevel: RiskLevel;
  readonly quorum: number;
  readonly nonce: string;
  readonly previewDigest: string;
  /** Until when the round (a chain: its current step) can be decided: a chain's next step moves it. */
  expiresAtMs: number;
  readonly supersedes: RoundSupersession | undefined;
  /** Without a chain: every approver granted the level who does not operate the caller. */
  private readonly anyEligible: string[];
  remindAtMs: number | undefined;
  /** The chain's steps, when the level has one: approvals count for the current step only. */
  readonly steps: readonly ChainStepRequirement[] | undefined;
  /** The index of the step whose turn it is (the steps' length once all are done). */
  step = 0;
  /** Per step, until when it could be decided (set as it becomes current). */
  private readonly stepExpiries: number[] = [];
  private readonly reminderBeforeMs: number | undefined;
  state: ApprovalView['state'] = 'pending';
  readonly approvals: string[] = [];
  readonly accepted: SignedDecision[] = [];
  readonly usedSignatures: string[] = [];
  /** Per invite id, decisions signed with its enrolled keys that the handler is asking about or refused. */
  readonly keyAttempts = new Map<string, number>();
  denial?: { approver: string; reason: string };
  /** Set when the round closed without a decision that counts: why it no longer holds. */
  supersededBecause?: string;
  /** Set when the call was cancelled (or its tool disabled) while the round was open: by whom and why. */
  cancelledBecause?: string;
  /** The signatures of edits the handler refused (each an accepted update in history): refused again at once. */
  readonly refusedEdits: string[] = [];
  /** Set when an approver's edit closed the round: the edit, and the evaluation of the edited arguments. */
  edit?: { signed: SignedEdit; evaluation: JudgedEdit };

  constructor(input: {
    number: number;
    runId: string;
    subject: ApprovalSubject;
    preview: Record<string, unknown>;
    supersedes?: RoundSupersession;
    eligible: string[];
  }) {
    const { subject } = input;
    this.anyEligible = input.eligible;
    this.steps = subject.requirement.chain;
    this.number = input.number;
    this.runId = input.runId;
    this.tool = subject.tool;
    this.argsDigest = digestOf(subject.args);
    this.contractDigest = subject.contractDigest;
    this.preview = input.preview;
    this.riskLevel = subject.riskLevel;
    this.quorum = subject.requirement.quorum;
    this.supersedes = input.supersedes;
    this.previewDigest = digestOf(input.preview);
    this.nonce = approvalNonce({
      runId: input.runId,
      round: input.number,
      previewDigest: this.previewDigest,
    });
    this.expiresAtMs = Date.now() + subject.requirement.windowMs;
    this.stepExpiries.push(this.expiresAtMs);
    this.reminderBeforeMs = subject.requirement.notifications?.reminder?.beforeMs;
    this.remindAtMs = this.reminderFor(subject.requirement.windowMs);
  }

  private reminderFor(windowMs: number): number | undefined {
    const before = this.reminderBeforeMs;
    return before !== undefined && before < windowMs ? this.expiresAtMs - before : undefined;
  }

  /** Whose turn it is: the current step's group members (a chain), or every eligible approver. */
  get eligible(): string[] {
    if (!this.steps) return this.anyEligible;
    return this.steps[this.step]?.members ?? [];
  }

  /** Why `approver` may not decide now, when the chain says it is another group's turn. */
  turnRefusal(approver: string): { code: 'APPROVER_NOT_ALLOWED'; reason: string } | undefined {
    const steps = this.steps;
    if (!steps) return undefined;
    const current = steps[this.step];
    if (!current || current.members.includes(approver)) return undefined;
    const theirs = steps.findIndex((step, index) => index > this.step && step.members.includes(approver));
    return {
      code: 'APPROVER_NOT_ALLOWED',
      reason:
        `it is group "${current.group}"'s turn (step ${this.step + 1} of ${steps.length})` +
        (theirs >= 0
          ? `; ${approver} decides at step ${theirs + 1} (group "${steps[theirs]!.group}"), once the steps before it approved`
          : `; ${approver} is not in any group this call's chain still asks`),
    };
  }

  /**
   * The nonce a decision must sign now: the round's, or in a chain the current step's (each step has
   * its own, so a decision signed while it was another group's turn never counts for this one).
   */
  get turnNonce(): string {
    return this.stepNonce(Math.min(this.step, (this.steps?.length ?? 1) - 1));
  }

  /** The nonce of step `index`: the round's for the first step (and a round without a chain). */
  private stepNonce(index: number): string {
    if (!this.steps || index === 0) return this.nonce;
    return approvalNonce({
      runId: this.runId,
      round: this.number,
      previewDigest: this.previewDigest,
      step: index + 1,
    });
  }

  /**
   * Whether `nonce` is the nonce of a chain step before the current one: a decision the validator
   * accepted for that step, whose handler ran after the turn passed on. (A nonce that matches no step
   * of this run is one a replay under a reset run's new id brings back: the validator accepted it.)
   */
  signedForEarlierStep(nonce: string): boolean {
    if (!this.steps) return false;
    return Array.from({ length: this.step }, (_, index) => this.stepNonce(index)).includes(nonce);
  }

  /** The approvals counted for the current step. */
  private stepApprovals(index: number): string[] {
    const steps = this.steps ?? [];
    const before = chainQuorum(steps.slice(0, index));
    return this.approvals.slice(before, before + (steps[index]?.quorum ?? 0));
  }

  get expiresAt(): string {
    return new Date(this.expiresAtMs).toISOString();
  }

  get decided(): boolean {
    if (this.denial !== undefined) return true;
    return this.steps ? this.step >= this.steps.length : this.approvals.length >= this.quorum;
  }

  /** Applies an accepted decision: a denial ends the round, approvals count towards the quorum. */
  apply(decision: SignedDecision): DecisionReceipt {
    this.usedSignatures.push(decision.signature);
    const { envelope } = decision;
    if (envelope.decision === 'deny') {
      this.denial = { approver: envelope.approver, reason: envelope.reason };
      this.state = 'denied';
    } else {
      this.approvals.push(envelope.approver);
      this.accepted.push(decision);
      this.advanceChain();
      if (this.decided) this.state = 'approved';
    }
    return { accepted: true, state: this.state, approvals: [...this.approvals], quorum: this.quorum };
  }

  /** A chain's step whose quorum is complete hands the turn to the next group, with its own window. */
  private advanceChain(): void {
    const steps = this.steps;
    const current = steps?.[this.step];
    if (!steps || !current || this.stepApprovals(this.step).length < current.quorum) return;
    this.step++;
    const next = steps[this.step];
    if (!next) return;
    this.expiresAtMs = Date.now() + next.windowMs;
    this.stepExpiries.push(this.expiresAtMs);
    this.remindAtMs = this.reminderFor(next.windowMs);
  }

  private chainView(): ChainView | undefined {
    const steps = this.steps;
    if (!steps) return undefined;
    return {
      step: this.step + 1,
      steps: steps.map((step, index) => {
        const expiry = this.stepExpiries[index];
        return {
          group: step.group,
          quorum: step.quorum,
          approvals: this.stepApprovals(index),
          state: index < this.step ? 'approved' : index === this.step ? 'current' : 'waiting',
          ...(expiry !== undefined ? { expiresAt: new Date(expiry).toISOString() } : {}),
        };
      }),
    };
  }

  view(): ApprovalView {
    return {
      round: this.number,
      nonce: this.turnNonce,
      runId: this.runId,
      argsDigest: this.argsDigest,
      previewDigest: this.previewDigest,
      contractDigest: this.contractDigest,
      preview: this.preview,
      riskLevel: this.riskLevel,
      quorum: this.quorum,
      approvals: [...this.approvals],
      expiresAt: this.expiresAt,
      state: this.state,
      ...(this.supersededBecause !== undefined ? { supersededBecause: this.supersededBecause } : {}),
      ...(this.cancelledBecause !== undefined ? { cancelledBecause: this.cancelledBecause } : {}),
      ...(this.supersedes ? { supersedes: this.supersedes } : {}),
      ...(this.edit ? { editedBy: this.edit.signed.envelope.approver } : {}),
      eligible: [...this.eligible],
      ...(this.remindAtMs !== undefined ? { remindAt: new Date(this.remindAtMs).toISOString() } : {}),
      ...(this.steps ? { chain: this.chainView()! } : {}),
    };
  }
}

/**
 * A call's human approval (docs/design.md step 7): rounds, each bound to the run, a nonce and the digests
 * of the arguments, of the preview the approvers read and of the tool's contract; the decision
 * validator; quorum, denial and expiry; and a new round when the world changed while the call waited
 * (the re-checked preview differs from the approved one, or a deploy changed the tool's contract: the
 * worker is asked for it with every decision that passes the validator, and once more before
 * execution). Decisions that do not hold are refused by the update's validator with their decision
 * code and leave no trace in history; the sink audits them. Only an enrolled key the registry must be
 * asked about reaches the handler first; what it answers is learned, and the refusals a round takes
 * there are capped, so such keys cannot flood the history either.
 */
export class CallApprovals {
  private round?: ApprovalRound;
  private readonly sinks = proxySinks<ToolGateSinks>();
  /**
   * What the registry's recorded answers taught this call (revoked keys, invites that enrol no other
   * key): fed by the handler only, so a replay rebuilds it; read by the validator, whose refusals
   * write no history.
   */
  private readonly learnedKeys = new LearnedKeyStatuses();
  /** A chain sent again (a flood reuses one) costs a digest, not three Ed25519 verifications. */
  private readonly verifyChain = memoisedKeyChainVerifier({ maxEntries: 128 });
  /** How an edit is judged, while `obtain` runs and takes edits. */
  private judgeEditNow?: (args: Record<string, unknown>) => Promise<EditVerdict>;

  constructor(
    private readonly call: {
      callId: string;
      runId: string;
      caller: string;
      /** The call's queryable state: the round's view and the accepted decisions are kept there. */
      state: CallState;
      /** Every approver's key and grants, as recorded by the call's evaluation. */
      approvers: () => Record<string, ApproverGrant> | undefined;
      /** Every operator's public key, as recorded by the call's evaluation (enrolled keys' chains verify with them). */
      operators: () => Record<string, string> | undefined;
      /** Writes the `ApprovalState` search attribute. */
      onStateChange: (state: ApprovalState) => void;
      /** Why the call stops waiting whatever is decided (cancelled, or its tool turned off); undefined while it waits. */
      interrupted?: () => string | undefined;
    },
  ) {}

  /**
   * Asks for approval until a round is approved with the same preview and the same tool contract that
   * would now run, or the call stops. `preview` and `recheck` are the pipeline's own steps;
   * `judgeAgain` evaluates the call again under the contract the worker holds now (after a deploy
   * while it waited); `onOpen` tells the agent; `onEnd` hears how each round ended (notifications).
   *
   * A contract change closes the round (a decision that sees it, or the check before execution) and
   * judges the call again: a refusal stops it; a call that still needs approval is checked and
   * previewed again and asked in a new round bound to the new contract; one that no longer needs it
   * (the new contract or policy lets the caller act alone) is checked again and goes on without it,
   * as any call evaluated under that contract would.
   */
  async obtain<Stop>(input: {
    subject: ApprovalSubject;
    preview: () => Promise<{ ok: true; preview: Record<string, unknown> } | { ok: false; stop: Stop }>;
    recheck: () => Promise<Stop | undefined>;
    judgeAgain: () => Promise<JudgedAgain<Stop>>;
    onOpen: (round: ApprovalView) => void;
    /** A chain's turn passed to its next group (the round stays open): notifications ask that group. */
    onTurn?: (round: ApprovalView) => void;
    onEnd?: (round: ApprovalView, ending: RoundEnding) => void;
    /**
     * Why the call must stop while it waits (cancelled by its caller or an operator), with its answer;
     * undefined while it may go on. Asked while a round is open: a round it interrupts closes
     * `cancelled` unless it was decided in the same breath (the pipeline asks again before execution).
     */
    interruption?: () => { reason: string; stop: () => Stop } | undefined;
    /**
     * Judges an approver's edited arguments (steps 1 to 5 with them in the model's place); absent, no
     * edit is taken. Asked by the edit's handler while the round stays open.
     */
    judgeEdit?: (args: Record<string, unknown>) => Promise<EditVerdict>;
    /** Goes on with an accepted edit's evaluation: the subject of the round that asks for the edited arguments. */
    applyEdit?: (evaluation: JudgedEdit, edit: SignedEdit) => ApprovalSubject;
  }): Promise<ApprovalOutcome<Stop>> {
    let subject = input.subject;
    this.judgeEditNow = input.judgeEdit;
    const edits: SignedEdit[] = [];
    let previewed = await input.preview();
    let supersedes: RoundSupersession | undefined;
    for (let number = 1; ; number++) {
      if (!previewed.ok) return { ok: false, ended: 'stopped', stop: previewed.stop };
      const round = new ApprovalRound({
        number,
        runId: this.call.runId,
        subject,
        preview: previewed.preview,
        ...(supersedes ? { supersedes } : {}),
        eligible: this.eligibleFor(subject.riskLevel),
      });
      this.open(round);
      input.onOpen(round.view());
      const ended = await this.untilDecided(round, input);
      this.round = undefined;
      let changed = round.supersededBecause;
      const interruption = round.decided || changed !== undefined ? undefined : input.interruption?.();
      if (interruption !== undefined) {
        round.cancelledBecause = interruption.reason;
        this.settle(round, 'cancelled');
        input.onEnd?.(round.view(), { state: 'cancelled', reason: interruption.reason });
        return { ok: false, ended: 'stopped', stop: interruption.stop() };
      }
      if (round.edit && changed !== undefined && input.applyEdit) {
        // An approver edited the arguments: the call goes on with their evaluation, checked and
        // previewed again, and asks in a new round for exactly those (the editor signs it too).
        input.onEnd?.(round.view(), { state: 'superseded', reason: changed });
        edits.push(round.edit.signed);
        subject = input.applyEdit(round.edit.evaluation, round.edit.signed);
        const stop = await input.recheck();
        if (stop !== undefined) return { ok: false, ended: 'stopped', stop };
        supersedes = { round: round.number, reason: changed };
        previewed = await input.preview();
        continue;
      }
      if (changed !== undefined) {
        // A decision found the contract changed: the handler closed the round already.
        input.onEnd?.(round.view(), { state: 'superseded', reason: changed });
      } else if (!ended) {
        this.settle(round, 'expired');
        input.onEnd?.(round.view(), { state: 'expired' });
        return { ok: false, ended: 'expired', expiresAt: round.expiresAt };
      } else if (round.denial) {
        this.settle(round, 'denied');
        input.onEnd?.(round.view(), { state: 'denied', ...round.denial });
        return { ok: false, ended: 'denied', ...round.denial };
      } else {
        this.settle(round, 'approved');
        input.onEnd?.(round.view(), { state: 'approved', approvers: [...round.approvals] });
        // Step 7b: the world may have changed while the call waited: check and preview again.
        const stop = await input.recheck();
        if (stop !== undefined) return { ok: false, ended: 'stopped', stop };
        previewed = await input.preview();
        if (!previewed.ok) continue;
        if (digestOf(previewed.preview) !== round.previewDigest) {
          // The approvers approved something else than what would now run: a new round.
          supersedes = {
            round: round.number,
            reason: 'the effect changed after approval (the checks and the preview ran again)',
          };
          continue;
        }
        // Last, right before execution: a deploy since the last decision changed the contract?
        changed = await this.contractChange(round);
        if (changed === undefined) {
          return {
            ok: true,
            approval: {
              round: round.number,
              nonce: round.nonce,
              previewDigest: round.previewDigest,
              decisions: round.accepted,
              ...(edits.length > 0 ? { edits } : {}),
            },
          };
        }
        this.supersede(round, changed);
      }
      // The contract changed: the call is judged again under the one that would run it.
      const judged = await input.judgeAgain();
      if (!judged.ok) return { ok: false, ended: 'stopped', stop: judged.stop };
      const stop = await input.recheck();
      if (stop !== undefined) return { ok: false, ended: 'stopped', stop };
      if (!judged.subject) return { ok: true };
      subject = judged.subject;
      supersedes = { round: round.number, reason: changed };
      previewed = await input.preview();
    }
  }

  /**
   * Waits until the round is decided, closed or interrupted (true), or until it expires (false). A
   * chain's step that completes hands the turn on: the next group is told (`onTurn`), and its own
   * window starts; the step whose turn it is expiring expires the round.
   */
  private async untilDecided(
    round: ApprovalRound,
    input: { interruption?: () => unknown; onTurn?: (round: ApprovalView) => void },
  ): Promise<boolean> {
    const over = () =>
      round.decided || round.supersededBecause !== undefined || input.interruption?.() !== undefined;
    for (;;) {
      const step = round.step;
      const woke = await condition(() => over() || round.step !== step, round.expiresAtMs - Date.now());
      if (!woke) return false;
      if (over()) return true;
      input.onTurn?.(round.view());
    }
  }

  /** The approvers who may decide a round of `riskLevel`: granted it, not operating the caller. */
  private eligibleFor(riskLevel: RiskLevel): string[] {
    const approvers = this.call.approvers() ?? {};
    return Object.keys(approvers)
      .filter((name) => {
        const grant = approvers[name]!;
        return (
          !levelRefusal({ approver: name, grant, riskLevel }) && !grant.operates.includes(this.call.caller)
        );
      })
      .sort();
  }

  private open(round: ApprovalRound): void {
    this.round = round;
    this.call.state.approval = round.view();
    this.call.state.stage = 'awaiting-approval';
    this.call.onStateChange('pending');
  }

  private settle(round: ApprovalRound, state: 'expired' | 'denied' | 'approved' | 'cancelled'): void {
    round.state = state;
    this.call.state.approval = round.view();
    this.call.onStateChange(state);
  }

  /** Closes a round that no longer holds (nothing is pending until a new round opens, if one does). */
  private supersede(round: ApprovalRound, reason: string): void {
    round.state = 'superseded';
    round.supersededBecause = reason;
    this.call.state.approval = round.view();
    this.call.onStateChange('none');
  }

  /**
   * Why the round's contract is not the one the worker would run the call under now, or undefined
   * when it is. A worker that cannot answer cannot vouch for it either: that counts as a change.
   */
  private async contractChange(round: ApprovalRound): Promise<string | undefined> {
    const current = await this.currentContractDigest(round.tool);
    if (current === round.contractDigest) return undefined;
    return current === undefined
      ? `the worker could not confirm the contract of ${round.tool} before running the call`
      : contractChangedReason(round.tool);
  }

  /** The worker's digest of the tool's contract now (null: no such tool); undefined when it did not answer. */
  private async currentContractDigest(tool: string): Promise<string | null | undefined> {
    try {
      return (await contractActivities.currentContractDigest({ tool })).contractDigest;
    } catch {
      return undefined;
    }
  }

  async decide(decision: SignedDecision): Promise<DecisionReceipt> {
    const round = this.round;
    if (!round) throw this.refuse({ decision, code: 'ALREADY_DECIDED', reason: 'no approval is open' });
    // A cancellation (or a kill switch) taken in the same breath wins: the round must not read approved.
    const interrupted = this.call.interrupted?.();
    if (interrupted !== undefined)
      throw this.refuse({ decision, code: 'ALREADY_DECIDED', reason: interrupted });
    if (decision.key !== undefined) {
      // An enrolled key: the validator verified its chain purely; only the registry knows whether it
      // is still enrolled, so it is asked now (a recorded local activity).
      const keyRefusal = await this.keyRefusal(round, decision);
      if (keyRefusal) throw this.refuse({ decision, ...keyRefusal });
    }
    // Every decision: the worker is asked for the tool's contract now (a recorded local activity), so
    // a decision never counts for a definition a deploy replaced while the call waited.
    const current = await this.currentContractDigest(round.tool);
    // The round is judged again after the handler waited: it may have closed or counted meanwhile.
    const refusal = this.roundRefusal(round, decision) ?? this.contractRefusal(round, current);
    if (refusal) throw this.refuse({ decision, ...refusal });
    const receipt = round.apply(decision);
    this.record({ decision, outcome: 'accepted', round: round.number });
    this.call.state.approval = round.view();
    return receipt;
  }

  /**
   * `CONTRACT_CHANGED` when the worker's contract of the tool is not the round's: the round is then
   * closed as superseded and the approval loop judges the call again. A worker that did not answer
   * refuses the decision alone (the round stays open: try again).
   */
  private contractRefusal(
    round: ApprovalRound,
    current: string | null | undefined,
  ): { code: DecisionRefusalCode; reason: string } | undefined {
    if (current === round.contractDigest) return undefined;
    if (current === undefined) {
      return {
        code: 'CONTRACT_CHANGED',
        reason: `the worker could not confirm the contract of ${round.tool} is this round's; try again`,
      };
    }
    const reason = contractChangedReason(round.tool);
    this.supersede(round, reason);
    return { code: 'CONTRACT_CHANGED', reason: `${reason}: open the call again to see the new round` };
  }

  /**
   * Why an enrolled key's decision does not count: the registry does not hold it enrolled now, or
   * cannot say. What the registry answered is learned, so the validator refuses the next attempts.
   */
  private async keyRefusal(
    round: ApprovalRound,
    decision: SignedDecision | SignedEdit,
  ): Promise<{ code: DecisionRefusalCode; reason: string } | undefined> {
    const chain = this.verifyChain({
      chain: decision.key,
      operators: this.call.operators(),
      approver: decision.envelope.approver,
    });
    if (!chain.ok)
      return { code: 'SIGNATURE_INVALID', reason: `the key's chain does not hold: ${chain.reason}` };
    // Counted before the lookup is awaited, so the validators of a burst see the attempts in flight;
    // a key this call already saw enrolled is never counted, and one the registry vouches for is released.
    const { inviteId } = chain.key;
    const counted = !this.learnedKeys.isVerifiedEnrolled(chain.key);
    if (counted) round.keyAttempts.set(inviteId, (round.keyAttempts.get(inviteId) ?? 0) + 1);
    let found: ApproverKeyStatus;
    try {
      // The invite too: for a key it does not hold, the registry says whether that invite could
      // still enrol it (answers recorded before carry no invite; they replay all the same).
      found = await keyActivities.approverKeyStatus({
        keyId: chain.key.keyId,
        inviteId: chain.key.inviteId,
      });
    } catch {
      // Fail closed: a key nobody can vouch for right now approves nothing (and nothing is learned).
      return { code: 'KEY_UNKNOWN', reason: 'the key registry did not answer; try again' };
    }
    const refusal = this.learnedKeys.learn(chain.key, found);
    if (!refusal && counted) round.keyAttempts.set(inviteId, (round.keyAttempts.get(inviteId) ?? 1) - 1);
    return refusal;
  }

  /**
   * The validator's refusal of an enrolled key without asking the registry: what this call learned
   * already, then the round's cap on its invite's attempts in the handler (see `maxKeyAttemptsPerInvite`).
   */
  private knownKeyRefusal(round: ApprovalRound, key: VerifiedKey): KnownKeyRefusal | undefined {
    const learned = this.learnedKeys.refusal(key);
    if (learned) return learned;
    const attempts = round.keyAttempts.get(key.inviteId) ?? 0;
    if (attempts >= maxKeyAttemptsPerInvite && !this.learnedKeys.isVerifiedEnrolled(key)) {
      return {
        code: 'KEY_UNKNOWN',
        reason:
          `this round took ${attempts} decisions signed with keys enrolled through invite ${key.inviteId}; ` +
          'it now accepts only its keys already verified enrolled in this call: sign with your approver ' +
          'key file (the CLI) instead',
      };
    }
    return undefined;
  }

  /** The round's own refusals, checked again after the handler waited: it may have closed or counted meanwhile. */
  private roundRefusal(
    round: ApprovalRound,
    decision: SignedDecision,
  ): { code: DecisionRefusalCode; reason: string } | undefined {
    if (round.supersededBecause !== undefined) return supersededRefusal(round.view());
    if (this.round !== round) {
      return round.state === 'expired'
        ? { code: 'APPROVAL_EXPIRED', reason: 'the approval window has closed' }
        : { code: 'ALREADY_DECIDED', reason: 'this round is already decided' };
    }
    if (Date.now() >= round.expiresAtMs)
      return { code: 'APPROVAL_EXPIRED', reason: 'the approval window has closed' };
    if (round.decided) return { code: 'ALREADY_DECIDED', reason: 'this round is already decided' };
    if (
      round.usedSignatures.includes(decision.signature) ||
      round.approvals.includes(decision.envelope.approver)
    ) {
      return { code: 'DECISION_REPLAYED', reason: 'this approver already decided this round' };
    }
    // A chain's turn may have passed on while the handler waited: the decision was signed for the step before.
    if (round.signedForEarlierStep(decision.envelope.nonce)) {
      return {
        code: 'DIGEST_MISMATCH',
        reason: 'the chain moved on to its next step while this decision was sent: open the call again',
      };
    }
    return round.turnRefusal(decision.envelope.approver);
  }

  /** The update's validator: round state first, then the decision rules shared with the minter. */
  validate(decision: SignedDecision): void {
    const round = this.round;
    const problem = decisionShapeProblem(decision);
    if (problem !== undefined) {
      throw this.refuse({ decision, code: 'SIGNATURE_INVALID', reason: `not a signed decision: ${problem}` });
    }
    if (!round) {
      throw this.refuse({ decision, ...this.noRoundRefusal() });
    }
    const closed = this.openRoundRefusal(round);
    if (closed) throw this.refuse({ decision, ...closed });
    const judgement = judgeDecision({
      decision,
      round: this.binding(round),
      approvers: this.call.approvers(),
      operators: this.call.operators(),
      decidedBy: { signatures: round.usedSignatures, approvers: round.approvals },
      verifyChain: this.verifyChain,
    });
    if (!judgement.ok) throw this.refuse({ decision, code: judgement.code, reason: judgement.reason });
    const turn = round.turnRefusal(judgement.envelope.approver);
    if (turn) throw this.refuse({ decision, ...turn });
    // An enrolled key the registry already refused for good, or past the round's cap: refused here,
    // where a refusal writes no history, instead of in the handler after a recorded lookup.
    const known = judgement.key ? this.knownKeyRefusal(round, judgement.key) : undefined;
    if (known) throw this.refuse({ decision, ...known });
  }

  /** Why nothing can be decided or edited when no round is open: the last round's state says. */
  private noRoundRefusal(): { code: DecisionRefusalCode; reason: string } {
    const last = this.call.state.approval;
    if (last?.state === 'superseded') return supersededRefusal(last);
    const expired = last?.state === 'expired';
    return {
      code: expired ? 'APPROVAL_EXPIRED' : 'ALREADY_DECIDED',
      reason: expired ? 'the approval window has closed' : 'this call has no open approval',
    };
  }

  /** Why the open round takes nothing now (superseded, expired, decided, the call interrupted), or undefined. */
  private openRoundRefusal(round: ApprovalRound): { code: DecisionRefusalCode; reason: string } | undefined {
    if (round.supersededBecause !== undefined) return supersededRefusal(round.view());
    if (Date.now() >= round.expiresAtMs)
      return { code: 'APPROVAL_EXPIRED', reason: 'the approval window has closed' };
    if (round.decided) return { code: 'ALREADY_DECIDED', reason: 'this round is already decided' };
    const interrupted = this.call.interrupted?.();
    if (interrupted !== undefined) return { code: 'ALREADY_DECIDED', reason: interrupted };
    return undefined;
  }

  /** The binding of the open round, as a decision or an edit must name it. */
  private binding(round: ApprovalRound) {
    return {
      callId: this.call.callId,
      runId: round.runId,
      nonce: round.turnNonce,
      argsDigest: round.argsDigest,
      previewDigest: round.previewDigest,
      contractDigest: round.contractDigest,
      riskLevel: round.riskLevel,
      caller: this.call.caller,
    };
  }

  /**
   * The edit update's validator: the open round's state, then the rules a decision obeys and the
   * edit's own digest (`judgeEdit`). Refusals here write no history, like a decision's.
   */
  validateEdit(edit: SignedEdit): void {
    const problem = editShapeProblem(edit);
    if (problem !== undefined) {
      throw this.refuse({
        decision: edit,
        code: 'SIGNATURE_INVALID',
        reason: `not a signed edit: ${problem}`,
      });
    }
    const round = this.round;
    if (!round) throw this.refuse({ decision: edit, ...this.noRoundRefusal() });
    if (!this.judgeEditNow) {
      throw this.refuse({ decision: edit, code: 'ALREADY_DECIDED', reason: 'this call takes no edits' });
    }
    const closed = this.openRoundRefusal(round);
    if (closed) throw this.refuse({ decision: edit, ...closed });
    const judgement = judgeEdit({
      edit,
      round: this.binding(round),
      approvers: this.call.approvers(),
      operators: this.call.operators(),
      verifyChain: this.verifyChain,
    });
    if (!judgement.ok) throw this.refuse({ decision: edit, code: judgement.code, reason: judgement.reason });
    const turn = round.turnRefusal(judgement.envelope.approver);
    if (turn) throw this.refuse({ decision: edit, ...turn });
    if (round.usedSignatures.includes(edit.signature) || round.refusedEdits.includes(edit.signature)) {
      throw this.refuse({ decision: edit, code: 'DECISION_REPLAYED', reason: 'this edit was already sent' });
    }
    if (round.refusedEdits.length >= maxRefusedEdits) {
      throw this.refuse({
        decision: edit,
        code: 'EDIT_REFUSED',
        reason: `this round refused ${round.refusedEdits.length} edits already; approve or deny it as it is`,
      });
    }
    const known = judgement.key ? this.knownKeyRefusal(round, judgement.key) : undefined;
    if (known) throw this.refuse({ decision: edit, ...known });
  }

  /**
   * An edit that passed the validator: the registry is asked about an enrolled key, the worker about
   * the contract, then the edited arguments are judged (steps 1 to 5 with them) while the round stays
   * open. When they hold, and the editor's grant covers their risk level, the round closes superseded
   * and the approval loop asks in a new round for the edited arguments. Any refusal leaves the round
   * as it was.
   */
  async edit(edit: SignedEdit): Promise<EditReceipt> {
    const round = this.round;
    const judge = this.judgeEditNow;
    if (!round || !judge)
      throw this.refuse({ decision: edit, code: 'ALREADY_DECIDED', reason: 'no approval is open' });
    if (edit.key !== undefined) {
      const keyRefusal = await this.keyRefusal(round, edit);
      if (keyRefusal) throw this.refuse({ decision: edit, ...keyRefusal });
    }
    const current = await this.currentContractDigest(round.tool);
    const refusal = this.editRefusal(round, edit) ?? this.contractRefusal(round, current);
    if (refusal) throw this.refuse({ decision: edit, ...refusal });
    const verdict = await judge(edit.envelope.editedArgs);
    // The round may have been decided, edited or closed while the edit was judged.
    const meanwhile = this.editRefusal(round, edit);
    if (meanwhile) throw this.refuse({ decision: edit, ...meanwhile });
    const { envelope } = edit;
    const refused = (refusal: { code: EditRefusalCode; reason: string }) => {
      // A refusal here is an accepted update in history: the same edit sent again is refused by the
      // validator, and an approver's refused edits in one round are capped (see `maxRefusedEdits`).
      round.refusedEdits.push(edit.signature);
      return this.refuse({ decision: edit, ...refusal });
    };
    if (!verdict.ok) throw refused(verdict);
    const riskLevel = verdict.evaluation.call.riskLevel;
    // What the new round binds is what the evaluation made of the edited arguments: exactly those signed.
    if (digestOf(verdict.evaluation.call.args) !== envelope.editedDigest) {
      throw refused({
        code: 'EDIT_REFUSED',
        reason:
          "the tool's contract changes the edited arguments (a default or a transform): send them as it validates them",
      });
    }
    // The editor's grant, by the policy the edited arguments were judged under.
    const grant = ownValue(verdict.evaluation.approvers, envelope.approver);
    const beyond = grant
      ? levelRefusal({ approver: envelope.approver, grant, riskLevel })
      : { code: 'APPROVER_UNKNOWN' as const, reason: 'no such approver' };
    if (beyond) throw refused(beyond);
    round.usedSignatures.push(edit.signature);
    round.edit = { signed: edit, evaluation: verdict.evaluation };
    this.record({ decision: edit, outcome: 'accepted', round: round.number });
    this.call.state.edits = [
      ...(this.call.state.edits ?? []),
      {
        approver: envelope.approver,
        reason: envelope.reason,
        round: round.number,
        argsDigest: round.argsDigest,
        editedDigest: envelope.editedDigest,
        proposedArguments: this.call.state.validatedArguments ?? {},
        editedArguments: verdict.evaluation.call.args,
        riskLevel,
        at: new Date(Date.now()).toISOString(),
      },
    ];
    this.supersede(round, `${envelope.approver} edited the arguments: ${envelope.reason}`);
    return { accepted: true, round: round.number, editedDigest: envelope.editedDigest, riskLevel };
  }

  /** The open round's refusals of an edit, checked again after the handler waited. */
  private editRefusal(
    round: ApprovalRound,
    edit: SignedEdit,
  ): { code: DecisionRefusalCode; reason: string } | undefined {
    if (this.round !== round && round.supersededBecause === undefined) {
      return round.state === 'expired'
        ? { code: 'APPROVAL_EXPIRED', reason: 'the approval window has closed' }
        : { code: 'ALREADY_DECIDED', reason: 'this round is already decided' };
    }
    const closed = this.openRoundRefusal(round);
    if (closed) return closed;
    if (round.usedSignatures.includes(edit.signature)) {
      return { code: 'DECISION_REPLAYED', reason: 'this edit was already sent' };
    }
    if (round.signedForEarlierStep(edit.envelope.nonce)) {
      return {
        code: 'DIGEST_MISMATCH',
        reason: 'the chain moved on to its next step while this edit was sent: open the call again',
      };
    }
    return round.turnRefusal(edit.envelope.approver);
  }

  private refuse(input: {
    decision: SignedDecision | SignedEdit;
    code: EditRefusalCode;
    reason: string;
  }): Error {
    this.record({ decision: input.decision, outcome: input.code, round: this.round?.number ?? 0 });
    return ApplicationFailure.create({
      type: input.code,
      message: `${input.code}: ${input.reason}`,
      nonRetryable: true,
    });
  }

  /** Accepted decisions join the call's state; every attempt goes to the audit sink (not during replay). */
  private record(input: { decision: SignedDecision | SignedEdit; outcome: string; round: number }): void {
    const envelope = input.decision?.envelope as Partial<SignedDecision['envelope'] & SignedEdit['envelope']>;
    const approver = typeof envelope?.approver === 'string' ? envelope.approver : '(unknown)';
    const isEdit = typeof envelope?.editedDigest === 'string' || typeof envelope?.editedArgs === 'object';
    const decision = isEdit ? 'edit' : typeof envelope?.decision === 'string' ? envelope.decision : '(none)';
    if (input.outcome === 'accepted' && !isEdit && envelope?.decision) {
      this.call.state.decisions.push({
        approver,
        decision: envelope.decision,
        reason: typeof envelope.reason === 'string' ? envelope.reason : '',
        round: input.round,
        outcome: input.outcome,
        at: new Date(Date.now()).toISOString(),
      });
    }
    const publicKeyHex = (input.decision?.key as { enrolment?: { enrolment?: { publicKeyHex?: unknown } } })
      ?.enrolment?.enrolment?.publicKeyHex;
    this.sinks.audit.decisionAttempt({
      updateId: currentUpdateInfo()?.id ?? '(none)',
      callId: this.call.callId,
      runId: this.call.runId,
      approver,
      decision,
      outcome: input.outcome,
      envelope: envelope ?? null,
      ...(typeof publicKeyHex === 'string' ? { keyId: keyIdOf(publicKeyHex) } : {}),
    });
  }
}
