// What the MCP tests share: reading a ToolResult back from an MCP tool result, the expected tool
// annotations, and counting the refunds the orders service applied under one call id.
import { join } from 'node:path';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'vitest';
import type { ToolResult } from 'toolgate';
import { searchAttributes } from 'toolgate/protocol';
import type { ToolGateHarness } from '../support/toolgate-harness';

/** The repository's root: child processes run the CLI from source there. */
export const projectRoot = join(__dirname, '..', '..');

/** What `tools/call` answered, as the model and the harness see it. */
export interface McpCallAnswer {
  result: ToolResult;
  isError: boolean;
  text: string;
}

/** Calls a tool over MCP and checks that the text content and the structured content are the same result. */
export async function callTool(
  client: McpClient,
  name: string,
  args: Record<string, unknown>,
): Promise<McpCallAnswer> {
  const answer = await client.callTool({ name, arguments: args });
  const content = answer.content as { type: string; text: string }[];
  expect(content).toHaveLength(1);
  expect(content[0]!.type).toBe('text');
  const text = content[0]!.text;
  expect(JSON.parse(text)).toEqual(answer.structuredContent);
  return {
    result: answer.structuredContent as ToolResult,
    isError: answer.isError === true,
    text,
  };
}

/** Refund arguments for ORD-1001 as an object, as an MCP client sends them. */
export function refundArguments(harness: ToolGateHarness, overrides: Record<string, unknown> = {}) {
  return JSON.parse(harness.refundArguments(overrides)) as Record<string, unknown>;
}

/** The refunds the orders service applied under this call id (its idempotency key). */
export async function refundsAppliedFor(harness: ToolGateHarness, callId: string): Promise<number> {
  const refunds = await harness.orders.api.listRefunds({ orderId: 'ORD-1001' });
  return refunds.filter((refund) => refund.idempotencyKey === callId).length;
}

/** The Caller and SessionId search attributes of a call's workflow, or undefined when no workflow has that id. */
export async function callAttributes(
  harness: ToolGateHarness,
  callId: string,
): Promise<{ caller: string | undefined; session: string | undefined } | undefined> {
  try {
    const attributes = (await harness.temporal.workflow.getHandle(callId).describe()).typedSearchAttributes;
    return {
      caller: attributes.get(searchAttributes.caller),
      session: attributes.get(searchAttributes.sessionId),
    };
  } catch (error) {
    if ((error as Error).name === 'WorkflowNotFoundError') return undefined;
    throw error;
  }
}

/**
 * The MCP view of support-bot's tools: toolgate's two orders tools, in registry order, then the
 * status tool, each with the hints toolgate can stand behind.
 */
export const supportBotTools = [
  {
    name: 'get_order',
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  {
    name: 'refund_order',
    // A write is one call within one session only: proposed in a new session, it is a new call.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  },
  {
    name: 'toolgate_call_status',
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
];
