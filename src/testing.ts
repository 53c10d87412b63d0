// `toolgate/testing`: a local Temporal server for tests and development. Named one export at a time.
export { prepareNamespace, startDevServer } from './dev/dev-server';
export type { DevServer, PrepareNamespaceOptions, StartDevServerOptions } from './dev/dev-server';
export { prebuildWorkflowBundle } from './workflow-bundle';
