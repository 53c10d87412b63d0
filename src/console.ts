// `toolgate/console`: the approvals web console. A front end of its own, as the MCP server is: it
// brings an HTTP server, pages and browser modules that an agent or a worker never needs.
export { startApprovalsConsole } from './console/approvals-console';
export type { ApprovalsConsole, ApprovalsConsoleOptions } from './console/approvals-console';
export { consoleRefusalCodes } from './shared/codes';
export type { ConsoleRefusalCode } from './shared/codes';
