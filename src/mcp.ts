// `toolgate/mcp`: the governed MCP server, over stdio or Streamable HTTP, and the bearer tokens that
// name the caller of an HTTP client. Named one export at a time.

/** Builds the MCP server of one connection: the caller's tools, each call proposed through toolgate. */
export { createToolGateMcpServer } from './mcp/mcp-server';
export type { ToolGateMcpServerOptions } from './mcp/mcp-server';

/**
 * Starts the MCP server over Streamable HTTP: bearer tokens name callers, a session answers to the token
 * that opened it, foreign origins are refused, sessions are capped per token and in all.
 */
export { startMcpHttpServer } from './mcp/mcp-http-server';
export type { McpHttpServer, McpHttpServerOptions } from './mcp/mcp-http-server';

/** Creates a token for a caller; the tokens file keeps only its SHA-256 (changed under a lock file). */
export { createMcpToken } from './mcp/mcp-tokens';
/** Lists the tokens in a tokens file (hashes, callers, labels; never a token). */
export { listMcpTokens } from './mcp/mcp-tokens';
/** Revokes the one token whose hash starts with a prefix (under a lock file); its sessions close. */
export { revokeMcpToken } from './mcp/mcp-tokens';
/** A verifier over a tokens file that follows its changes: what `startMcpHttpServer` takes as `tokens`. */
export { mcpTokenVerifier } from './mcp/mcp-tokens';
/** The SHA-256 of a token, as the tokens file keeps it. */
export { mcpTokenHash } from './mcp/mcp-tokens';
export type {
  McpTokenPrincipal,
  McpTokenRecord,
  McpTokenRevocation,
  McpTokenVerifier,
} from './mcp/mcp-tokens';

/** The JSON Schema every `ToolResult` validates against: each listed tool's `outputSchema`. */
export { toolResultJsonSchema } from './mcp/tool-result-schema';

/** The name of the status tool the server adds to the caller's tools. */
export { callStatusToolName } from './mcp/call-status';
