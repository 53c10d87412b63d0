// `npm run demo`: the seed article's story, told through toolgate's client against `npm start`.
// A scripted stand-in plays the model (no LLM here): it proposes the calls a model would, and the
// harness feeds each ToolResult back. With --auto-approve-as NAME the demo approves as that
// approver itself (for the README and CI); otherwise it waits for you to run the approval command.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ToolResult } from 'toolgate';
import {
  connectTemporalClient,
  keyPaths,
  loadConfig,
  readPrivateKey,
  resolveTemporalConnection,
  ToolGateClient,
} from 'toolgate';
import { ApprovalAdmin } from 'toolgate/admin';
import { createOrdersApiClient } from './orders-api-client';

const projectRoot = resolve(__dirname, '..', '..');

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { 'auto-approve-as': { type: 'string' }, address: { type: 'string' } },
  });
  const orders = createOrdersApiClient({ baseUrl: process.env.ORDERS_URL ?? 'http://127.0.0.1:4100' });
  const config = loadConfig({ path: resolve(projectRoot, 'toolgate.config.ts') });
  // TLS, API key and payload codec as configured (config or environment), like every toolgate client.
  const settings = resolveTemporalConnection({
    config,
    env: process.env,
    overrides: values.address !== undefined ? { address: values.address } : {},
  });
  const { connection, client: temporal } = await connectTemporalClient(settings);
  try {
    const client = new ToolGateClient({
      client: temporal,
      tools: config.tools,
      callerKey: (caller) =>
        readPrivateKey(
          keyPaths({ directory: config.keysDirectory, owner: { kind: 'caller', name: caller } }).privateKey,
        ),
    });
    const session = `demo-${Date.now()}`;
    const caller = 'support-bot';
    const say = (text: string) => process.stdout.write(`${text}\n`);
    const show = (label: string, result: ToolResult) =>
      say(
        `\n${label}\n  -> ${JSON.stringify({ ok: result.ok, code: result.code, effect: result.effect, message: result.message, ...(result.replayed ? { replayed: true } : {}) })}`,
      );
    const propose = (tool: string, args: string) => client.call({ session, caller, tool, arguments: args });

    say('The user: "My order ORD-1001 arrived damaged. Can I get 25,90 back?"');
    const before = await orders.refundCount({ orderId: 'ORD-1001' });
    show('model: get_order {"order_id":"ORD-1001"}', await propose('get_order', '{"order_id":"ORD-1001"}'));

    const floatRefund = '{"order_id":"ORD-1001","amount_cents":25.90,"currency":"BRL","reason":"damaged"}';
    const invalid = await propose('refund_order', floatRefund);
    show(`model: refund_order ${floatRefund}`, invalid);
    if (invalid.code !== 'INVALID_ARGUMENTS')
      throw new Error(`expected INVALID_ARGUMENTS, got ${invalid.code}`);

    const refund = '{"order_id":"ORD-1001","amount_cents":2590,"currency":"BRL","reason":"damaged"}';
    const pending = await propose('refund_order', refund);
    show(`model (corrected by the hint): refund_order ${refund}`, pending);
    if (pending.code !== 'APPROVAL_PENDING')
      throw new Error(`expected APPROVAL_PENDING, got ${pending.code}`);
    say(`  preview for the approver: ${JSON.stringify(pending.data?.preview)}`);

    const approver = values['auto-approve-as'];
    if (approver) {
      const admin = new ApprovalAdmin({ client: temporal });
      const privateKey = readPrivateKey(
        keyPaths({ directory: config.keysDirectory, owner: { kind: 'approver', name: approver } }).privateKey,
      );
      const outcome = await admin.decide({
        callId: pending.callId,
        approver,
        privateKey,
        decision: 'approve',
        reason: 'damaged item, photo checked',
      });
      say(`\n${approver} approves (--auto-approve-as): ${JSON.stringify(outcome)}`);
      if (!outcome.accepted) throw new Error(`the approval was refused: ${outcome.code}`);
    } else {
      say(
        `\nWaiting for a human. In another terminal run:\n  npm run toolgate -- approvals approve ${pending.callId} --as alice`,
      );
    }
    const final = await client.result(pending.callId, { wait: true });
    if (!final) throw new Error('no result');
    show('the refund, once approved', final);
    if (!final.ok) return 1;

    const replay = await propose('refund_order', refund);
    show('model (retrying after a timeout): the same refund_order again', replay);
    const after = await orders.refundCount({ orderId: 'ORD-1001' });
    say(
      `\nrefunds applied on ORD-1001 by this demo: ${after - before} (the replay applied nothing: replayed=${replay.replayed === true})`,
    );
    if (after - before !== 1 || replay.replayed !== true)
      throw new Error('the story did not hold: expected exactly one refund and a replay');
    say(`\nEvery call is in the Temporal UI (search SessionId="${session}").`);
    return 0;
  } finally {
    await connection.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`demo failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
