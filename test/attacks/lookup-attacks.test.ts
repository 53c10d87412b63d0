import { randomUUID } from 'node:crypto';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import type { SignedGrant } from 'toolgate/protocol';
import { addGrant } from 'toolgate/admin';
import { grantsWorkflowId, sessionOperationIdPrefix, sessionOperationWorkflowType } from 'toolgate/protocol';
import { createToolGateMcpServer } from 'toolgate/mcp';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Ids that name no call: a workflow of toolgate's that is not a call (a session, the grants), text
// that is no call id at all (a lone surrogate, 256 characters of anything). Every lookup, decision
// and cancellation answers CALL_NOT_FOUND, the one answer for a call the asker may not see, and is
// audited as such: never an `Error`, never a protocol error that tells a model to ask again.

let harness: ToolGateHarness;
useHarness((started) => (harness = started));
const { proposeRefund, appliedRefunds } = approvalHelpers(() => harness);

/** Ids that are not calls. */
const notCalls = () => [
  `${sessionOperationIdPrefix}${harness.newSession()}`,
  grantsWorkflowId(harness.taskQueue),
  '\ud800',
  'tc-\ud800',
  `tc-${'0'.repeat(63)}`,
  'x'.repeat(256),
];

/** The id of a session operation that ran (its stats, asked now): a workflow that is not a call. */
async function sessionOperationOf(session: string): Promise<string> {
  await harness.client.sessionStats(session);
  for await (const execution of harness.temporal.workflow.list({
    query: `WorkflowType = "${sessionOperationWorkflowType}"`,
  })) {
    return execution.workflowId;
  }
  throw new Error('no session operation is listed');
}

describe('a decision sent to what is not a call', () => {
  beforeAll(async () => {
    // The grants workflow exists once anything was sent to it, even a grant it refuses.
    const refused = await addGrant({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      signed: { grant: {}, signatures: [] } as unknown as SignedGrant,
    });
    expect(refused).toMatchObject({ accepted: false, code: 'GRANT_INVALID' });
    await harness.temporal.workflow.getHandle(grantsWorkflowId(harness.taskQueue)).describe();
  });

  it('is CALL_NOT_FOUND, and audited so, for a session, the grants, and ids that are no call id', async () => {
    // A session that exists: a proposal started its workflow.
    const session = `${harness.newSession()}:support-bot`;
    await harness.client.call({
      session,
      caller: 'support-bot',
      tool: 'get_order',
      arguments: { order_id: 'ORD-1001' },
    });
    for (const callId of [await sessionOperationOf(session), ...notCalls()]) {
      const outcome = await harness.admin.decide({
        callId,
        approver: 'alice',
        privateKey: harness.approverKey('alice'),
        decision: 'approve',
        reason: 'looks fine',
      });
      expect(outcome, callId).toMatchObject({ accepted: false, code: 'CALL_NOT_FOUND' });
      expect((await harness.audit.decisionAttemptsOf(callId)).map((attempt) => attempt.outcome)).toEqual([
        'CALL_NOT_FOUND',
      ]);
    }
    expect(await appliedRefunds()).toBe(0);
  });

  it('is CALL_NOT_FOUND for an already signed decision relayed to the grants workflow', async () => {
    const pending = await proposeRefund();
    const round = (await harness.admin.show(pending.callId))!.approval!;
    const envelope = {
      callId: pending.callId,
      runId: round.runId,
      nonce: round.nonce,
      argsDigest: round.argsDigest,
      previewDigest: round.previewDigest,
      contractDigest: round.contractDigest,
      decision: 'approve' as const,
      approver: 'alice',
      reason: 'relayed elsewhere',
      issuedAt: new Date().toISOString(),
    };
    const target = grantsWorkflowId(harness.taskQueue);
    const outcome = await harness.admin.send({
      callId: target,
      decision: { envelope, signature: 'A'.repeat(86) },
    });
    expect(outcome).toMatchObject({ accepted: false, code: 'CALL_NOT_FOUND' });
    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({ state: 'pending' });
  });
});

describe('a lookup of what is not a call', () => {
  it("answers CALL_NOT_FOUND to the client's status, result and cancel", async () => {
    for (const callId of notCalls()) {
      expect(await harness.client.callStatus({ callId, caller: 'support-bot' }), callId).toMatchObject({
        code: 'CALL_NOT_FOUND',
      });
      expect(await harness.client.result(callId, { wait: false }), callId).toMatchObject({
        code: 'CALL_NOT_FOUND',
      });
      expect(await harness.client.cancel({ callId, caller: 'support-bot', reason: 'no' })).toMatchObject({
        cancelled: false,
        code: 'CALL_NOT_FOUND',
      });
    }
  });

  describe('through the MCP status tool', () => {
    let mcp: McpClient;
    beforeAll(async () => {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const server = createToolGateMcpServer({
        client: harness.client,
        caller: 'support-bot',
        session: `mcp-${randomUUID()}`,
      });
      await server.connect(serverSide);
      mcp = new McpClient({ name: 'lookup-attacks', version: '1.0.0' });
      await mcp.connect(clientSide);
    });
    afterAll(async () => {
      await mcp?.close();
    });

    it('answers a lone surrogate and every other non-call id with a CALL_NOT_FOUND result, not a protocol error', async () => {
      for (const callId of notCalls()) {
        const answer = await mcp.callTool({ name: 'toolgate_call_status', arguments: { call_id: callId } });
        expect((answer.structuredContent as ToolResult).code, callId).toBe('CALL_NOT_FOUND');
        expect(answer.isError).toBe(true);
      }
    });
  });
});
