import { describe, expect, it } from 'vitest';

// What each package entry exports at run time, by name: an export added or removed by accident fails
// here, and a deliberate change is written down in this file (keep test/package-entries.test.ts's list
// of toolgate/backend the same). Types leave no run-time trace; packed-package.test.ts type-checks a
// project against the installed declarations. Inside this repository the entries resolve to src/.
describe('the names each package entry exports', () => {
  it('toolgate: contracts, implementations, policy, config, workers, client, provider formats, approvals, audit, keys, the CLI and the wire protocol', async () => {
    expect(Object.keys(await import('toolgate')).sort()).toEqual([
      'ApprovalAdmin',
      'ConfigurationError',
      'MintRefusal',
      'ToolDefinitionError',
      'ToolGateClient',
      'absentOptionalNulls',
      'addInviteUpdate',
      'admitUpdate',
      'anthropicTools',
      'approvalNonce',
      'approverKeysQuery',
      'approverKeysWorkflowId',
      'approverKeysWorkflowType',
      'builtInPredicates',
      'callOutcomeSignal',
      'callStateQuery',
      'callerContracts',
      'candidateKinds',
      'capProposal',
      'caseFileSkeleton',
      'checkPolicy',
      'contractChangeKinds',
      'contractSnapshotErrorCodes',
      'contractVerdicts',
      'contractWarningKinds',
      'createCredentialMinter',
      'createToolGateWorker',
      'createToolRegistry',
      'decideUpdate',
      'decisionRefusalCodes',
      'defaultConsoleUrl',
      'defaultExecutionRetry',
      'defaultSelectionThresholds',
      'defaultTaskQueue',
      'defineConfig',
      'defineToolContract',
      'defineToolImplementation',
      'deriveCallId',
      'diffSnapshots',
      'endSessionUpdate',
      'enrolApproverKey',
      'enrolKeyUpdate',
      'errorCodes',
      'generateKeyPairFiles',
      'inputJsonSchema',
      'inviteApprover',
      'keyChainOf',
      'keyIdOf',
      'keyPaths',
      'listApproverKeys',
      'loadConfig',
      'loadPolicyFile',
      'loadSelectionCases',
      'maxArgumentsBytes',
      'maxArgumentsDepth',
      'maxToolNameLength',
      'maxUserMessageBytes',
      'mineCases',
      'openAIChatTools',
      'openAIResponsesTools',
      'openAIStrictJsonSchema',
      'openSqliteAuditStore',
      'parseArguments',
      'parseContractFixture',
      'parseContractSnapshot',
      'parseInviteLink',
      'parseSelectionCases',
      'prepareNamespace',
      'proposeUpdate',
      'readApproverKeyStatus',
      'readPrivateKey',
      'readPublicKeyHex',
      'recordSelectionInSnapshot',
      'recordingScenarios',
      'registryRefusalCodes',
      'renderContractDiff',
      'resetSessionUpdate',
      'resolveConfig',
      'resolveNotifications',
      'revokeApproverKey',
      'revokeKeyUpdate',
      'riskLevels',
      'riskRank',
      'runAnthropicToolUses',
      'runCli',
      'runModelToolCalls',
      'runOpenAIChatToolCalls',
      'runOpenAIResponsesFunctionCalls',
      'runSelectionSuite',
      'searchAttributes',
      'selectionRecordOf',
      'selectionToolDefinitions',
      'sendEnrolment',
      'serializeContractFixture',
      'serializeContractSnapshot',
      'sessionStatsQuery',
      'sessionWorkflowId',
      'sessionWorkflowType',
      'signEnrolment',
      'signValue',
      'signedText',
      'snapshotContracts',
      'startToolGateWorker',
      'testContractFixture',
      'toolCallWorkflowType',
      'toolGateWorkflowBundle',
      'toolRejection',
      'transientToolError',
      'verifyKeyChain',
      'verifySignature',
    ]);
  });

  it('toolgate/backend: what a backend needs to verify the credential of a call, without Temporal', async () => {
    expect(Object.keys(await import('toolgate/backend')).sort()).toEqual([
      'canonicalJson',
      'credentialClockSkewSeconds',
      'digestOf',
      'maxCredentialSeconds',
      'publicKeyHex',
      'readPublicKeyHex',
      'signCredential',
      'verifyCredential',
      'verifyWebhookSignature',
    ]);
  });

  it("toolgate/ai-sdk: the caller's tools as Vercel AI SDK tools that run through toolgate", async () => {
    expect(Object.keys(await import('toolgate/ai-sdk')).sort()).toEqual(['aiSdkTools']);
  });

  it('toolgate/mcp: the governed MCP server over stdio or Streamable HTTP, its bearer tokens, the ToolResult schema', async () => {
    expect(Object.keys(await import('toolgate/mcp')).sort()).toEqual([
      'callStatusToolName',
      'createMcpToken',
      'createToolGateMcpServer',
      'listMcpTokens',
      'mcpTokenHash',
      'mcpTokenVerifier',
      'revokeMcpToken',
      'startMcpHttpServer',
      'toolResultJsonSchema',
    ]);
  });

  it('toolgate/console: the approvals web console and the codes it refuses requests with', async () => {
    expect(Object.keys(await import('toolgate/console')).sort()).toEqual([
      'consoleRefusalCodes',
      'startApprovalsConsole',
    ]);
  });

  it('toolgate/testing: a harness for your own tests, a local Temporal server, and the checks of contracts and policy without one', async () => {
    expect(Object.keys(await import('toolgate/testing')).sort()).toEqual([
      'evaluatePolicy',
      'prebuildWorkflowBundle',
      'prepareNamespace',
      'startDevServer',
      'startTestHarness',
      'validateArguments',
    ]);
  });
});
