// The governed MCP server: the caller's tools, listed with toolgate's own JSON Schemas, and every
// tools/call proposed through the ToolGateClient, so an MCP client gets exactly what an agent harness
// gets. Built on the SDK's low-level `Server` (not `McpServer`), which would derive the schemas again
// from zod and validate the arguments itself: here toolgate validates, and audits what fails.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// The low-level server on purpose (see above); the SDK marks it deprecated in favour of McpServer.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { ToolGateClient } from '../client';
import { ConfigurationError } from '../policy/load-policy';
import type { JsonSchema } from '../providers/json-schema';
import { inputJsonSchema } from '../providers/json-schema';
import type { CallContext } from '../calls/call-context';
import { isErrorResult } from '../providers/provider-calls';
import type { ToolResult } from '../shared/tool-result';
import type { AnyToolContract } from '../tools/define-tool';
import { callStatus, callStatusContract, callStatusToolName } from './call-status';
import { toolResultJsonSchema } from './tool-result-schema';

/** What one MCP connection serves: a client and one caller. */
export interface ToolGateMcpServerOptions {
  client: ToolGateClient;
  /** The caller every call of this connection is made for: fixed by the transport, never by the model. */
  caller: string;
  /** On whose behalf every call of this connection acts (its token's end user): fixed by the transport too. */
  context?: CallContext;
  /**
   * The toolgate session of every call. Default: the transport's session id (Streamable HTTP's
   * `mcp-session-id`), else one random id for this server's life (stdio).
   */
  session?: string;
  /** Where the server reports what went wrong outside the model's reach (Temporal unreachable). */
  log?: (line: string) => void;
}

/** The server's one-paragraph guide for the model, sent at initialisation. */
const instructions =
  'Every tool call goes through toolgate, which validates it, applies your policy and, for risky calls, waits for ' +
  'a human. A result with code APPROVAL_PENDING means nothing happened yet and nothing is wrong: tell the user it ' +
  'awaits approval and use toolgate_call_status with its callId to learn the outcome later. Any other code ' +
  'than OK comes with a message that says what to fix. Within this session, proposing the same call again ' +
  'never applies it twice; in a new session it is a new call.';

/**
 * An MCP server for one caller: `tools/list` shows the caller's allowed tools (and
 * `toolgate_call_status`), `tools/call` proposes through toolgate. Anything the model sends, an
 * unknown tool included, is answered with a `ToolResult`, never with a protocol error. Connect it to
 * one transport; a server serves one connection.
 */
export function createToolGateMcpServer(options: ToolGateMcpServerOptions): Server {
  const { client, caller, context } = options;
  // What would fail at tools/list fails now: no policy, the status tool's name taken, a schema.
  checkMcpServable({ client, callers: [caller] });
  let ownSession: string | undefined;
  const sessionOf = (transportSession: string | undefined): string =>
    options.session ?? transportSession ?? (ownSession ??= `mcp-${randomUUID()}`);
  const server = new Server(
    { name: 'toolgate', version: packageVersion() },
    { capabilities: { tools: {} }, instructions },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...client.toolsFor(caller).map(mcpTool), mcpTool(callStatusContract)],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params;
    // A tool that takes no arguments may be called without any: the same as `{}`.
    const args = request.params.arguments ?? {};
    try {
      const result =
        name === callStatusToolName
          ? await callStatus({
              client,
              caller,
              arguments: args,
              ...(context?.onBehalfOf !== undefined ? { onBehalfOf: context.onBehalfOf } : {}),
            })
          : await client.call({
              session: sessionOf(extra.sessionId),
              caller,
              tool: name,
              arguments: args,
              ...(context !== undefined ? { context } : {}),
            });
      return callToolResult(result);
    } catch (error) {
      // Not the model's doing (Temporal unreachable, no worker): a protocol error, with what to do.
      options.log?.(`tools/call ${JSON.stringify(name).slice(0, 80)} failed: ${String(error)}`);
      throw new McpError(
        ErrorCode.InternalError,
        name === callStatusToolName
          ? 'toolgate could not read the call now; ask for its status again later.'
          : 'toolgate could not take the call now; it may not have been proposed. Try again later in this ' +
              'session: within this session, proposing the same call again never applies it twice.',
      );
    }
  });
  return server;
}

/**
 * Fails with a `ConfigurationError` that names the fix for what would otherwise fail only when an MCP
 * client lists the tools: a client without a policy, a tool named like the status tool, a tool of
 * one of `callers` whose input schema cannot be turned into JSON Schema. Changes nothing.
 */
export function checkMcpServable(input: { client: ToolGateClient; callers: readonly string[] }): void {
  const { client } = input;
  if (client.tool(callStatusToolName)) {
    throw new ConfigurationError(
      `a tool is named "${callStatusToolName}", the name of the MCP server's own status tool; rename your tool`,
    );
  }
  // Without a policy the client cannot say which tools a caller may see (it throws, saying so).
  client.toolsFor(input.callers[0] ?? '');
  for (const caller of input.callers) {
    for (const contract of client.toolsFor(caller)) {
      try {
        inputJsonSchema(contract);
      } catch (error) {
        throw new ConfigurationError(
          `tool "${contract.name}" (allowed to caller "${caller}"): its input schema cannot be turned into JSON ` +
            `Schema for MCP clients (${(error as Error).message}); change the field zod cannot describe ` +
            `(e.g. a date, a bigint or a custom type) into one it can, or take the tool out of the caller's tools in the policy`,
        );
      }
    }
  }
}

/** How an MCP client sees one tool: toolgate's schemas as they are, and what toolgate knows of its effect. */
function mcpTool(contract: AnyToolContract): Tool {
  return {
    name: contract.name,
    description: contract.description,
    inputSchema: inputJsonSchema(contract) as Tool['inputSchema'],
    outputSchema: structuredClone(toolResultJsonSchema) as JsonSchema as Tool['outputSchema'],
    annotations: annotationsOf(contract),
  };
}

/** The MCP hints for a tool, from its effect kind: what toolgate can stand behind, nothing more. */
function annotationsOf(contract: AnyToolContract): ToolAnnotations {
  const write = contract.effect === 'write';
  return {
    readOnlyHint: !write,
    // A write's risk function may classify it irreversible, and toolgate cannot prove a write is not.
    destructiveHint: write,
    // A read changes nothing however often it runs. A write is the same call id only within one MCP
    // session (the session is part of the key): proposed again in a new session it is a new call, so
    // no client may assume a repeat is harmless.
    idempotentHint: !write,
    // Each tool acts on the one backend its contract names, through a credential scoped to the call,
    // never on whatever the model points it at.
    openWorldHint: false,
  };
}

/** A ToolResult as MCP carries it: the JSON text for the model, the object for code, and the error flag. */
function callToolResult(result: ToolResult): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(result) }],
    structuredContent: { ...result },
    // APPROVAL_PENDING is not an error the model should fix: it waits for a human.
    isError: isErrorResult(result),
  };
}

let version: string | undefined;

/** toolgate's version, from its package.json (two folders up from src/mcp/ and from dist/mcp/ alike). */
function packageVersion(): string {
  if (version === undefined) {
    try {
      const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
        version?: unknown;
      };
      version = typeof manifest.version === 'string' ? manifest.version : '0.0.0';
    } catch {
      version = '0.0.0';
    }
  }
  return version;
}
