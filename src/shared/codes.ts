/**
 * The one list of stable result codes. Tests, messages and dashboards use these strings;
 * a code, once shipped, never changes meaning.
 */
export const errorCodes = [
  // step 0: session admission
  'UNAUTHENTICATED_CALLER',
  'STEP_LIMIT',
  'LOOP_DETECTED',
  'CIRCUIT_OPEN',
  'SESSION_CLOSED',
  // a proposal acting for another end user (or another context) than its session was opened with
  'CONTEXT_MISMATCH',
  // step 1: the session's admission, resolution and allowlist
  'SESSION_REQUIRED',
  'UNKNOWN_TOOL',
  // the kill switch: an operator turned the tool off (for everyone or this caller)
  'TOOL_DISABLED',
  'TOOL_NOT_ALLOWED',
  // the harness's context is malformed (a harness bug, or a raw client): nothing ran
  'CONTEXT_INVALID',
  // step 2 and 3: parsing and schema
  'INVALID_JSON',
  // the model sent a field the host fills from the context (a bound parameter)
  'BOUND_PARAMETER_SENT',
  // a bound parameter the tool requires has no value in the call's context
  'CONTEXT_REQUIRED',
  'INVALID_ARGUMENTS',
  // step 4: idempotency
  'IDEMPOTENCY_CONFLICT',
  // step 5: policy
  'POLICY_LIMIT',
  'PERMISSION_DENIED',
  // a write its policy refuses once untrusted text (a note, an email) entered the session
  'UNTRUSTED_TEXT_READ',
  // step 7: approval
  'APPROVAL_PENDING',
  'APPROVAL_DENIED',
  'APPROVAL_EXPIRED',
  // cancelled by its caller's harness or an operator while it waited for approval
  'APPROVAL_CANCELLED',
  // step 8 and 9: execution and verification
  'UPSTREAM_UNAVAILABLE',
  'INTERNAL_ERROR',
  'VERIFICATION_FAILED',
  'OUTPUT_CONTRACT_VIOLATION',
  // lookups
  'CALL_NOT_FOUND',
  // the proposal never reached its workflow: the server refused it for load (too many at once)
  'OVERLOADED',
] as const;

/** A code toolgate itself produces; tools add their own domain codes. */
export type ErrorCode = (typeof errorCodes)[number];

/**
 * What an approver is told when a decision is refused. Kept apart from the call codes because a
 * refused decision changes nothing about the call.
 */
export const decisionRefusalCodes = [
  'APPROVER_UNKNOWN',
  'APPROVER_NOT_ALLOWED',
  'SELF_APPROVAL',
  'DIGEST_MISMATCH',
  'SIGNATURE_INVALID',
  'DECISION_REPLAYED',
  'ALREADY_DECIDED',
  'APPROVAL_EXPIRED',
  // the tool's contract is not the one the decision names (a deploy while the call waited)
  'CONTRACT_CHANGED',
  // decisions signed with an enrolled key (the key's chain verified, then the registry asked)
  'KEY_UNKNOWN',
  'KEY_REVOKED',
] as const;

/**
 * What an approver is told when an edit of a call's arguments is refused: any decision code (the
 * edit is signed and bound to its round like a decision), or why the edited arguments cannot run.
 * A refused edit changes nothing: the round stays open as it was.
 */
export const editRefusalCodes = [
  ...decisionRefusalCodes,
  // the edited arguments are the round's own: nothing to edit
  'EDIT_UNCHANGED',
  // a field the host fills from the context (on whose behalf) is never editable
  'BOUND_PARAMETER_EDITED',
  // the edit acts on another resource (another order): deny, and let the model propose that call
  'RESOURCE_EDITED',
  // the edited arguments break the tool's schema (strict: no coercion, no extra fields)
  'INVALID_ARGUMENTS',
  // the caller's policy refuses the edited call (its code is in the message)
  'EDIT_REFUSED',
] as const;

/** A reason an edit was refused. */
export type EditRefusalCode = (typeof editRefusalCodes)[number];

/**
 * What an approver or operator is told when lifting a remembered denial is refused: no denial of
 * that call is on record, or the lifter may not lift it (not in the policy, a grant below the call's
 * level, operating its caller). Nothing is recorded.
 */
export const liftRefusalCodes = ['DENIAL_NOT_FOUND', 'LIFT_NOT_ALLOWED'] as const;

/** A reason a lift was refused. */
export type LiftRefusalCode = (typeof liftRefusalCodes)[number];

/**
 * What a canceller is told when a cancellation is refused: it is malformed, its signature does not hold, execution
 * started (or the call ended), or the call is not waiting for approval. A refused cancellation changes
 * nothing.
 */
