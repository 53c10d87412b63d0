import type { RiskLevel } from '../tools/risk-levels';
import { riskRank } from '../tools/risk-levels';
import type { DecisionEnvelope, EditEnvelope, SignedDecision, SignedEdit } from './protocol';
import { maxDecisionReasonLength } from './protocol';
import type { KeyChain, VerifiedKey } from '../approver-keys/protocol';
import { verifyKeyChain } from '../approver-keys/protocol';
import type { DecisionRefusalCode, EditRefusalCode } from '../shared/codes';
import { digestOf } from '../shared/canonical-json';
import { ownValue } from '../shared/own-records';
import { verifySignature } from '../shared/signatures';

/*
 * The rules that decide whether an approver's signed decision holds for an approval round, written
 * once for the call workflow's update validator and the credential minter. Pure and sandbox-safe: no
 * Node built-ins, no clock; signatures are checked by the pure-JS verifier. The round's own state
 * (open, expired, already decided) is the workflow's to check, not these rules'.
 */

/** What a round binds a decision to: the call, run, nonce and digests it must name, the call's risk level and its caller. */
export interface RoundBinding {
  callId: string;
  runId: string;
  nonce: string;
  argsDigest: string;
  previewDigest: string;
  /** The tool's contract the round was opened under (the minter's: the one its own registry holds). */
  contractDigest: string;
  riskLevel: RiskLevel;
  caller: string;
}

/** What the policy grants an approver: the key their decisions verify with, the highest level, the callers they operate. */
export interface ApproverGrant {
  publicKeyHex: string;
  maxLevel: RiskLevel;
  operates: readonly string[];
}

/** What this round has already counted: every signature used, and every approver who approved. */
export interface DecidedBy {
  signatures: readonly string[];
  approvers: readonly string[];
}

/** Whether a decision holds for the round: its envelope when it does, otherwise the code and reason the approver is told. */
export type DecisionJudgement =
  | {
      ok: true;
      envelope: DecisionEnvelope;
      /** The enrolled key it was signed with; the registry must still say it is enrolled and not revoked. */
      key?: VerifiedKey;
    }
  | { ok: false; code: DecisionRefusalCode; reason: string };

// Every field of an envelope, each a string: a field added to DecisionEnvelope does not compile here
// until it is listed, and so checked.
const envelopeFields: Record<keyof DecisionEnvelope, true> = {
  callId: true,
  runId: true,
  nonce: true,
  argsDigest: true,
  previewDigest: true,
  contractDigest: true,
  decision: true,
  approver: true,
  reason: true,
  issuedAt: true,
};

/** The fields a signed decision may carry besides its envelope's. */
const signedDecisionFields = new Set(['envelope', 'signature', 'key']);

/**
 * What keeps `value` from being a signed decision, or undefined when it is one: a string signature,
 * an optional key chain, nothing else; an envelope with exactly the envelope's fields, each a string
 * (so `["alice"]` never passes for `alice`, and nothing unsigned-for rides along), and a reason of at
 * most `maxDecisionReasonLength` characters. Never throws.
 */
export function decisionShapeProblem(value: unknown): string | undefined {
  return signedShapeProblem(value, { noun: 'decision', fields: envelopeFields });
}

/**
 * The shape a signed decision and a signed edit share: a string signature, an optional key chain,
 * nothing else; an envelope with exactly `fields`, each of its kind (`true` or `'string'`: a string;
 * `'object'`: a plain object), and a reason of at most `maxDecisionReasonLength` characters.
 */
