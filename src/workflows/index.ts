// The workflows every toolgate worker runs: no user code, so the package ships them prebuilt.
export { toolCall } from './tool-call';
export { toolSessionOperation } from './session-operation';
export { toolgateApproverKeys } from './approver-keys';
export { toolgateApprovalNotifications } from './approval-notifier';
export { toolgateControls } from './controls';
export { toolgateQuota } from './quota';
export { toolgateGrants } from './grants';
