// The orders example service as a container runs it: examples/orders/service/main.ts listens on
// 127.0.0.1 only, which no other container can reach; this entry listens on ORDERS_HOST (default every
// interface of the container). Run with tsx, which loads the service's TypeScript:
//
//   node --import tsx deploy/orders-service.mjs
//
// ORDERS_PORT (default 4100), ORDERS_DB (the SQLite file, created and seeded on first start) and
// ORDERS_MINTER_PUBLIC_KEY (the minter's .pub: every refund then needs a credential it signed) as in
// main.ts. Never the test routes: nobody who reaches the port may arm faults or wipe the data.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { readPublicKeyHex } from 'toolgate/backend';
import { startOrdersService } from '../examples/orders/service/orders-service.ts';

const host = process.env.ORDERS_HOST || '0.0.0.0';
const port = Number(process.env.ORDERS_PORT || 4100);
const databasePath = process.env.ORDERS_DB || '/var/lib/orders/orders.sqlite';
const minterKeyPath = process.env.ORDERS_MINTER_PUBLIC_KEY || undefined;
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write(
    `orders-service: ORDERS_PORT must be a port number, got "${process.env.ORDERS_PORT}"\n`,
  );
  process.exit(2);
}

mkdirSync(dirname(databasePath), { recursive: true });
const service = await startOrdersService({
  databasePath,
  host,
  port,
  testMode: false,
  ...(minterKeyPath ? { minterPublicKeyHex: readPublicKeyHex(minterKeyPath) } : {}),
});
process.stderr.write(
  minterKeyPath
    ? `orders-service: every refund needs a credential signed by the minter key in ${minterKeyPath}\n`
    : 'orders-service: credentials are NOT checked (no ORDERS_MINTER_PUBLIC_KEY): any refund request is accepted\n',
);
process.stdout.write(`orders-service listening on http://${host}:${service.port}\n`);

let stopping = false;
const stop = (signal) => {
  if (stopping) process.exit(1);
  stopping = true;
  process.stderr.write(`orders-service: ${signal} received, closing\n`);
  service.close().then(
    () => process.exit(0),
    (error) => {
      process.stderr.write(`orders-service: close failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