function signedShapeProblem(
  value: unknown,
  input: { noun: 'decision' | 'edit'; fields: Record<string, true | 'string' | 'object'> },
): string | undefined {
  const { noun, fields } = input;
  if (!isRecord(value) || typeof value.signature !== 'string') return 'expected {envelope, signature}';
  if (value.key !== undefined && !isRecord(value.key)) return 'its key chain is not an object';
  const extra = Object.keys(value).filter((field) => !signedDecisionFields.has(field));
  if (extra.length) return `it has fields ${article(noun)} does not have: ${extra.slice(0, 5).join(', ')}`;
  const envelope = value.envelope;
  if (!isRecord(envelope)) return 'its envelope is not an object';
  const wrong = Object.entries(fields)
    .filter(([field, kind]) =>
      kind === 'object' ? !isRecord(envelope[field]) : typeof envelope[field] !== 'string',
    )
    .map(([field]) => field);
  if (wrong.length) {
    const textOnly = Object.values(fields).every((kind) => kind !== 'object');
    return `envelope fields ${textOnly ? 'that are not strings' : 'missing or of the wrong type'}: ${wrong.join(', ')}`;
  }
  const unknown = Object.keys(envelope).filter((field) => !Object.hasOwn(fields, field));
  if (unknown.length)
    return `envelope fields ${article(noun)} does not have: ${unknown.slice(0, 5).join(', ')}`;
  const reason = envelope.reason as string;
  if (reason.length > maxDecisionReasonLength) {
    return `its reason is ${reason.length} characters; give one of at most ${maxDecisionReasonLength}`;
  }
  return undefined;
}

function article(noun: 'decision' | 'edit'): string {
  return noun === 'edit' ? 'an edit' : 'a decision';
}

/**
 * True when `value` has the shape of a signed decision (see `decisionShapeProblem`). The workflow asks
 * it before its round checks, so a malformed decision is `SIGNATURE_INVALID` whatever the round's state.
 */
export function isSignedDecision(value: unknown): value is SignedDecision {
  return decisionShapeProblem(value) === undefined;
}

/**
 * Judges one decision against one round, in this order: shape, approver known (own properties of
 * `approvers` only, so `constructor` or `__proto__` is nobody), signature by that approver's key (the
 * policy's, or, with a key chain, the enrolled key once the chain verifies against `operators`),
 * grant covers the risk level, approver does not operate the caller, bound to this call and run and to
 * the round's tool contract (`CONTRACT_CHANGED`: signed for another definition of the tool), then to
 * its nonce and digests, not already counted in this round, `approve` or `deny`. The first rule
 * broken is the answer. Pure; never throws, whatever `decision` is.
 */
export function judgeDecision(input: {
  decision: unknown;
  round: RoundBinding;
  /** The policy's approvers by name; undefined when none are known (then every approver is unknown). */
  approvers: Readonly<Record<string, ApproverGrant>> | undefined;
  /** The policy's operators' public keys by name: an enrolled key's invite must be signed by one (none: no chain holds). */
  operators?: Readonly<Record<string, string>> | undefined;
  decidedBy: DecidedBy;
  /** How a key chain is verified: `verifyKeyChain` unless given one with the same verdicts (the workflow's memoised one). */
  verifyChain?: typeof verifyKeyChain;
}): DecisionJudgement {
  const problem = decisionShapeProblem(input.decision);
  if (problem !== undefined) return refused('SIGNATURE_INVALID', `not a signed decision: ${problem}`);
  const decision = input.decision as SignedDecision;
  const { envelope } = decision;
  const signed = judgeSignedForRound({ ...input, kind: 'decision', signed: decision });
  if (!signed.ok) return signed;
  if (
    input.decidedBy.signatures.includes(decision.signature) ||
    input.decidedBy.approvers.includes(envelope.approver)
  ) {
    return refused('DECISION_REPLAYED', 'this approver already decided this round');
  }
  if (envelope.decision !== 'approve' && envelope.decision !== 'deny') {
    return refused('SIGNATURE_INVALID', 'a decision is "approve" or "deny"');
  }
  return signed.key ? { ok: true, envelope, key: signed.key } : { ok: true, envelope };
}

/** What a signed decision and a signed edit share: who signed, with which key, for which round. */
interface SignedForRound {
  envelope: {
    callId: string;
    runId: string;
    nonce: string;
    argsDigest: string;
    previewDigest: string;
    contractDigest: string;
    approver: string;
  };
  signature: string;
  key?: KeyChain;
}

/**
 * The rules a decision and an edit share, in order: approver known (own properties of `approvers`
 * only, so `constructor` or `__proto__` is nobody), signature by that approver's key (the policy's,
 * or, with a key chain, the enrolled key once the chain verifies against `operators`), grant covers
 * the round's risk level, approver does not operate the caller, bound to this call and run and to
 * the round's tool contract (`CONTRACT_CHANGED`), then to its nonce and digests. Pure; the shape is
 * the caller's to have checked.
 */
