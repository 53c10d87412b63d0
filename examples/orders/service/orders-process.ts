import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { createOrdersApiClient } from '../orders-api-client';
import type { OrdersApiClient } from '../orders-api-client';

/** A running orders service process with its own temporary database; `stop()` always leaves no process and no files behind. */
export type OrdersProcess = {
  url: string;
  api: OrdersApiClient;
  /** SIGTERM, then SIGKILL after 5 s; resolves with how the process ended. Safe to call twice. */
  stop(): Promise<{ exitCode: number | null; signal: NodeJS.Signals | null }>;
};

const PROJECT_ROOT = resolve(__dirname, '..', '..', '..');
const MAIN_PATH = join(PROJECT_ROOT, 'examples', 'orders', 'service', 'main.ts');
const LISTENING_LINE = /^orders-service listening on (http:\/\/127\.0\.0\.1:\d+)$/;

/** Spawns the real orders service (`--port 0`, a fresh database in a temp dir) and resolves once it prints its listening line. */
export async function startOrdersProcess({
  testMode = true,
  startTimeoutMs = 30_000,
  databasePath,
  port = 0,
  minterPublicKeyPath,
}: {
  /**
   * `--test-mode`: serve the unauthenticated `POST /faults` and `POST /admin/reset` (default true, since
   * tests start the service this way; a service for people to use passes false).
   */
  testMode?: boolean;
  startTimeoutMs?: number;
  /** Keep the data in this file (it survives a restart); a fresh temp file, removed by stop(), when absent. */
  databasePath?: string;
  port?: number;
  /** The minter's public key file: every refund then needs a credential it signed. Unchecked when absent. */
  minterPublicKeyPath?: string;
} = {}): Promise<OrdersProcess> {
  const directory = databasePath ? undefined : mkdtempSync(join(tmpdir(), 'toolgate-orders-'));
  const database = databasePath ?? join(directory!, 'orders.sqlite');
  // The source condition resolves `toolgate/backend` to src/, as in every process this repository runs.
  const args = [
    '--conditions=toolgate-source',
    '--import',
    'tsx',
    MAIN_PATH,
    '--port',
    String(port),
    '--db',
    database,
  ];
  if (testMode) args.push('--test-mode');
  // The child exits when our end of its stdin closes, so it never outlives us, even on SIGKILL.
  args.push('--exit-with-parent');
  // Resolved here: the child runs in the project root, not in the caller's working directory.
  if (minterPublicKeyPath !== undefined) args.push('--minter-public-key', resolve(minterPublicKeyPath));
  // Whether credentials are checked is decided by the argument alone, never by an inherited variable.
  const { ORDERS_MINTER_PUBLIC_KEY: _inherited, ...env } = process.env;
  // `node --import tsx` (not the tsx binary) so the pid we signal is the service itself, not a wrapper.
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });

  // If the test process dies without calling stop(), do not leave the service running.
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    // Keep the tail only: enough to explain a failed start.
    stderr = (stderr + chunk).slice(-8000);
  });

  const exited = new Promise<{
    exitCode: number | null;
    signal: NodeJS.Signals | null;
  }>((resolveExit) => {
    child.once('exit', (exitCode, signal) => resolveExit({ exitCode, signal }));
  });

  let stopping: Promise<{ exitCode: number | null; signal: NodeJS.Signals | null }> | undefined;
  const stop = (): Promise<{
    exitCode: number | null;
    signal: NodeJS.Signals | null;
  }> => {
    stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const forceTimer = setTimeout(() => child.kill('SIGKILL'), 5000);
        const result = await exited;
        clearTimeout(forceTimer);
        finish();
        return result;
      }
      const result = await exited;
      finish();
      return result;
    })();
    return stopping;
  };
  const finish = (): void => {
    process.removeListener('exit', killOnExit);
    if (directory) rmSync(directory, { recursive: true, force: true });
  };

  const lines = createInterface({ input: child.stdout });
  try {
    const url = await new Promise<string>((resolveUrl, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `orders service did not print its listening line within ${startTimeoutMs} ms; stderr:\n${stderr}`,
            ),
          ),
        startTimeoutMs,
      );
      lines.on('line', (line) => {
        const match = LISTENING_LINE.exec(line.trim());
        if (match?.[1]) {
          clearTimeout(timer);
          resolveUrl(match[1]);
        }
      });
      void exited.then(({ exitCode, signal }) => {
        clearTimeout(timer);
        reject(
          new Error(
            `orders service exited before listening (code ${exitCode}, signal ${signal}); stderr:\n${stderr}`,
          ),
        );
      });
    });
    return { url, api: createOrdersApiClient({ baseUrl: url }), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
