// `toolgate/testing`: a local Temporal server for tests and development, and the worker's checks of
// contracts and policy without one. Named one export at a time.
export { prepareNamespace, startDevServer } from './dev/dev-server';
export type { DevServer, PrepareNamespaceOptions, StartDevServerOptions } from './dev/dev-server';
export { prebuildWorkflowBundle } from './workflow-bundle';

// Your contracts and policy checked as the worker checks a call, without Temporal: for unit tests of
// your own tools (what the model is told about bad arguments) and policy (what needs approval).
export { validateArguments } from './tools/validate-arguments';
export type { ArgumentIssue, ArgumentValidation } from './tools/validate-arguments';
export { evaluatePolicy } from './policy/evaluate-policy';
export type { PolicyVerdict } from './policy/evaluate-policy';

// A running toolgate for your own tests: a dev server, a worker for your tools, a client.
export { startTestHarness } from './test-harness';
export type { TestHarness } from './test-harness';
