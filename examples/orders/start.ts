// `npm start`: a Temporal dev server with its Web UI (state kept in .toolgate/), the orders service
// and a toolgate worker running the orders tools under the default policy. Ctrl-C stops all three.
import { relative, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import {
  defaultTaskQueue,
  generateKeyPairFiles,
  loadConfig,
  prepareNamespace,
  startToolGateWorker,
} from 'toolgate';
import { startDevServer } from 'toolgate/testing';
import { startOrdersProcess } from './service/orders-process';

const projectRoot = resolve(__dirname, '..', '..');
const log = (line: string): void => {
  process.stderr.write(`[start] ${line}\n`);
};

async function main(): Promise<void> {
  const temporalPort = Number(process.env.TEMPORAL_PORT ?? 7233);
  const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? 8233);
  const ordersPort = Number(process.env.ORDERS_PORT ?? 4100);
  const server = await startDevServer({
    projectRoot,
    port: temporalPort,
    uiPort,
    databaseFile: '.toolgate/temporal.sqlite',
    log,
  });
  const stops: (() => Promise<unknown>)[] = [() => server.stop()];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.reverse())
      await stop().catch((error: unknown) => log(`while stopping: ${String(error)}`));
  };
  try {
    const connection = await Connection.connect({ address: server.address });
    await prepareNamespace({ connection, namespace: server.namespace });
    await connection.close();

    const config = loadConfig({ path: resolve(projectRoot, 'toolgate.config.ts') });
    // TOOLGATE_POLICY swaps the policy file, e.g. for examples/orders/policy.unattended.json.
    const policyPath = process.env.TOOLGATE_POLICY ? resolve(process.env.TOOLGATE_POLICY) : config.policyPath;
    // Development keys: created on first run for every caller and approver the policy names, and the minter.
    const named = JSON.parse(readFileSync(policyPath, 'utf8')) as {
      callers?: Record<string, unknown>;
      approvers?: Record<string, unknown>;
    };
    const owners = [
      ...Object.keys(named.callers ?? {}).map((name) => ({ kind: 'caller' as const, name })),
      ...Object.keys(named.approvers ?? {}).map((name) => ({ kind: 'approver' as const, name })),
      { kind: 'minter' as const },
    ];
    for (const owner of owners) {
      const written = generateKeyPairFiles({ directory: config.keysDirectory, owner });
      if (written.created) log(`generated a development key: ${relative(projectRoot, written.privateKey)}`);
    }
    const minterKeys = generateKeyPairFiles({ directory: config.keysDirectory, owner: { kind: 'minter' } });

    const orders = await startOrdersProcess({
      // No fault switches and no reset: nobody who reaches the port may arm faults or wipe the data.
      testMode: false,
      port: ordersPort,
      databasePath: resolve(projectRoot, '.toolgate/orders.sqlite'),
      minterPublicKeyPath: minterKeys.publicKey,
    });
    stops.push(() => orders.stop());
    process.env.ORDERS_URL = orders.url;

    const started = await startToolGateWorker({
      config,
      target: { address: server.address, namespace: server.namespace, taskQueue: defaultTaskQueue },
      policyPath,
    });
    stops.push(() => started.stop());
    const { policy } = started;
    const address = server.address === '127.0.0.1:7233' ? '' : ` --address ${server.address}`;
    process.stdout.write(
      [
        '',
        'toolgate is running.',
        `  Temporal UI:     ${server.uiUrl ?? '(headless)'}  (every call is a workflow; search by ToolName, Caller, SessionId)`,
        `  Temporal server: ${server.address}, namespace ${server.namespace}, task queue ${defaultTaskQueue}`,
        `  orders service:  ${orders.url}`,
        `  policy:          ${relative(projectRoot, policyPath)} (${policy.version})`,
        `  audit store:     ${relative(projectRoot, config.auditPath)}`,
        '',
        'Try, in another terminal:',
        `  npm run toolgate -- call${address} --caller support-bot --tool get_order --args '{"order_id":"ORD-1001"}'`,
        `  npm run toolgate -- call${address} --caller support-bot --tool refund_order --args '{"order_id":"ORD-1001","amount_cents":25.9,"currency":"BRL","reason":"damaged"}'`,
        '',
        'Ctrl-C stops everything; the server state stays in .toolgate/.',
        '',
      ].join('\n'),
    );
    // The worker stops on SIGINT/SIGTERM by itself (the SDK's shutdown signals), then we stop the rest.
    await started.run();
  } finally {
    await stopAll();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`npm start failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