export const cancellationRefusalCodes = [
  // malformed: no reason, a reason over 500 characters, another call's or run's
  'CANCELLATION_INVALID',
  'SIGNATURE_INVALID',
  'CANCEL_TOO_LATE',
  'NOT_AWAITING_APPROVAL',
] as const;

/** A reason a cancellation was refused. */
export type CancellationRefusalCode = (typeof cancellationRefusalCodes)[number];

/**
 * What an operator is told when a kill-switch change is refused (`toolgate disable|enable`); nothing
 * changed: malformed or signed more than 10 minutes away, sent again, an operator not in the policy,
 * a bad signature, a tool the workers do not run, a caller not in the policy.
 */
export const switchRefusalCodes = [
  'SWITCH_INVALID',
  'CHANGE_REPLAYED',
  'OPERATOR_UNKNOWN',
  'SIGNATURE_INVALID',
  'UNKNOWN_TOOL',
  'CALLER_UNKNOWN',
] as const;

/**
 * What approvers or operators are told when a standing grant or its revocation is refused; nothing
 * changed: malformed, expired or longer than the policy's `maxApprovalWindow`, sent again, a caller or
 * tool the workers do not know, amount caps on a tool that declares no amount, an approver unknown,
 * not signing, holding a lower level than the grant covers or operating the caller, fewer distinct
 * approvers than the grant's levels ask (two for `critical`); a revocation for a grant not held or no
 * longer active, by someone who neither signed the grant nor is an operator, or signed with an
 * enrolled key the registry does not hold (or holds revoked).
 */
export const grantRefusalCodes = [
  'GRANT_INVALID',
  'GRANT_REPLAYED',
  'CALLER_UNKNOWN',
  'UNKNOWN_TOOL',
  'APPROVER_UNKNOWN',
  'SIGNATURE_INVALID',
  'APPROVER_NOT_ALLOWED',
  'SELF_APPROVAL',
  'QUORUM_NOT_MET',
  'GRANT_UNKNOWN',
  'GRANT_NOT_ACTIVE',
  'OPERATOR_UNKNOWN',
  'REVOCATION_NOT_ALLOWED',
  // a revocation signed with an enrolled key the registry does not hold, or holds revoked
  'KEY_UNKNOWN',
  'KEY_REVOKED',
] as const;

/** A reason a grant or revocation was refused. */
export type GrantRefusalCode = (typeof grantRefusalCodes)[number];

/** A reason a decision was refused. */
export type DecisionRefusalCode = (typeof decisionRefusalCodes)[number];

/**
 * What an operator or an enrolling approver is told when the approver-key registry refuses a
 * change: an invite, an enrolment or a revocation. Nothing changed in the registry.
 */
export const registryRefusalCodes = [
  'OPERATOR_UNKNOWN',
  'APPROVER_UNKNOWN',
  'SIGNATURE_INVALID',
  'INVITE_INVALID',
  'INVITE_EXISTS',
  'INVITE_UNKNOWN',
  'INVITE_EXPIRED',
  'INVITE_USED',
  'KEY_EXISTS',
  'KEY_UNKNOWN',
  'KEY_REVOKED',
] as const;

/** A reason the approver-key registry refused a change. */
export type RegistryRefusalCode = (typeof registryRefusalCodes)[number];

/**
 * What the approvals console answers when it refuses a request before relaying anything: sign-in,
 * session and request checks. A decision it relays is refused by the workflow with a decision code.
 */
export const consoleRefusalCodes = [
  'NOT_SIGNED_IN',
  'LOGIN_INVALID',
  'ORIGIN_NOT_ALLOWED',
  'CSRF_TOKEN_INVALID',
  'SESSION_APPROVER_MISMATCH',
  'KEY_UNKNOWN',
  'KEY_REVOKED',
  'BAD_REQUEST',
  // too many unauthenticated requests from one address (HTTP 429, with Retry-After)
  'RATE_LIMITED',
  // a session page asked for a session the audit store holds nothing of (HTTP 404)
  'SESSION_NOT_FOUND',
] as const;

/** A reason the approvals console refused a request. */
export type ConsoleRefusalCode = (typeof consoleRefusalCodes)[number];

/** The pattern every code, built in or declared by a tool, must match. */
export const codePattern = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;

const builtInCodes: ReadonlySet<string> = new Set<string>([
  ...errorCodes,
  ...decisionRefusalCodes,
  ...registryRefusalCodes,
  'OK',
]);

/** True when `code` is one of toolgate's own codes (a tool may not redeclare one as its domain code). */
export function isBuiltInCode(code: string): boolean {
  return builtInCodes.has(code);
}
