// Records the histories of representative calls into test/histories/, for the replay test.
// Run it once per deliberate change of the workflow's history shape:
//   npx tsx --conditions=toolgate-source scripts/record-histories.ts
// Before 1.0.0 a change re-records; from then on, a change that alters a running call's commands
// gets a patched() guard and a new recorded generation (CONTRIBUTING.md).
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Connection } from '@temporalio/client';
import { generateKeyPairSync } from 'node:crypto';
import { defineToolContract } from 'toolgate';
import {
  enrolApproverKey,
  inviteApprover,
  addGrant,
  revokeGrant,
  signGrant,
  setToolSwitch,
} from 'toolgate/admin';
import {
  approverKeysWorkflowId,
  controlsWorkflowId,
  grantsWorkflowId,
  quotaWorkflowId,
} from 'toolgate/protocol';
import type { ToolResult } from 'toolgate';
import { prepareNamespace, startDevServer } from 'toolgate/testing';
import { refundOrderContract } from '../examples/orders/orders-contracts';
import { approversInGroups, testPolicy } from '../test/support/test-policy';
import { startHarness } from '../test/support/toolgate-harness';

const projectRoot = resolve(__dirname, '..');
const directory = join(projectRoot, 'test', 'histories');

/**
 * The history with every failure's stack trace emptied, in the failure and in its encoded attributes:
 * a stack trace names the folders of the machine that recorded it, and replay never reads it.
 */
function withoutStackTraces<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => withoutStackTraces(item)) as T;
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
  const copy = { ...(value as Record<string, unknown>) };
  for (const [key, field] of Object.entries(copy)) {
    if (key === 'stackTrace' && typeof field === 'string') copy[key] = '';
    else if (key === 'encodedAttributes' && field && typeof field === 'object') {
      const payload = field as { data?: Uint8Array | null };
      if (payload.data) {
        const attributes = JSON.parse(Buffer.from(payload.data).toString('utf8')) as Record<string, unknown>;
        if (typeof attributes.stack_trace === 'string') attributes.stack_trace = '';
        copy[key] = { ...payload, data: Buffer.from(JSON.stringify(attributes), 'utf8') };
      }
    } else copy[key] = withoutStackTraces(field);
  }
  return copy as T;
}