function judgeSignedForRound(input: {
  kind: 'decision' | 'edit';
  signed: SignedForRound;
  round: RoundBinding;
  approvers: Readonly<Record<string, ApproverGrant>> | undefined;
  operators?: Readonly<Record<string, string>> | undefined;
  verifyChain?: typeof verifyKeyChain;
}): { ok: true; key?: VerifiedKey } | { ok: false; code: DecisionRefusalCode; reason: string } {
  const { round, signed: decision } = input;
  const { envelope } = decision;
  const approver = ownValue(input.approvers, envelope.approver);
  if (!approver) return refused('APPROVER_UNKNOWN', 'no such approver');
  let key: VerifiedKey | undefined;
  if (decision.key !== undefined) {
    const chain = (input.verifyChain ?? verifyKeyChain)({
      chain: decision.key,
      operators: input.operators,
      approver: envelope.approver,
    });
    if (!chain.ok) return refused('SIGNATURE_INVALID', `the key's chain does not hold: ${chain.reason}`);
    key = chain.key;
  }
  const signed = verifySignature({
    kind: input.kind,
    value: envelope,
    signature: decision.signature,
    publicKeyHex: key ? key.publicKeyHex : approver.publicKeyHex,
  });
  if (!signed) return refused('SIGNATURE_INVALID', "not signed with the approver's key");
  const level = levelRefusal({ approver: envelope.approver, grant: approver, riskLevel: round.riskLevel });
  if (level) return level;
  if (approver.operates.includes(round.caller)) {
    return refused(
      'SELF_APPROVAL',
      `${envelope.approver} operates ${round.caller} and may not approve its calls`,
    );
  }
  const sameRun = envelope.callId === round.callId && envelope.runId === round.runId;
  if (sameRun && envelope.contractDigest !== round.contractDigest) {
    return refused('CONTRACT_CHANGED', contractChangedReason);
  }
  const bound =
    sameRun &&
    envelope.nonce === round.nonce &&
    envelope.argsDigest === round.argsDigest &&
    envelope.previewDigest === round.previewDigest;
  if (!bound) {
    return refused(
      'DIGEST_MISMATCH',
      `the ${input.kind} is not for this round: call, run, nonce, arguments, preview and contract must all match`,
    );
  }
  return key ? { ok: true, key } : { ok: true };
}

/**
 * `APPROVER_NOT_ALLOWED` when the approver's grant stops below `riskLevel`. A level that is not a
 * known one is beyond every grant: the check fails closed.
 */
export function levelRefusal(input: {
  approver: string;
  grant: ApproverGrant;
  riskLevel: RiskLevel;
}): { ok: false; code: 'APPROVER_NOT_ALLOWED'; reason: string } | undefined {
  const needed = riskRank(input.riskLevel);
  if (needed >= 0 && riskRank(input.grant.maxLevel) >= needed) return undefined;
  return {
    ok: false,
    code: 'APPROVER_NOT_ALLOWED',
    reason: `${input.approver} may approve up to "${input.grant.maxLevel}", this call is "${input.riskLevel}"`,
  };
}

/** Whether an edit holds for the round: its envelope when it does, otherwise the code and reason the approver is told. */
export type EditJudgement =
  | { ok: true; envelope: EditEnvelope; key?: VerifiedKey }
  | { ok: false; code: EditRefusalCode; reason: string };

// Every field of an edit's envelope and whether it is text: a field added to EditEnvelope does not
// compile here until it is listed, and so checked.
const editFields: Record<keyof EditEnvelope, 'string' | 'object'> = {
  callId: 'string',
  runId: 'string',
  nonce: 'string',
  argsDigest: 'string',
  previewDigest: 'string',
  contractDigest: 'string',
  editedArgs: 'object',
  editedDigest: 'string',
  approver: 'string',
  reason: 'string',
  issuedAt: 'string',
};

/**
 * What keeps `value` from being a signed edit, or undefined when it is one: a string signature, an
 * optional key chain, nothing else; an envelope with exactly the edit's fields, `editedArgs` an
 * object and every other one a string, a reason of at most `maxDecisionReasonLength` characters.
 * Never throws.
 */
export function editShapeProblem(value: unknown): string | undefined {
  return signedShapeProblem(value, { noun: 'edit', fields: editFields });
}

