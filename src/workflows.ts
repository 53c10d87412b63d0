// The workflows every toolgate worker runs: no user code, so the package ships them prebuilt.
export { toolCall } from './calls/workflow';
export { toolSessionOperation } from './sessions/workflow';
export { toolgateApproverKeys } from './approver-keys/workflow';
export { toolgateApprovalNotifications } from './notifications/workflow';
export { toolgateControls } from './controls/workflow';
export { toolgateQuota } from './quotas/workflow';
export { toolgateGrants } from './grants/workflow';
