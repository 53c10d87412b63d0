// Entry point of the orders service process. Configuration is read here and nowhere else.
//
//   tsx examples/orders/service/main.ts [--port N] [--db PATH] [--test-mode] [--minter-public-key PATH]
//
// Prints exactly one line to stdout once listening, `orders-service listening on http://127.0.0.1:<port>`,
// so a parent process can start it with --port 0 and parse the port it got.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { readPublicKeyHex } from 'toolgate/backend';
import { startOrdersService } from './orders-service';

const USAGE = [
  'usage: main.ts [--port N] [--db PATH] [--test-mode] [--minter-public-key PATH]',
  '  --port N                    port on 127.0.0.1 (0 = any free port); default $ORDERS_PORT or 4100',
  '  --db PATH                   SQLite file (created and seeded on first open); default $ORDERS_DB or .toolgate/orders.sqlite',
  '  --test-mode                 serve POST /faults (per-key fault switches) and POST /admin/reset; tests only:',
  '                              neither is authenticated, so anyone who reaches the port could use them',
  '  --exit-with-parent          exit when stdin closes (set by a parent process that spawns the service)',
  "  --minter-public-key PATH    the credential minter's public key (.pub, PEM); every refund then needs a credential",
  '                              it signed for exactly that refund; default $ORDERS_MINTER_PUBLIC_KEY, else unchecked',
].join('\n');

function fail(message: string): never {
  process.stderr.write(`orders-service: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function readConfiguration(): {
  port: number;
  databasePath: string;
  /** Serve the unauthenticated test routes, POST /faults and POST /admin/reset. */
  testMode: boolean;
  /** Exit when stdin closes (the parent that spawned us died). */
  exitWithParent: boolean;
  /** Where the minter key came from, and the key; absent when credentials are not checked. */
  minter?: { path: string; publicKeyHex: string };
} {
  let values: {
    port?: string;
    db?: string;
    'test-mode'?: boolean;
    'exit-with-parent'?: boolean;
    'minter-public-key'?: string;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        db: { type: 'string' },
        'test-mode': { type: 'boolean' },
        'exit-with-parent': { type: 'boolean' },
        'minter-public-key': { type: 'string' },
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
  // An empty variable counts as unset (the shell habit); an empty flag is a mistake.
  const minterKeyPath = values['minter-public-key'] ?? (process.env.ORDERS_MINTER_PUBLIC_KEY || undefined);
  if (minterKeyPath === '') fail('--minter-public-key must not be empty');
  let minter: { path: string; publicKeyHex: string } | undefined;
  if (minterKeyPath !== undefined) {
    try {
      // A private key would load too (its public half is derived), but a backend must never hold it.
      if (readFileSync(minterKeyPath, 'utf8').includes('PRIVATE KEY')) {
        fail(
          `--minter-public-key ${minterKeyPath} is the minter's private key; give the service its public key ` +
            '(the .pub file next to it) and keep the private key with the minter only',
        );
      }
      minter = { path: minterKeyPath, publicKeyHex: readPublicKeyHex(minterKeyPath) };
    } catch (error) {
      fail(
        `--minter-public-key ${minterKeyPath}: cannot read an Ed25519 public key ` +
          `(${error instanceof Error ? error.message : String(error)}); pass the minter's .pub file (PEM, SPKI), ` +
          'not its private .key',
      );
    }
  }
  return {
    port,
    databasePath,
    testMode: values['test-mode'] ?? false,
    exitWithParent: values['exit-with-parent'] ?? false,
    minter,
  };
}

async function main(): Promise<void> {
  const { port, databasePath, testMode, exitWithParent, minter } = readConfiguration();
  if (databasePath !== ':memory:') mkdirSync(dirname(databasePath), { recursive: true });
  const service = await startOrdersService({
    databasePath,
    port,
    testMode,
    minterPublicKeyHex: minter?.publicKeyHex,
  });
  // stderr, so stdout keeps its one listening line.
  process.stderr.write(
    minter
      ? `orders-service: every refund needs a credential signed by the minter key in ${minter.path}\n`
      : 'orders-service: credentials are NOT checked (no --minter-public-key): any refund request is accepted\n',
  );
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
  if (exitWithParent) {
    // Started by a parent that holds our stdin: when it dies, however it dies, the pipe closes and we go too.
    process.stdin.on('close', () => stop('SIGTERM'));
    process.stdin.resume();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `orders-service: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
