// toolgate's public API: what this file names, one export at a time.
export {
  createSessionWorkflow,
  createToolCallWorkflow,
  createToolGateWorkflows,
  createToolRegistry,
  decisionRefusalCodes,
  defaultExecutionRetry,
  defineToolContract,
  errorCodes,
  riskLevels,
  riskRank,
  ToolDefinitionError,
} from './definitions';
export type {
  AnyToolContract,
  DecisionRefusalCode,
  Effect,
  EffectKind,
  ErrorCode,
  ExecutionRetry,
  RiskInput,
  RiskLevel,
  SessionWorkflowOptions,
  ToolCallInput,
  ToolCallWorkflowOptions,
  ToolContract,
  ToolContractDefinition,
  ToolDefinition,
  ToolInputSchema,
  ToolRegistry,
  ToolResult,
} from './definitions';
export { defineToolImplementation } from './tools/define-tool-implementation';
export type {
  ImplementedTool,
  RecordedOutcome,
  ToolCallContext,
  ToolImplementation,
} from './tools/define-tool-implementation';
export { toolRejection, transientToolError } from './tools/tool-errors';
export type { ToolRejection, TransientToolError } from './tools/tool-errors';
export { checkPolicy, ConfigurationError, loadPolicyFile } from './policy/load-policy';
export type { LoadedPolicy } from './policy/load-policy';
export type { CallerPolicy, PolicyFile } from './policy/policy-schema';
export { openSqliteAuditStore } from './audit/audit-store';
export type { AuditRecord, AuditStore } from './audit/audit-store';
export { createToolGateWorker } from './worker';
export { prebuildWorkflowBundle } from './workflow-bundle';
export type { ToolGateWorkerOptions } from './worker';
export { ToolGateClient } from './client';
export type { CallInput, ToolGateClientOptions } from './client';
export { defaultTaskQueue, toolCallWorkflowType } from './shared/temporal';
