// A burst of proposals in one session, as a model that sends hundreds of tool calls in one turn
// makes it: every proposal is answered with a ToolResult through the client, the OpenAI intake, the
// MCP HTTP server and the agent loop, none is lost to an exception, and nothing is applied. A proposal
// the server refuses for load is `OVERLOADED` (effect none, audited), never a throw.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, ServiceError } from '@temporalio/client';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { runAgentLoop } from '../../examples/agent/agent-loop';
import type { ScriptedModelServer } from '../../examples/agent/scripted-model/scripted-model-server';
import { startScriptedModelServer } from '../../examples/agent/scripted-model/scripted-model-server';
import { burst, burstSize } from '../../examples/agent/scripted-model/scripts';
import type { ToolResult } from 'toolgate';
import { keyPaths, readPrivateKey, runOpenAIChatToolCalls, ToolGateClient } from 'toolgate';
import type { McpHttpServer } from 'toolgate/mcp';
import { createMcpToken, mcpTokenVerifier, startMcpHttpServer } from 'toolgate/mcp';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;
useHarness((started) => (harness = started));

const caller = 'burst-bot';
const refundOf = (cents: number) => ({
  order_id: 'ORD-1001',
  amount_cents: cents,
  currency: 'BRL',
  reason: 'damaged',
});
const codeCounts = (results: readonly ToolResult[]) => {
  const counts: Record<string, number> = {};
  for (const result of results) counts[result.code] = (counts[result.code] ?? 0) + 1;
  return counts;
};

/** Settles every promise; fails the test, naming what was thrown, if any of them rejected. */
async function everyAnswered<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  expect(
    settled.flatMap((outcome) => (outcome.status === 'rejected' ? [String(outcome.reason)] : [])),
  ).toEqual([]);
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<T>).value);
}

describe('200 parallel proposals in one session through the client', () => {
  it('answers 200 distinct refunds, every one APPROVAL_PENDING under its own call id, and applies none', async () => {
    const session = harness.newSession();
    const results = await everyAnswered(
      Array.from({ length: 200 }, (_, index) =>
        harness.client.call({ session, caller, tool: 'refund_order', arguments: refundOf(index + 1) }),
      ),
    );
    expect(codeCounts(results)).toEqual({ APPROVAL_PENDING: 200 });
    expect(new Set(results.map((result) => result.callId)).size).toBe(200);
    expect((await harness.client.sessionStats(session)).steps).toBe(200);
    expect(await harness.orders.api.refundCount()).toBe(0);
  });

  it('answers 200 reads of 3 orders after 3 rejections: the loop guard and the reads, nothing thrown', async () => {
    const session = harness.newSession();
    // Three refunds over the caller's limit: refund_order's circuit opens, get_order's stays closed.
    const rejected = await everyAnswered(
      [60_000, 70_000, 80_000].map((cents) =>
        harness.client.call({ session, caller, tool: 'refund_order', arguments: refundOf(cents) }),
      ),
    );
    expect(codeCounts(rejected)).toEqual({ POLICY_LIMIT: 3 });
    const orders = ['ORD-1001', 'ORD-1002', 'ORD-1003'];
    const results = await everyAnswered(
      Array.from({ length: 200 }, (_, index) =>
        harness.client.call({
          session,
          caller,
          tool: 'get_order',
          arguments: { order_id: orders[index % 3]! },
        }),
      ),
    );
    // The same read is one call id: the loop guard admits it 3 times per order, then refuses it.
    expect(codeCounts(results)).toEqual({ OK: 9, LOOP_DETECTED: 191 });
  });
});

describe('a burst through the OpenAI intake', () => {
  it("answers every one of a turn's 200 tool calls by its id, in order", async () => {
    const { messages, results } = await runOpenAIChatToolCalls({
      client: harness.client,
      session: harness.newSession(),
      caller,
      toolCalls: Array.from({ length: 200 }, (_, index) => ({
        id: `call_${index}`,
        type: 'function' as const,
        function: { name: 'refund_order', arguments: JSON.stringify(refundOf(index + 1)) },
      })),
    });
    expect(messages.map((message) => message.tool_call_id)).toEqual(
      Array.from({ length: 200 }, (_, index) => `call_${index}`),
    );
    expect(codeCounts(results)).toEqual({ APPROVAL_PENDING: 200 });
    expect(await harness.orders.api.refundCount()).toBe(0);
  });
});

describe('a burst through the MCP HTTP server', () => {
  let server: McpHttpServer;
  let directory: string;
  let mcp: McpClient;
  let transport: StreamableHTTPClientTransport;
  let token: string;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'toolgate-burst-'));
    const tokensPath = join(directory, 'mcp-tokens.json');
    token = createMcpToken({ path: tokensPath, caller }).token;
    server = await startMcpHttpServer({
      client: harness.client,
      tokens: mcpTokenVerifier({ path: tokensPath }),
      callers: [caller],
      port: 0,
    });
    transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    mcp = new McpClient({ name: 'burst-test', version: '1.0.0' });
    await mcp.connect(transport);
  });

  afterAll(async () => {
    await mcp?.close();
    await server?.stop();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  /** Posts one JSON-RPC batch into the MCP session; returns every message the event stream (or JSON) answered. */
  async function postBatch(batch: readonly unknown[]) {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        Authorization: `Bearer ${token}`,
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': '2025-03-26',
      },
      body: JSON.stringify(batch),
    });
    const body = await response.text();
    expect(response.status, body).toBe(200);
    return (
      body.trimStart().startsWith('[')
        ? (JSON.parse(body) as unknown[])
        : body
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .flatMap((line) => [JSON.parse(line.slice('data: '.length)) as unknown].flat())
    ) as { id: number; result?: { structuredContent: ToolResult }; error?: unknown }[];
  }

  it('answers two parallel JSON-RPC batches of 100 tools/call (the most a batch may hold) with 200 results, no protocol error', async () => {
    const calls = Array.from({ length: 200 }, (_, index) => ({
      jsonrpc: '2.0',
      id: index + 1,
      method: 'tools/call',
      params: { name: 'refund_order', arguments: refundOf(index + 1) },
    }));
    const answers = (await Promise.all([postBatch(calls.slice(0, 100)), postBatch(calls.slice(100))])).flat();
    expect(answers.filter((answer) => answer.error !== undefined)).toEqual([]);
    expect(answers.map((answer) => answer.id).sort((a, b) => a - b)).toEqual(calls.map((call) => call.id));
    expect(codeCounts(answers.map((answer) => answer.result!.structuredContent))).toEqual({
      APPROVAL_PENDING: 200,
    });
    expect(await harness.orders.api.refundCount()).toBe(0);
  });
});

