// `toolgate/protocol`: the wire protocol, for a client in another language or workflow and worker code
// of your own that talks to toolgate's workflows: their types and ids, the messages each accepts, the
// proposal's caps and call id, and the exact bytes every signature covers. Named one export at a time.

// The wire protocol: what a client in another language, or your own workflow or worker code, uses to
// talk to toolgate's workflows. Their types and ids, the messages each accepts, the proposal's caps
// and call id, and the exact bytes every signature covers.
export { toolCallWorkflowType } from './calls/protocol';
export type { ToolCallInput } from './calls/protocol';
export {
  callStateQuery,
  cancelUpdate,
  decideUpdate,
  editUpdate,
  proposeUpdate,
  searchAttributes,
} from './calls/protocol';
export type {
  ApprovalState,
  ApprovalView,
  CallState,
  Canceller,
  Cancellation,
  CancellationReceipt,
  ChainStepView,
  ChainView,
  DecisionReceipt,
  DecisionRecord,
  EditReceipt,
  EditRecord,
  ProposeRequest,
  ProposeResponse,
  SignedCancellation,
} from './calls/protocol';
// Sessions are state in the audit store (issue 28): a call admits itself; the rest is one short operation.
export { sessionOperationIdPrefix, sessionOperationWorkflowType } from './sessions/protocol';
export type {
  SessionEndClaims,
  SessionOperation,
  SessionOperationAnswer,
  SessionResetClaims,
} from './sessions/protocol';
export {
  capProposal,
  deriveCallId,
  maxArgumentsBytes,
  maxArgumentsDepth,
  maxToolNameLength,
  maxUserMessageBytes,
  parseArguments,
} from './calls/proposal';
export type { ParsedArguments, Proposal } from './calls/proposal';
export {
  addInviteUpdate,
  approverKeysQuery,
  approverKeysWorkflowId,
  approverKeysWorkflowType,
  enrolKeyUpdate,
  keyIdOf,
  revokeKeyUpdate,
  verifyKeyChain,
} from './approver-keys/protocol';
export type {
  ApproverKeyStatus,
  ApproverKeysView,
  ApproverKeyView,
  Enrolment,
  Invite,
  InviteView,
  KeyChain,
  KeyChainVerdict,
  KeyRevocation,
  RegistryEvent,
  RegistryReceipt,
  SignedEnrolment,
  SignedInvite,
  SignedKeyRevocation,
  VerifiedKey,
} from './approver-keys/protocol';
export type { ApproverKeysInput } from './approver-keys/workflow';
export { approvalNonce } from './approvals/protocol';
export type { DecisionEnvelope, EditEnvelope, SignedDecision, SignedEdit } from './approvals/protocol';
export { signedText, verifySignature } from './shared/signatures';
// The digests a decision or an edit names: SHA-256 (hex) of the canonical JSON of a value.
export { canonicalJson, digestOf } from './shared/canonical-json';
export type { SignatureCheck, SignedKind } from './shared/signatures';
export { signValue } from './keys/key-files';
// The activities toolgate's workflows call, by type: for workflow code of your own that calls them.
export type { ToolCallActivities } from './calls/activities';
export type { ExecutionInput } from './calls/call-evaluation';

// The kill switches', limits' and standing grants' workflows: their ids and messages.
export { controlsQuery, controlsWorkflowId, setSwitchUpdate, toolSwitchSignal } from './controls/protocol';
export { quotaUsageQuery, quotaWorkflowId } from './quotas/protocol';
export {
  addGrantUpdate,
  grantsQuery,
  grantsWorkflowId,
  grantUseQuery,
  releaseGrantUpdate,
  revokeGrantUpdate,
  useGrantUpdate,
} from './grants/protocol';
export type {
  GrantEvent,
  GrantReceipt,
  GrantRefusal,
  GrantRevocation,
  GrantRevoker,
  GrantsView,
  GrantUse,
  GrantUseRequest,
  GrantView,
  SignedGrant,
  SignedGrantRevocation,
  StandingGrant,
} from './grants/protocol';
export type { ApplicableQuota, QuotaUsage } from './quotas/protocol';
export type {
  ControlEvent,
  ControlsView,
  DisabledSwitch,
  SignedSwitchChange,
  SwitchChange,
  SwitchReceipt,
} from './controls/protocol';
