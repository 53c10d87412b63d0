// `toolgate`: what runs in Node (contracts, implementations, policy, config, worker, client, audit,
// keys, the credential minter, approvals from code). Named one export at a time.

// Tool contracts: what the model sees and what the worker validates and classifies.
export { defaultExecutionRetry, defineToolContract, ToolDefinitionError } from './tools/define-tool';
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
export { decisionRefusalCodes, errorCodes } from './shared/codes';
export type { DecisionRefusalCode, ErrorCode } from './shared/codes';
export type { Effect, ToolResult } from './shared/tool-result';

// Tool implementations: the side of a tool that talks to its backend.
export { defineToolImplementation } from './tools/define-tool-implementation';
export type {
  ImplementedTool,
  RecordedOutcome,
  ToolCallContext,
  ToolImplementation,
} from './tools/define-tool-implementation';
export { toolRejection, transientToolError } from './tools/tool-errors';
export type { ToolRejection, TransientToolError } from './tools/tool-errors';

// Policy and config.
export { checkPolicy, ConfigurationError, loadPolicyFile } from './policy/load-policy';
export type { LoadedPolicy } from './policy/load-policy';
export type { CallerPolicy, PolicyFile, PolicyFileInput } from './policy/policy-schema';
export { defineConfig, loadConfig, resolveConfig } from './config';
export type { LoadedConfig, ToolGateConfig } from './config';

// Workers.
export { createToolGateWorker } from './worker';
export type { ToolGateWorkerOptions } from './worker';
export { startToolGateWorker } from './start-worker';
export type { ToolGateWorkerHandle, WorkerTarget } from './start-worker';
export { prepareNamespace } from './dev/dev-server';
export type { PrepareNamespaceOptions } from './dev/dev-server';
export { defaultTaskQueue, toolCallWorkflowType } from './shared/temporal';
export { sessionWorkflowType } from './shared/session';

// Agents: the client that proposes calls.
export { ToolGateClient } from './client';
export type { CallInput, ToolGateClientOptions } from './client';

// Approvers: decisions from code.
export { ApprovalAdmin } from './admin/approvals';
export type { DecisionOutcome, DecisionRefusal, PendingApproval } from './admin/approvals';

// Audit.
export { openSqliteAuditStore } from './audit/audit-store';
export type { AuditRecord, AuditStore } from './audit/audit-store';

// Keys and credentials.
export { generateKeyPairFiles, keyPaths, readPrivateKey, readPublicKeyHex } from './keys/key-files';
export type { KeyOwner } from './keys/key-files';
export { createCredentialMinter, MintRefusal } from './keys/credential-minter';
export type { CredentialMinter, ExecutionApproval } from './keys/credential-minter';