describe('a burst through the agent loop', () => {
  let model: ScriptedModelServer;
  beforeAll(async () => {
    model = await startScriptedModelServer({ scripts: [burst] });
  });
  afterAll(async () => {
    await model?.close();
  });

  it(`gets the model's answer after a turn of ${burstSize} refunds, every one answered`, async () => {
    const outcome = await runAgentLoop({
      openai: new OpenAI({ baseURL: model.baseURL, apiKey: 'scripted', maxRetries: 0 }),
      model: burst.name,
      client: harness.client,
      session: harness.newSession(),
      caller,
      messages: [{ role: 'user', content: burst.userMessage }],
    });
    expect(model.requests.filter((request) => request.diverged)).toEqual([]);
    expect(outcome.stop).toBe('answered');
    expect(outcome.results).toHaveLength(burstSize);
    expect(outcome.answer).toBe(`toolgate answered all ${burstSize} refunds: ${burstSize} APPROVAL_PENDING.`);
    expect(await harness.orders.api.refundCount()).toBe(0);
  });
});

describe('a proposal the server refuses for load', () => {
  /** What the server says when a workflow has 10 updates in flight, as the SDK raises it. */
  const refusedForLoad = () =>
    new ServiceError('Update-with-Start could not be executed.', {
      cause: new Error(
        '8 RESOURCE_EXHAUSTED: limit on number of concurrent in-flight updates has been reached (10)',
      ),
    });

  /** A client of the harness's deployment whose update-with-start of `workflowType` fails as `fail` says. */
  const clientFailing = (input: {
    workflowType: string;
    fail: (next: () => Promise<unknown>) => Promise<never>;
  }): ToolGateClient => {
    const interceptor: WorkflowClientInterceptor = {
      startUpdateWithStart: async (call, next) =>
        call.workflowType === input.workflowType ? input.fail(() => next(call)) : next(call),
    };
    return new ToolGateClient({
      client: new Client({
        connection: harness.temporal.connection,
        interceptors: { workflow: [interceptor] },
      }),
      tools: ordersContracts,
      taskQueue: harness.taskQueue,
      callerKey: (name) =>
        readPrivateKey(
          keyPaths({ directory: harness.keysDirectory, owner: { kind: 'caller', name } }).privateKey,
        ),
      audit: harness.audit,
      retryTransientForMs: 300,
    });
  };

  const workflowExists = async (callId: string) => {
    try {
      await harness.temporal.workflow.getHandle(callId).describe();
      return true;
    } catch (error) {
      if ((error as Error).name === 'WorkflowNotFoundError') return false;
      throw error;
    }
  };

  {
    it("answers OVERLOADED with effect none, audited, when the call's start is refused", async () => {
      const client = clientFailing({
        workflowType: 'toolCall',
        fail: () => Promise.reject(refusedForLoad()),
      });
      const result = await client.call({
        session: harness.newSession(),
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: refundOf(2590),
      });
      expect(result).toMatchObject({ ok: false, code: 'OVERLOADED', effect: 'none', tool: 'refund_order' });
      expect(result.message).toContain('Wait a few seconds, then propose it again');
      expect(await workflowExists(result.callId)).toBe(false);
      expect(await harness.audit.recordsOf(result.callId)).toEqual([
        expect.objectContaining({
          runId: expect.stringMatching(/^undelivered:/) as unknown,
          code: 'OVERLOADED',
          effect: 'none',
          caller: 'support-bot',
        }),
      ]);
      expect(await harness.orders.api.refundCount()).toBe(0);
    });
  }

  it('answers with the call itself when its run started although the update failed', async () => {
    const client = clientFailing({
      workflowType: 'toolCall',
      fail: async (next) => {
        await next();
        throw refusedForLoad();
      },
    });
    const result = await client.call({
      session: harness.newSession(),
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: refundOf(2590),
    });
    expect(result).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    expect(await workflowExists(result.callId)).toBe(true);
    expect(await harness.audit.recordsOf(result.callId)).toEqual([]);
  });

  it('answers INTERNAL_ERROR, nothing started, when the server fails otherwise', async () => {
    const client = clientFailing({
      workflowType: 'toolCall',
      fail: () => Promise.reject(new ServiceError('14 UNAVAILABLE: connection refused')),
    });
    const result = await client.call({
      session: harness.newSession(),
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: refundOf(2590),
    });
    expect(result).toMatchObject({ ok: false, code: 'INTERNAL_ERROR', effect: 'none' });
    expect(result.message).toContain('did not start and nothing ran');
    expect(await harness.audit.recordsOf(result.callId)).toEqual([
      expect.objectContaining({
        code: 'INTERNAL_ERROR',
        runId: expect.stringMatching(/^undelivered:/) as unknown,
      }),
    ]);
  });
});
