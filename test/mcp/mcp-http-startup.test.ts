// `startMcpHttpServer` refuses to start, with a ConfigurationError that names the fix, for what would
// otherwise fail only at a client's first request; and it warns when it listens beyond loopback.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { LoadedPolicy } from 'toolgate';
import { defineToolContract, ToolGateClient } from 'toolgate';
import type { McpHttpServerOptions } from 'toolgate/mcp';
import { mcpTokenVerifier, startMcpHttpServer } from 'toolgate/mcp';

const directory = mkdtempSync(join(tmpdir(), 'toolgate-mcp-startup-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const readTool = (name: string, input: z.ZodObject = z.strictObject({})) =>
  defineToolContract({
    name,
    description: 'Reads something for the start-up tests.',
    input: input as z.ZodObject<Record<string, never>>,
    output: z.object({}),
    effect: 'read',
  });

/** A ToolGateClient that never reaches Temporal (nothing here calls), with `policy` naming each caller's tools. */
function clientOf(input: { tools: ReturnType<typeof readTool>[]; policy?: Record<string, string[]> }) {
  const { policy } = input;
  return new ToolGateClient({
    client: {} as Client,
    tools: input.tools,
    callerKey: () => undefined,
    ...(policy
      ? {
          policy: {
            callerPolicy: (caller: string) => (policy[caller] ? { tools: policy[caller] } : null),
          } as unknown as LoadedPolicy,
        }
      : {}),
  });
}

/** Starts the server (stopped at once when it does start), resolving to what it refused with. */
async function refusal(options: Partial<McpHttpServerOptions> & Pick<McpHttpServerOptions, 'client'>) {
  try {
    const server = await startMcpHttpServer({
      tokens: mcpTokenVerifier({ path: join(directory, 'mcp-tokens.json') }),
      port: 0,
      ...options,
    });
    await server.stop();
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

describe('startMcpHttpServer at start-up', () => {
  it('refuses a client without a policy, saying to pass one', async () => {
    const error = await refusal({ client: clientOf({ tools: [readTool('get_order')] }) });
    expect(error?.name).toBe('ConfigurationError');
    expect(error?.message).toContain('no policy was given');
    expect(error?.message).toContain('pass policy: loadPolicyFile');
  });

  it('refuses a tool named like the status tool, saying to rename it', async () => {
    const error = await refusal({
      client: clientOf({ tools: [readTool('toolgate_call_status')], policy: { 'support-bot': [] } }),
    });
    expect(error?.name).toBe('ConfigurationError');
    expect(error?.message).toContain('a tool is named "toolgate_call_status"');
    expect(error?.message).toContain('rename your tool');
  });

  it("refuses a caller's tool whose input schema cannot be turned into JSON Schema, naming the tool and the caller", async () => {
    const client = clientOf({
      tools: [
        readTool('get_order'),
        readTool('list_since', z.strictObject({ since: z.date().describe('From when.') })),
      ],
      policy: { 'support-bot': ['get_order'], 'report-bot': ['get_order', 'list_since'] },
    });
    const error = await refusal({ client, callers: ['support-bot', 'report-bot'] });
    expect(error?.name).toBe('ConfigurationError');
    expect(error?.message).toContain(
      'tool "list_since" (allowed to caller "report-bot"): its input schema cannot be turned into JSON Schema',
    );
    expect(error?.message).toContain('Date cannot be represented in JSON Schema');
    expect(error?.message).toContain("take the tool out of the caller's tools in the policy");
    // Callers that may not use it are served.
    expect(await refusal({ client, callers: ['support-bot'] })).toBeUndefined();
  });

  it('refuses session caps that are not whole numbers above 0', async () => {
    const client = clientOf({ tools: [readTool('get_order')], policy: { 'support-bot': ['get_order'] } });
    const error = await refusal({ client, maxSessionsPerToken: 0 });
    expect(error?.message).toContain('maxSessionsPerToken must be a whole number above 0');
  });

  it('warns when it listens beyond loopback, where tokens travel without TLS, and not on loopback', async () => {
    const client = clientOf({ tools: [readTool('get_order')], policy: { 'support-bot': ['get_order'] } });
    const logged = async (host: string): Promise<string[]> => {
      const lines: string[] = [];
      const server = await startMcpHttpServer({
        client,
        tokens: mcpTokenVerifier({ path: join(directory, 'mcp-tokens.json') }),
        host,
        port: 0,
        log: (line) => lines.push(line),
      });
      await server.stop();
      return lines;
    };
    const exposed = await logged('0.0.0.0');
    expect(exposed).toHaveLength(1);
    expect(exposed[0]).toMatch(
      /^warning: the MCP server listens on 0\.0\.0\.0, reachable from other machines/,
    );
    expect(exposed[0]).toContain('put it behind TLS');
    expect(await logged('127.0.0.1')).toEqual([]);
  });
});
