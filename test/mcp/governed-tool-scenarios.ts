// The behaviour every MCP transport must show, against the real harness: the caller's tools only, a
// governed read, a model error answered as a result, a refund that waits for a human and is applied
// once after approval, and another caller's call id that stays invisible.
import Ajv from 'ajv';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { expect, it } from 'vitest';
import { toolResultJsonSchema } from 'toolgate/mcp';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import {
  callAttributes,
  callTool,
  refundArguments,
  refundsAppliedFor,
  supportBotTools,
} from './mcp-test-support';

/** One open MCP connection as a test caller, and the toolgate session its calls go to. */
export interface McpConnection {
  client: McpClient;
  /** The toolgate session: `--session` over stdio, the MCP session id over HTTP. */
  session: string;
}

/** Registers the shared tests; `connection` returns the file's open connection for a caller. */
export function governedToolScenarios(input: {
  harness: () => ToolGateHarness;
  connection: (caller: 'support-bot' | 'readonly-bot') => McpConnection;
}): void {
  const { harness, connection } = input;
  const { decide } = approvalHelpers(harness);
  const validResult = new Ajv({ strict: false }).compile(structuredClone(toolResultJsonSchema));

  it("lists the caller's tools only, with toolgate's schemas and hints", async () => {
    const { tools } = await connection('support-bot').client.listTools();
    expect(tools.map(({ name, annotations }) => ({ name, annotations }))).toEqual(supportBotTools);
    const refund = tools.find((tool) => tool.name === 'refund_order')!;
    expect(refund.inputSchema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['order_id', 'amount_cents', 'currency', 'reason'],
      properties: { amount_cents: { type: 'integer' }, currency: { enum: ['BRL', 'USD'] } },
    });
    for (const tool of tools) expect(tool.outputSchema).toEqual(toolResultJsonSchema);
    const status = tools.find((tool) => tool.name === 'toolgate_call_status')!;
    expect(status.inputSchema).toMatchObject({ required: ['call_id'], additionalProperties: false });

    const readonly = await connection('readonly-bot').client.listTools();
    expect(readonly.tools.map((tool) => tool.name)).toEqual(['get_order', 'toolgate_call_status']);
  });

  it('runs get_order through toolgate and returns its data as structured content', async () => {
    const { result, isError } = await callTool(connection('support-bot').client, 'get_order', {
      order_id: 'ORD-1001',
    });
    expect(isError).toBe(false);
    expect(result).toMatchObject({
      ok: true,
      code: 'OK',
      tool: 'get_order',
      effect: 'none',
      data: { order_id: 'ORD-1001', customer_id: 'CUS-1', total_cents: 12_000, currency: 'BRL' },
    });
    expect(validResult(result)).toBe(true);
    expect(await callAttributes(harness(), result.callId)).toEqual({
      caller: 'support-bot',
      session: connection('support-bot').session,
    });
  });

  it('answers a float amount with INVALID_ARGUMENTS as a tool error the model can fix', async () => {
    const { result, isError } = await callTool(
      connection('support-bot').client,
      'refund_order',
      refundArguments(harness(), { amount_cents: 25.9 }),
    );
    expect(isError).toBe(true);
    expect(result).toMatchObject({ ok: false, code: 'INVALID_ARGUMENTS', effect: 'none' });
    expect(result.message).toContain('amount_cents: must be an integer, got 25.9');
    expect(validResult(result)).toBe(true);
  });

  it('answers a tool the caller may not use, or that does not exist, with a result, never a protocol error', async () => {
    const notAllowed = await callTool(
      connection('readonly-bot').client,
      'refund_order',
      refundArguments(harness()),
    );
    expect(notAllowed).toMatchObject({ isError: true, result: { code: 'TOOL_NOT_ALLOWED', effect: 'none' } });
    const unknown = await callTool(connection('readonly-bot').client, 'delete_everything', {});
    expect(unknown).toMatchObject({ isError: true, result: { code: 'UNKNOWN_TOOL', effect: 'none' } });
    // Both were proposed and audited as calls of the connection's caller.
    expect(await callAttributes(harness(), unknown.result.callId)).toMatchObject({ caller: 'readonly-bot' });
    expect(await harness().orders.api.refundCount()).toBe(0);
  });

  it('answers a refund with APPROVAL_PENDING at once, shows it pending, then applies it once after approval', async () => {
    const support = connection('support-bot').client;
    const proposed = await callTool(support, 'refund_order', refundArguments(harness()));
    expect(proposed.isError).toBe(false);
    expect(proposed.result).toMatchObject({ ok: false, code: 'APPROVAL_PENDING', effect: 'none' });
    expect(proposed.result.data).toMatchObject({ callId: proposed.result.callId, quorum: 1 });
    const { callId } = proposed.result;

    const pending = await callTool(support, 'toolgate_call_status', { call_id: callId });
    expect(pending).toMatchObject({ isError: false, result: { code: 'APPROVAL_PENDING', callId } });
    expect(await refundsAppliedFor(harness(), callId)).toBe(0);

    expect(await decide(callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    const done = await callTool(support, 'toolgate_call_status', { call_id: callId });
    expect(done).toMatchObject({
      isError: false,
      result: {
        ok: true,
        code: 'OK',
        effect: 'applied',
        callId,
        data: { amount_cents: 2590, currency: 'BRL' },
      },
    });
    expect(validResult(done.result)).toBe(true);
    expect(await refundsAppliedFor(harness(), callId)).toBe(1);

    // Proposed again in the same session: the same call id, replayed, and still one refund.
    const again = await callTool(
      support,
      'refund_order',
      refundArguments(harness(), { reason: 'not_delivered' }),
    );
    expect(again.result).toMatchObject({ ok: true, callId, replayed: true });
    expect(validResult(again.result)).toBe(true);
    expect(await refundsAppliedFor(harness(), callId)).toBe(1);
  });

  it("answers CALL_NOT_FOUND for another caller's call, exactly as for a call that does not exist", async () => {
    const theirs = await harness().call({
      caller: 'support-bot',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1002"}',
    });
    expect(theirs).toMatchObject({ ok: true });
    const readonly = connection('readonly-bot').client;
    const foreign = await callTool(readonly, 'toolgate_call_status', { call_id: theirs.callId });
    expect(foreign).toMatchObject({
      isError: true,
      result: { ok: false, code: 'CALL_NOT_FOUND', effect: 'none' },
    });
    const missing = await callTool(readonly, 'toolgate_call_status', { call_id: `tc-${'0'.repeat(64)}` });
    const { callId: _foreignId, message: foreignMessage, ...foreignRest } = foreign.result;
    const { callId: _missingId, message: missingMessage, ...missingRest } = missing.result;
    expect(foreignRest).toEqual(missingRest);
    expect(foreignMessage.replace(theirs.callId, 'ID')).toBe(
      missingMessage.replace(`tc-${'0'.repeat(64)}`, 'ID'),
    );
    expect(validResult(foreign.result)).toBe(true);

    const invalid = await callTool(readonly, 'toolgate_call_status', { call_id: 42 });
    expect(invalid).toMatchObject({ isError: true, result: { code: 'INVALID_ARGUMENTS' } });
    expect(validResult(invalid.result)).toBe(true);
  });
}
