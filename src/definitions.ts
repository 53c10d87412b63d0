// The sandbox-safe half of the public API: what a tool's contract module and a workflows module
// import. Nothing here touches Node built-ins, so the workflow bundle can include it.
export { defineToolContract, ToolDefinitionError } from './tools/define-tool';
export type {
  AnyToolContract,
  EffectKind,
  ExecutionRetry,
  RiskInput,
  ToolContract,
  ToolContractDefinition,
  ToolInputSchema,
} from './tools/define-tool';
export { riskLevels, riskRank } from './tools/risk-levels';
export type { RiskLevel } from './tools/risk-levels';
export { createToolRegistry } from './tools/tool-registry';
export type { ToolDefinition, ToolRegistry } from './tools/tool-registry';
export { createToolCallWorkflow, defaultExecutionRetry } from './workflows/tool-call';
export { createSessionWorkflow } from './workflows/session';
export type { SessionWorkflowOptions } from './workflows/session';
export { createToolGateWorkflows } from './workflows/toolgate-workflows';
export type { ToolCallInput, ToolCallWorkflowOptions } from './workflows/tool-call';
export { errorCodes, decisionRefusalCodes } from './shared/codes';
export type { ErrorCode, DecisionRefusalCode } from './shared/codes';
export type { Effect, ToolResult } from './shared/tool-result';
