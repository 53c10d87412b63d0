// `toolgate/admin`: what approvers and operators run from code: decisions and cancellations, kill
// switches, standing grants, approvers' enrolled keys, reports and mining. Named one
// export at a time.

// Approvers: decisions from code.
export { ApprovalAdmin } from './approvals/client';
export { cancelCall } from './calls/client';
export { listToolSwitches, setToolSwitch } from './controls/client';
export type { SwitchRefusal } from './controls/client';
export {
  addGrant,
  cosignGrant,
  listGrants,
  revokeGrant,
  signGrant,
  submitGrantRevocation,
} from './grants/client';
export { readGrants, readGrantUse } from './grants/activities';
export { grantQuorum, judgeGrant } from './grants/rules';
export type { CancelOutcome } from './calls/client';
export type {
  DecisionOutcome,
  DecisionRefusal,
  EditOutcome,
  LiftOutcome,
  PendingApproval,
} from './approvals/client';
export type { DenialLift, DenialLifter, SignedDenialLift } from './approvals/denial-memory';

// Approvers' enrolled keys: operator-signed invites, enrolment, revocation, the registry's contents.
export {
  defaultConsoleUrl,
  enrolApproverKey,
  inviteApprover,
  keyChainOf,
  listApproverKeys,
  parseInviteLink,
  readApproverKeyStatus,
  revokeApproverKey,
  sendEnrolment,
  signEnrolment,
} from './approver-keys/client';
export type {
  ApproverKeysTarget,
  CreatedInvite,
  RegistryOutcome,
  RegistryRefusal,
} from './approver-keys/client';

// Mining: candidate cases for the selection suite from recorded traffic (`toolgate mine`); never labels.
export { mineCases } from './mining/mine-cases';
export type { MiningReport } from './mining/mine-cases';
export { candidateKinds } from './mining/mined-candidates';
export type { CandidateKind, MinedCandidate, SessionEnd } from './mining/mined-candidates';
export { caseFileSkeleton } from './mining/case-skeleton';
export type { CaseFileSkeleton, SkeletonCase } from './mining/case-skeleton';

// Reports: what the audit store says happened, per tool and code.
export { buildAuditReport } from './reporting/audit-report';
export type { AuditReport } from './reporting/audit-report';
