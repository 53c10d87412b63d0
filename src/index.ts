// `toolgate`: the agent and worker API: contracts, implementations, policy, config, connections,
// the worker, the client agents propose through, provider adapters, selection evals, keys, the
// credential minter and the CLI. Approvers' and operators' code imports `toolgate/admin`; the wire
// protocol is `toolgate/protocol`. Named one export at a time.

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
export {
  cancellationRefusalCodes,
  decisionRefusalCodes,
  editRefusalCodes,
  errorCodes,
  grantRefusalCodes,
  liftRefusalCodes,
  registryRefusalCodes,
  switchRefusalCodes,
} from './shared/codes';
export type {
  DecisionRefusalCode,
  EditRefusalCode,
  ErrorCode,
  GrantRefusalCode,
  LiftRefusalCode,
  RegistryRefusalCode,
} from './shared/codes';
export type { ArgumentsEdited, Effect, ToolResult } from './shared/tool-result';

// Contract snapshots: what each tool promises the model, committed and compared (`toolgate contract`).
export {
  contractSnapshotErrorCodes,
  parseContractSnapshot,
  serializeContractSnapshot,
  snapshotContracts,
} from './contracts/contract-snapshot';
export type {
  ContractSnapshot,
  ContractSnapshotErrorCode,
  ExampleObservation,
  FieldContract,
  FieldMap,
  ToolSnapshot,
} from './contracts/contract-snapshot';
export { contractChangeKinds, contractVerdicts, diffSnapshots } from './contracts/contract-diff';
export type {
  ContractChange,
  ContractChangeKind,
  ContractDiff,
  ContractVerdict,
} from './contracts/contract-diff';
export { renderContractDiff } from './contracts/contract-report';
// Recorded answers and output adapters under test (`toolgate contract record` and `contract test`).
export { parseContractFixture, serializeContractFixture } from './contracts/contract-fixtures';
export type { ContractFixture } from './contracts/contract-fixtures';
export { testContractFixture } from './contracts/adapter-verdicts';
export type { AdapterOutcome, FixtureProblem, FixtureTestResult } from './contracts/adapter-verdicts';
export { contractWarningKinds } from './contracts/contract-warnings';
export type { ContractWarning, ContractWarningKind, StaleFixture } from './contracts/contract-warnings';

// Tool implementations: the side of a tool that talks to its backend.
export { defineToolImplementation, recordingScenarios } from './tools/define-tool-implementation';
export type {
  BackendResponse,
  ExecutionContext,
  ImplementedTool,
  OutputAdapter,
  RecordedOutcome,
  RecordingScenario,
  ScenarioRecording,
  ToolCallContext,
  ToolImplementation,
  ToolImplementationDefinition,
  ToolRecordings,
} from './tools/define-tool-implementation';
export { toolRejection, transientToolError } from './tools/tool-errors';
export type { ToolRejection, TransientToolError } from './tools/tool-errors';

// Policy and config.
export { checkPolicy, ConfigurationError, loadPolicyFile } from './policy/load-policy';
export type { LoadedPolicy } from './policy/load-policy';
export type { CallerPolicy, ChainStep, PolicyFile, PolicyFileInput } from './policy/policy-schema';
export { defineConfig, loadConfig, resolveConfig } from './config';
export type { CodecConfig, LoadedConfig, TemporalConfig, ToolGateConfig } from './config';
export { resolveNotifications } from './notifications/notification-config';
export type { NotificationsConfig, ResolvedNotifications } from './notifications/notification-config';

// Connections: TLS, API keys and the payload codec for every client and worker, and the codec server.
export {
  clientConnectionOptions,
  connectTemporalClient,
  nativeConnectionOptions,
  resolveCodecKeys,
  resolvePayloadCodec,
  resolveTemporalConnection,
  temporalClientOn,
  temporalEnvironmentVariables,
  withoutTransportSecurity,
} from './connection/temporal-connection';
export type { ConnectionConfigSource, TemporalConnectionSettings } from './connection/temporal-connection';
export {
  codecKeysEnvironmentVariable,
  encryptedPayloadEncoding,
  encryptionKeyIdMetadata,
  formatCodecKeys,
  generateCodecKeyLine,
  parseCodecKeys,
  PayloadEncryptionCodec,
  PayloadEncryptionError,
} from './connection/payload-encryption';
export type { PayloadEncryptionKey } from './connection/payload-encryption';
export {
  codecTokenEnvironmentVariable,
  createCodecServerApp,
  defaultCodecServerPort,
  startCodecServer,
} from './connection/codec-server';
export type { CodecServer, CodecServerOptions, JsonPayload } from './connection/codec-server';
// Workers.
export { createToolGateWorker } from './worker';
export type { ToolGateWorkerOptions } from './worker';
export { startToolGateWorker } from './start-worker';

