// Entry point of the orders service process. Configuration is read here and nowhere else.
//
//   tsx examples/orders/service/main.ts [--port N] [--db PATH] [--allow-reset]
//
// Prints exactly one line to stdout once listening, `orders-service listening on http://127.0.0.1:<port>`,
// so a parent process can start it with --port 0 and parse the port it got.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { startOrdersService } from './orders-service';

const USAGE = [
  'usage: main.ts [--port N] [--db PATH] [--allow-reset]',
  '  --port N        port on 127.0.0.1 (0 = any free port); default $ORDERS_PORT or 4100',
  '  --db PATH       SQLite file (created and seeded on first open); default $ORDERS_DB or .toolgate/orders.sqlite',
  '  --allow-reset   enable POST /admin/reset (tests only)',
].join('\n');

function fail(message: string): never {
  process.stderr.write(`orders-service: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function readConfiguration(): {
  port: number;
  databasePath: string;
  allowReset: boolean;
} {
  let values: {
    port?: string;
    db?: string;
    'allow-reset'?: boolean;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        db: { type: 'string' },
        'allow-reset': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const portText = values.port ?? process.env.ORDERS_PORT ?? '4100';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535)
    fail(`--port must be a whole number from 0 to 65535, got "${portText}"`);
  const databasePath = values.db ?? process.env.ORDERS_DB ?? '.toolgate/orders.sqlite';
  if (databasePath === '') fail('--db must not be empty');
  return { port, databasePath, allowReset: values['allow-reset'] ?? false };
}

async function main(): Promise<void> {
  const { port, databasePath, allowReset } = readConfiguration();
  if (databasePath !== ':memory:') mkdirSync(dirname(databasePath), { recursive: true });
  const service = await startOrdersService({ databasePath, port, allowReset });
  process.stdout.write(`orders-service listening on ${service.url}\n`);

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    // A second signal while closing means "now": do not wait for in-flight requests.
    if (stopping) process.exit(1);
    stopping = true;
    process.stderr.write(`orders-service: ${signal} received, closing\n`);
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`orders-service: close failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `orders-service: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
