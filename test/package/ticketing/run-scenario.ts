// The ticketing domain end to end, through toolgate's public entries only: a governed read, two
// rejected calls, and a write that waits for a person, is approved and applied once. Prints one line,
// `TICKETING_SUMMARY <json>`, and stops everything it started.
//
// Temporal: TEMPORAL_ADDRESS names a running server; without it, a dev server is started through
// toolgate/testing (the Temporal CLI from TEMPORAL_CLI, PATH or .toolgate/bin) and stopped at the end.
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import {
  generateKeyPairFiles,
  keyPaths,
  loadConfig,
  readPrivateKey,
  startToolGateWorker,
  ToolGateClient,
} from 'toolgate';
import { ApprovalAdmin } from 'toolgate/admin';
import type { KeyOwner, ToolResult } from 'toolgate';
import { prepareNamespace, startDevServer } from 'toolgate/testing';
import { startTicketBackend } from './ticket-backend.js';
import { ticketContracts } from './tickets-contracts.js';

const projectRoot = dirname(fileURLToPath(import.meta.url));
const log = (line: string): void => {
  process.stderr.write(`[ticketing] ${line}\n`);
};

/** What the scenario started, stopped in reverse order at the end, whatever failed. */
const stops: (() => Promise<unknown>)[] = [];

async function main(): Promise<Record<string, unknown>> {
  // Rejections close their runs as failed, which the SDK logs at WARN: keep the output to errors.
  Runtime.install({ logger: new DefaultLogger('ERROR') });

  let address = process.env.TEMPORAL_ADDRESS;
  const namespace = 'default';
  let startedServer = false;
  if (!address) {
    const server = await startDevServer({ projectRoot, headless: true, namespace, log });
    stops.push(() => server.stop());
    address = server.address;
    startedServer = true;
  }
  const connection = await Connection.connect({ address });
  stops.push(() => connection.close());
  await prepareNamespace({ connection, namespace });

  const config = loadConfig({ path: join(projectRoot, 'toolgate.config.js') });
  const owners: KeyOwner[] = [
    { kind: 'caller', name: 'helpdesk-bot' },
    { kind: 'approver', name: 'carol' },
    { kind: 'minter' },
  ];
  for (const owner of owners) generateKeyPairFiles({ directory: config.keysDirectory, owner });
  const keyOf = (owner: KeyOwner) =>
    readPrivateKey(keyPaths({ directory: config.keysDirectory, owner }).privateKey);

  const backend = await startTicketBackend({
    minterPublicKeyPath: keyPaths({ directory: config.keysDirectory, owner: { kind: 'minter' } }).publicKey,
  });
  stops.push(() => backend.stop());
  // The config's implementations read it when the worker builds them.
  process.env.TICKETS_URL = backend.url;

  const taskQueue = `ticketing-${randomUUID()}`;
  const worker = await startToolGateWorker({ config, target: { address, namespace, taskQueue } });
  const running = worker.run();
  stops.push(async () => {
    await worker.stop();
    await running;
  });

  const temporal = new Client({ connection, namespace });
  const helpdeskKey = keyOf({ kind: 'caller', name: 'helpdesk-bot' });
  const toolgate = new ToolGateClient({
    client: temporal,
    tools: ticketContracts,
    taskQueue,
    policy: worker.policy,
    callerKey: (caller) => (caller === 'helpdesk-bot' ? helpdeskKey : undefined),
  });
  const admin = new ApprovalAdmin({ client: temporal, audit: worker.audit, taskQueue });
  const session = toolgate.session({ id: `conversation-${randomUUID()}`, caller: 'helpdesk-bot' });
  const definitions = toolgate.definitions('helpdesk-bot').map((definition) => definition.name);

  // 1. A governed read.
  const read = await session.call({ tool: 'get_ticket', arguments: { ticket_id: 'TCK-1001' } });

  // 2. Rejected: the model's arguments break the nested object and the array (raw JSON, as a model sends it).
  const invalid = await session.call({
    tool: 'update_ticket',
    arguments: JSON.stringify({
      ticket_id: 'TCK-1001',
      changes: { priority: 'critical', assignee: 'bob' },
      tags: ['billing', 'Needs Review'],
    }),
  });
  // ... and a valid update of a closed ticket, refused by the business check with the domain's code.
  const closedTicket = await session.call({
    tool: 'update_ticket',
    arguments: { ticket_id: 'TCK-1002', changes: { priority: 'high' }, tags: ['auth'] },
  });

  // 3. Closing a ticket is irreversible: it waits for a person, who approves it with their own key.
  const closeArguments = { ticket_id: 'TCK-1001', changes: { status: 'closed' }, tags: ['billing', 'vat'] };
  const pending = await session.call({ tool: 'update_ticket', arguments: closeArguments });
  const appliedWhilePending = backend.stats().appliedUpdates;
  const listed = await waitForPending(admin, pending.callId);
  const decision = await admin.decide({
    callId: pending.callId,
    approver: 'carol',
    privateKey: keyOf({ kind: 'approver', name: 'carol' }),
    decision: 'approve',
    reason: 'the customer confirmed the fix',
  });
  const final = await toolgate.result(pending.callId, { wait: true });
  // Proposed again (a retry of the model's, say): the recorded result comes back; nothing runs twice.
  const again = await session.call({ tool: 'update_ticket', arguments: closeArguments });
  const audit = await worker.audit.recordsOf(pending.callId);

  return {
    startedServer,
    definitions,
    read: brief(read),
    invalid: brief(invalid),
    closedTicket: brief(closedTicket),
    pending: brief(pending),
    appliedWhilePending,
    listedPending: listed
      ? { tool: listed.tool, riskLevel: listed.riskLevel, preview: listed.preview }
      : null,
    decision: decision.accepted ? { accepted: true } : { accepted: false, code: decision.code },
    final: final ? brief(final) : null,
    again: brief(again),
    backend: backend.stats(),
    ticket: backend.ticket('TCK-1001'),
    audit: audit.map((record) => ({
      code: record.code,
      riskLevel: record.riskLevel,
      approvers: (record.decisions ?? []).map((decided) => decided.approver),
    })),
  };
}

/** The parts of a result the test asserts on. */
function brief(result: ToolResult) {
  return {
    ok: result.ok,
    code: result.code,
    effect: result.effect,
    message: result.message,
    callId: result.callId,
    ...(result.data !== undefined ? { data: result.data } : {}),
    ...(result.replayed ? { replayed: true } : {}),
  };
}

/** The approvers' list shows a call once the server's visibility has indexed it (a moment, on a dev server). */
async function waitForPending(admin: ApprovalAdmin, callId: string) {
  for (let attempt = 0; attempt < 50; attempt++) {
    const found = (await admin.pending()).find((approval) => approval.callId === callId);
    if (found) return found;
    await delay(200);
  }
  return undefined;
}

let exitCode = 0;
try {
  const summary = await main();
  process.stdout.write(`TICKETING_SUMMARY ${JSON.stringify(summary)}\n`);
} catch (error) {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  exitCode = 1;
} finally {
  for (const stop of stops.reverse()) {
    await stop().catch((error: unknown) => log(`while stopping: ${String(error)}`));
  }
}
process.exitCode = exitCode;