async function main(): Promise<void> {
  const server = await startDevServer({ projectRoot, headless: true, log: (line) => console.error(line) });
  try {
    const connection = await Connection.connect({ address: server.address });
    await prepareNamespace({ connection, namespace: server.namespace });
    await connection.close();
    // A deployment-wide limit on refunds, so the refunds' histories reserve (and a refused one releases).
    const harness = await startHarness({
      address: server.address,
      policy: {
        ...testPolicy,
        quotas: [{ tool: 'refund_order', window: '24h', maxCalls: 1000, maxAmount: 10_000_000 }],
        // cautious-bot's refunds pass a chain: the support lead, then finance.
        callers: {
          ...testPolicy.callers,
          'cautious-bot': {
            ...testPolicy.callers['cautious-bot']!,
            approval: {
              ceiling: 'irreversible',
              chains: { irreversible: [{ group: 'support-lead' }, { group: 'finance' }] },
            },
          },
        },
        approvers: approversInGroups({ alice: ['support-lead'], dave: ['finance'] }),
      },
    });
    try {
      const refunder = 'test-refunder';
      const record = async (name: string, callId: string, fileId = callId): Promise<void> => {
        const history = await harness.temporal.workflow.getHandle(callId).fetchHistory();
        // Binary protobuf: the SDK's JSON helper does not load in this setup, and bytes replay exactly.
        // The file name keeps the workflow ID: the workflow checks its ID against the proposal on replay too.
        writeFileSync(
          join(directory, `${name}--${fileId}.history.bin`),
          temporal.api.history.v1.History.encode(withoutStackTraces(history)).finish(),
        );
        console.error(`recorded ${name}`);
      };
      const read = await harness.call({
        caller: refunder,
        tool: 'get_order',
        arguments: '{"order_id":"ORD-1001"}',
      });
      await record('read-ok', read.callId);
      const refund = await harness.call({
        caller: refunder,
        tool: 'refund_order',
        arguments: harness.refundArguments(),
      });
      await record('refund-ok', refund.callId);
      const invalid = await harness.call({
        caller: refunder,
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 25.9 }),
      });
      await record('refund-invalid-arguments', invalid.callId);
      const mismatch = await harness.call({
        caller: refunder,
        tool: 'refund_order',
        arguments: harness.refundArguments({ currency: 'USD' }),
      });
      await record('refund-business-rejection', mismatch.callId);
      // On whose behalf: CUS-1's conversation refunding CUS-2's order, refused at the checks.
      const notOwned = await harness.client.call({
        session: harness.newSession(),
        caller: refunder,
        tool: 'refund_order',
        arguments: harness.refundArguments({ order_id: 'ORD-1002', currency: 'USD', amount_cents: 1000 }),
        context: { onBehalfOf: 'CUS-1', channel: 'end-user-chat' },
      });
      await record('refund-not-owned', notOwned.callId);
      const limit = await harness.call({
        caller: refunder,
        tool: 'refund_order',
        arguments: harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 60_000 }),
      });
      await record('refund-policy-limit', limit.callId);
      const lostArguments = harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 1000 });
      const session = harness.newSession();
      const lostCallId = harness.client.callIdOf({
        session,
        caller: refunder,
        tool: 'refund_order',
        arguments: lostArguments,
      });
      await harness.orders.api.setFaults({
        idempotencyKey: lostCallId,
        loseResponseAfterCommit: 1,
        unavailable: 100,
      });
      const lost = await harness.call({ caller: refunder, tool: 'refund_order', arguments: lostArguments });
      await record('refund-lost-response-then-unavailable', lost.callId);
      const unknownTool = await harness.call({ caller: refunder, tool: 'delete_everything', arguments: '{' });
      await record('unknown-tool', unknownTool.callId);
      const decide = (callId: string, approver: string, decision: 'approve' | 'deny') =>
        harness.admin.decide({
          callId,
          approver,
          privateKey: harness.approverKey(approver),
          decision,
          reason: 'recorded',
        });
      const approved = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ order_id: 'ORD-1002', amount_cents: 500, currency: 'USD' }),
      });
      await decide(approved.callId, 'alice', 'approve');
      await harness.client.result(approved.callId, { wait: true });
      await record('refund-approved', approved.callId);
      // Approved with a key alice enrolled through olivia's invite: the registry lookup is recorded too.
      const registry = { client: harness.temporal, taskQueue: harness.taskQueue };
      const { link } = await inviteApprover({
        ...registry,
        approver: 'alice',
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
      });
      const enrolledKey = generateKeyPairSync('ed25519').privateKey;
      const { chain } = await enrolApproverKey({
        ...registry,
        link,
        privateKey: enrolledKey,
        label: 'recorded',
      });
      if (!chain) throw new Error('the recorded key could not be enrolled');
      const byEnrolledKey = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ order_id: 'ORD-1002', amount_cents: 650, currency: 'USD' }),
      });
      await harness.admin.decide({
        callId: byEnrolledKey.callId,
        approver: 'alice',
        privateKey: enrolledKey,
        key: chain,
        decision: 'approve',
        reason: 'recorded',
      });
      await harness.client.result(byEnrolledKey.callId, { wait: true });
      await record('refund-approved-enrolled-key', byEnrolledKey.callId);
      // The registry's id names the harness's task queue; the file keeps the default queue's id.
      await record(
        'approver-keys',
        approverKeysWorkflowId(harness.taskQueue),
        approverKeysWorkflowId('toolgate'),
      );
      const denied = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ order_id: 'ORD-1002', amount_cents: 700, currency: 'USD' }),
      });
      await decide(denied.callId, 'bob', 'deny');
      await harness.client.result(denied.callId, { wait: true });
      await record('refund-denied', denied.callId);
      // Edited by an approver (2590 to 2000 cents), then approved as edited.
      const edited = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 2590 }),
      });
      const editArgs = {
        ...(await harness.admin.show(edited.callId))?.validatedArguments,
        amount_cents: 2000,
      };
      const editOutcome = await harness.admin.edit({
        callId: edited.callId,
        approver: 'bob',
        privateKey: harness.approverKey('bob'),
        args: editArgs,
        reason: 'recorded',
      });
      if (!editOutcome.accepted) throw new Error(`the edit was refused: ${editOutcome.message}`);
      await harness.admin.waitForRound({ callId: edited.callId, after: editOutcome.round });
      await decide(edited.callId, 'bob', 'approve');
      await harness.client.result(edited.callId, { wait: true });
      await record('refund-edited', edited.callId);
      // Through a chain: finance refused before the lead, then the lead, then finance.
      const chained = await harness.call({
        caller: 'cautious-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 630 }),
      });
      const early = await decide(chained.callId, 'dave', 'approve');
      if (early.accepted) throw new Error('finance approved before the lead');
      await decide(chained.callId, 'alice', 'approve');
      await decide(chained.callId, 'dave', 'approve');
      await harness.client.result(chained.callId, { wait: true });
      await record('refund-chain', chained.callId);
      const expired = await harness.call({
        caller: 'hasty-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments(),
      });
      await harness.client.result(expired.callId, { wait: true });
      await record('refund-approval-expired', expired.callId);
      // Cancelled by its caller's harness while it waited; then one closed by the kill switch.
      const cancelled = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 610 }),
      });
      await harness.client.cancel({ callId: cancelled.callId, caller: 'support-bot', reason: 'withdrawn' });
      await record('refund-cancelled', cancelled.callId);
      const switchedOff = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 620 }),
      });
      for (let listed = false; !listed;) {
        for await (const _ of harness.temporal.workflow.list({
          query: `WorkflowId = '${switchedOff.callId}' AND ApprovalState = 'pending'`,
        }))
          listed = true;
      }
      const flip = (action: 'disable' | 'enable') =>
        setToolSwitch({
          client: harness.temporal,
          taskQueue: harness.taskQueue,
          action,
          tool: 'refund_order',
          operator: 'olivia',
          operatorKey: harness.operatorKey('olivia'),
          reason: 'recording',
        });
      await flip('disable');
      await harness.client.result(switchedOff.callId, { wait: true });
      await record('refund-tool-disabled', switchedOff.callId);
      await flip('enable');
      // A refund a standing grant covered (no round, the grant's use recorded), then the grant revoked.
      const granted = await addGrant({
        client: harness.temporal,
        taskQueue: harness.taskQueue,
        signed: signGrant({
          taskQueue: harness.taskQueue,
          caller: 'support-bot',
          tool: 'refund_order',
          maxLevel: 'irreversible',
          maxCalls: 2,
          maxAmountPerCall: 1_000,
          expiresAt: new Date(Date.now() + 60 * 60 * 1000),
          reason: 'recording',
          approver: 'alice',
          approverKey: harness.approverKey('alice'),
        }),
      });
      if (!granted.accepted) throw new Error(`the grant was refused: ${granted.code}`);
      const byGrant = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 630 }),
      });
      if (byGrant.code !== 'OK') throw new Error(`the granted refund answered ${byGrant.code}`);
      await record('refund-granted', byGrant.callId);
      await revokeGrant({
        client: harness.temporal,
        taskQueue: harness.taskQueue,
        grantId: granted.grant.grant.grantId,
        by: { operator: 'olivia' },
        key: harness.operatorKey('olivia'),
        reason: 'recording done',
      });
      await record('grants', grantsWorkflowId(harness.taskQueue), 'toolgate-grants');
      // The kill switch's and the refund limit's own workflows, under the default queue's ids.
      // File names keep to letters, digits, - and _ (a workflow id's colons are not portable in a file name).
      await record('controls', controlsWorkflowId(harness.taskQueue), 'toolgate-controls');
      const deploymentLimit = {
        scope: 'deployment' as const,
        tool: 'refund_order',
        window: '24h',
        windowMs: 24 * 60 * 60 * 1000,
      };
      await record(
        'refund-limit-counter',
        quotaWorkflowId({ taskQueue: harness.taskQueue, quota: deploymentLimit }),
        'toolgate-quota-deployment-refund_order-24h',
      );
      // A session's reads: three admitted, the fourth of the same order refused LOOP_DETECTED at its
      // call's first step (sessions are state in the audit store: the refused run is what is recorded).
      const sessionId = harness.newSession();
      const ask = (orderId: string) =>
        harness.client.call({
          session: sessionId,
          caller: refunder,
          tool: 'get_order',
          arguments: `{"order_id":"${orderId}"}`,
        });
      let looped: ToolResult | undefined;
      for (const orderId of ['ORD-1001', 'ORD-1001', 'ORD-1001', 'ORD-1001']) looped = await ask(orderId);
      if (looped?.code !== 'LOOP_DETECTED') throw new Error(`expected LOOP_DETECTED, got ${looped?.code}`);
      await record('read-loop-detected', looped.callId);
      // Last, since it deploys another contract: a refund whose risk function changed while it waited.
      // The old round is superseded, the call judged again, approved in a new round and run.
      const waiting = await harness.call({
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ order_id: 'ORD-1002', amount_cents: 800, currency: 'USD' }),
      });
      const deployed = defineToolContract({
        name: refundOrderContract.name,
        description: refundOrderContract.description,
        input: refundOrderContract.input,
        output: refundOrderContract.output,
        effect: 'write',
        risk: ({ args }) => (args.amount_cents > 5_000 ? 'critical' : 'irreversible'),
        domainCodes: refundOrderContract.domainCodes,
        idempotencyFields: ['order_id', 'amount_cents', 'currency'],
        summarize: refundOrderContract.summarize,
        resource: refundOrderContract.resource,
        ...(refundOrderContract.examples ? { examples: refundOrderContract.examples } : {}),
      });
      await harness.restartWorker(undefined, {
        tools: (current) =>
          current.map((tool) =>
            tool.contract.name === deployed.name ? { ...tool, contract: deployed } : tool,
          ),
      });
      const refused = await decide(waiting.callId, 'alice', 'approve');
      if (refused.accepted || refused.code !== 'CONTRACT_CHANGED') {
        throw new Error(`the deploy did not supersede the round: ${JSON.stringify(refused)}`);
      }
      for (let attempt = 0; ; attempt++) {
        const approval = (await harness.admin.show(waiting.callId))?.approval;
        if (approval?.round === 2 && approval.state === 'pending') break;
        if (attempt > 100) throw new Error('no new round opened after the contract changed');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await decide(waiting.callId, 'alice', 'approve');
      await harness.client.result(waiting.callId, { wait: true });
      await record('refund-contract-changed', waiting.callId);
    } finally {
      await harness.stop();
    }
  } finally {
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