// Observability: the worker's Prometheus metrics, and OpenTelemetry traces from the client to the backend.
export { createToolGateMetrics } from './observability/metrics';
export type { ToolGateMetrics } from './observability/metrics';
export { installSdkMetrics, serveMetrics } from './observability/metrics-server';
export type { MetricsEndpoint, MetricsEndpointOptions } from './observability/metrics-server';
export { startTracing, tracingFromConfig } from './observability/tracing';
export type { ToolGateTracing, TracingConfig } from './observability/tracing';
export { traceHeaders } from './observability/spans';
export type { ToolGateWorkerHandle, WorkerTarget } from './start-worker';
export { prepareNamespace } from './dev/dev-server';
export type { PrepareNamespaceOptions } from './dev/dev-server';
export { defaultTaskQueue } from './shared/temporal';
// toolgate's workflows, bundled: for a worker of your own (`Worker.create({ workflowBundle })`) or a
// replay test of your histories against a new toolgate.
export { toolGateWorkflowBundle } from './workflow-bundle';
// The failure converter the bundle is built with (messages and stack traces in an encoded payload):
// a worker or client of your own passes it as `dataConverter.failureConverterPath`.
export { toolGateFailureConverterPath } from './connection/failure-converter-path';

// Agents: the client that proposes calls.
export { SessionOperationRefused, ToolGateClient } from './client';
export type { CallInput, SessionEndReason, ToolGateClientOptions } from './client';
// On whose behalf a call is made (`CallInput.context`), and what a session answers about itself.
export type { CallOutcome, OpenCircuit, SessionStats, SessionSummary } from './sessions/session';
export type { SessionAdmission, SessionLimits } from './sessions/rules';
export { checkContext, describeContext, maxContextClaims, maxContextIdLength } from './calls/call-context';
export type { CallContext, ContextCheck, ContextSource } from './calls/call-context';

// Agents: the caller's tools in each provider's format, and a turn's tool calls run through toolgate.
// (The Vercel AI SDK's tools are in `toolgate/ai-sdk`, the MCP server in `toolgate/mcp`.)
export {
  openAIChatTools,
  openAIResponsesTools,
  runOpenAIChatToolCalls,
  runOpenAIResponsesFunctionCalls,
} from './providers/openai';
export type {
  OpenAIChatTool,
  OpenAIChatToolCall,
  OpenAIChatToolMessage,
  OpenAIResponsesFunctionCallOutput,
  OpenAIResponsesTool,
} from './providers/openai';
export { anthropicTools, runAnthropicToolUses } from './providers/anthropic';
export type { AnthropicTool, AnthropicToolResultBlock } from './providers/anthropic';
export { absentOptionalNulls, inputJsonSchema, openAIStrictJsonSchema } from './providers/json-schema';
export type { JsonSchema } from './providers/json-schema';
export { runModelToolCalls } from './providers/provider-calls';
export type { ModelToolCall, ProviderSession, StrictMode } from './providers/provider-calls';

// Selection evals (`toolgate eval`): does the model still pick the right tool, with the right critical
// arguments, and no tool when none is wanted? First decisions only, over any OpenAI-compatible endpoint.
export { builtInPredicates } from './evals/argument-matchers';
export type {
  ArgumentMatcher,
  ArgumentMismatch,
  ArgumentPredicate,
  ArgumentPredicates,
} from './evals/argument-matchers';
export { defaultSelectionThresholds, loadSelectionCases, parseSelectionCases } from './evals/selection-cases';
export type {
  HistoryMessage,
  SelectionCase,
  SelectionCaseFile,
  SelectionSet,
  SelectionThresholds,
} from './evals/selection-cases';
export type { ChatEndpoint, ModelDecision } from './evals/first-decision';
export type {
  Ratio,
  SelectionCaseResult,
  SelectionMetrics,
  SelectionVerdict,
  ThresholdMiss,
} from './evals/selection-metrics';
export { runSelectionSuite } from './evals/selection-suite';
export type { SelectionReport, SelectionSuiteInput } from './evals/selection-suite';
export { callerContracts, selectionToolDefinitions } from './evals/selection-tools';
export { recordSelectionInSnapshot, selectionRecordOf } from './evals/selection-record';
export type { SelectionRecord } from './evals/selection-record';

// The audit store every worker writes to (SQLite by default, PostgreSQL when several share one), and
// the sessions' state it holds.
export { openSqliteAuditStore } from './audit/audit-store';
export type { AuditRecord, AuditStore, NotificationDelivery } from './audit/audit-store';
// PostgreSQL: what several workers on several machines share; `openAuditStore` picks from the config.
export { openPostgresAuditStore } from './audit/open-audit-store';
export { openAuditStore } from './audit/open-audit-store';
export type { AuditStoreConfig } from './audit/open-audit-store';
// What an audit store of your own receives for each decision attempt (`AuditStore.appendDecisionAttempt`).
export type { DecisionAttempt } from './shared/temporal';

export type { SessionStore } from './sessions/store';
export { openSqliteSessionStore } from './sessions/store';

// Keys and credentials.
export { generateKeyPairFiles, keyPaths, readPrivateKey, readPublicKeyHex } from './keys/key-files';
export type { KeyOwner } from './keys/key-files';
export { createCredentialMinter, MintRefusal } from './credentials/credential-minter';
export type { CredentialMinter, ExecutionApproval } from './credentials/credential-minter';

// The CLI, embedded: `toolgate <command>` with the arguments and the output you give it; it returns the
// exit code and never exits the process (the installed `toolgate` command runs the same function).
export { runCli } from './cli/run-cli';
export type { CliOutput, MainOptions as CliOptions } from './cli/main';