/**
 * Judges one edit against one round: shape, then the rules a decision obeys (see
 * `judgeSignedForRound`), then `editedDigest` is the digest of `editedArgs` (`DIGEST_MISMATCH`) and
 * they differ from the round's (`EDIT_UNCHANGED`). Whether the edited arguments can run (schema,
 * bound parameters, resource, policy, the editor's grant at their level) is the evaluation's to say.
 * Pure; never throws.
 */
export function judgeEdit(input: {
  edit: unknown;
  round: RoundBinding;
  approvers: Readonly<Record<string, ApproverGrant>> | undefined;
  operators?: Readonly<Record<string, string>> | undefined;
  verifyChain?: typeof verifyKeyChain;
}): EditJudgement {
  const problem = editShapeProblem(input.edit);
  if (problem !== undefined) return refused('SIGNATURE_INVALID', `not a signed edit: ${problem}`);
  const edit = input.edit as SignedEdit;
  const signed = judgeSignedForRound({ ...input, kind: 'edit', signed: edit });
  if (!signed.ok) return signed;
  const { envelope } = edit;
  if (digestOf(envelope.editedArgs) !== envelope.editedDigest) {
    return refused('DIGEST_MISMATCH', 'editedDigest is not the digest of editedArgs');
  }
  if (envelope.editedDigest === input.round.argsDigest) {
    return refused('EDIT_UNCHANGED', "the edited arguments are the round's own: approve or deny instead");
  }
  return signed.key ? { ok: true, envelope, key: signed.key } : { ok: true, envelope };
}

/** What an approver is told when their decision names another tool contract than the round's. */
const contractChangedReason =
  "the tool's contract changed: this decision was signed for another definition of the tool than " +
  "this round's; open the call again to see the new round";

/** The approvers who approved, each once, in the order they first appear: nobody counts twice toward a quorum. */
export function distinctApprovers(approvers: readonly string[]): string[] {
  return [...new Set(approvers)];
}

/**
 * True when at least `quorum` distinct approvers approved. A quorum below one counts as one, so
 * nothing is ever approved by nobody.
 */
export function quorumReached(input: { approvers: readonly string[]; quorum: number }): boolean {
  return distinctApprovers(input.approvers).length >= Math.max(1, input.quorum);
}

/**
 * Judges an edit as the minter reads it, without the round it edited (the minter knows no earlier
 * round's nonce, preview or contract; the decisions that approve what runs bind those): shape, the
 * approver's key and chain, not the caller's operator, bound to this call and run, `editedDigest`
 * the digest of `editedArgs`, and, when
 * `riskLevel` is given (the last edit: what runs), the editor's grant covers it. Pure; never throws.
 */
export function judgeEditForRun(input: {
  edit: unknown;
  callId: string;
  runId: string;
  caller: string;
  riskLevel?: RiskLevel;
  approvers: Readonly<Record<string, ApproverGrant>> | undefined;
  operators?: Readonly<Record<string, string>> | undefined;
}): EditJudgement {
  const problem = editShapeProblem(input.edit);
  if (problem !== undefined) return refused('SIGNATURE_INVALID', `not a signed edit: ${problem}`);
  const edit = input.edit as SignedEdit;
  const { envelope } = edit;
  const grant = ownValue(input.approvers, envelope.approver);
  const round: RoundBinding = {
    callId: input.callId,
    runId: input.runId,
    nonce: envelope.nonce,
    argsDigest: envelope.argsDigest,
    previewDigest: envelope.previewDigest,
    contractDigest: envelope.contractDigest,
    riskLevel: input.riskLevel ?? grant?.maxLevel ?? 'critical',
    caller: input.caller,
  };
  const signed = judgeSignedForRound({ ...input, kind: 'edit', signed: edit, round });
  if (!signed.ok) return signed;
  if (digestOf(envelope.editedArgs) !== envelope.editedDigest) {
    return refused('DIGEST_MISMATCH', 'editedDigest is not the digest of editedArgs');
  }
  return signed.key ? { ok: true, envelope, key: signed.key } : { ok: true, envelope };
}

function refused<Code extends EditRefusalCode>(
  code: Code,
  reason: string,
): { ok: false; code: Code; reason: string } {
  return { ok: false, code, reason };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
