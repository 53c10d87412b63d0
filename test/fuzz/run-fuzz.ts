// npm run fuzz -- --payloads N --seed S [--concurrency C]
//
// Starts its own Temporal dev server (loopback, in memory), a worker in this process and an orders
// service process (the tests' harness), runs the fuzz campaign, prints the report and stops all of
// it, also on an interrupt. Exits 1 when an invariant is broken, so it can gate a pipeline.
import { randomInt } from 'node:crypto';
import { resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import type { LogEntry } from '@temporalio/worker';
import { DefaultLogger } from '@temporalio/worker';
import type { DevServer } from 'toolgate/testing';
import { prepareNamespace, startDevServer } from 'toolgate/testing';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { formatFuzzReport, runFuzzCampaign } from './fuzz-campaign';

const projectRoot = resolve(__dirname, '..', '..');

const usage = `npm run fuzz -- [--payloads N] [--seed S] [--concurrency C]

Proposes N random and mutated tool calls (default 300) through the real client, drawn from seed S
(default: a random one, printed), C sessions at a time (default 8), against a dev server, a worker
and an orders service it starts and stops. Prints answers by code, backend requests seen against
those the answers account for, refunds applied, workflow task failures and client exceptions;
exits 1 if any invariant is broken.`;

interface Options {
  payloads: number;
  seed: number;
  concurrency: number;
}

function parseOptions(argv: readonly string[]): Options | 'help' {
  const options: Options = { payloads: 300, seed: randomInt(0, 2 ** 31), concurrency: 8 };
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index]!;
    if (argument === '--help' || argument === '-h') return 'help';
    const [flag, inline] = argument.split('=', 2) as [string, string | undefined];
    const name = ({ '--payloads': 'payloads', '--seed': 'seed', '--concurrency': 'concurrency' } as const)[
      flag as '--payloads' | '--seed' | '--concurrency'
    ];
    if (name === undefined) throw new Error(`unknown argument ${argument}\n\n${usage}`);
    const text = inline ?? argv[++index];
    const value = Number(text);
    const minimum = name === 'seed' ? -(2 ** 31) : 1;
    if (text === undefined || !Number.isSafeInteger(value) || value < minimum || value >= 2 ** 31) {
      throw new Error(
        `${flag} needs a whole number${name === 'seed' ? '' : ' of at least 1'}, got ${String(text)}`,
      );
    }
    options[name] = value;
  }
  return options;
}

function log(line: string): void {
  process.stderr.write(`[fuzz] ${line}\n`);
}

/** The worker's error log, counted by message: the test tools log on purpose, so a count reads better than stack traces. */
class WorkerErrorLog {
  private readonly byMessage = new Map<string, { count: number; first: string }>();
  readonly logger = new DefaultLogger('ERROR', (entry: LogEntry) => {
    const seen = this.byMessage.get(entry.message);
    if (seen) seen.count++;
    else this.byMessage.set(entry.message, { count: 1, first: firstLine(entry) });
  });

  summary(): string {
    if (this.byMessage.size === 0) return 'worker errors logged: none';
    const lines = [...this.byMessage.entries()].map(
      ([message, { count, first }]) => `  ${count} × ${message}${first ? ` (first: ${first})` : ''}`,
    );
    return ['worker errors logged, by message:', ...lines].join('\n');
  }
}

function firstLine(entry: LogEntry): string {
  const meta = entry.meta ?? {};
  const detail: unknown = meta.error ?? meta.issues ?? '';
  const text = typeof detail === 'string' ? detail : JSON.stringify(detail);
  return `${meta.tool !== undefined ? `${String(meta.tool)}: ` : ''}${text.split('\n')[0] ?? ''}`.slice(
    0,
    200,
  );
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  if (options === 'help') {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  log(`seed ${options.seed} (rerun with --seed ${options.seed}), ${options.payloads} payloads`);
  const aborted = new AbortController();
  const workerErrors = new WorkerErrorLog();
  let server: DevServer | undefined;
  let harness: ToolGateHarness | undefined;
  let stopping: Promise<void> | undefined;
  const stopAll = (): Promise<void> =>
    (stopping ??= (async () => {
      // Reverse order of start; a part that fails to stop does not keep the others running.
      await harness
        ?.stop()
        .catch((error: unknown) => log(`stopping the worker and orders service: ${String(error)}`));
      await server?.stop().catch((error: unknown) => log(`stopping the dev server: ${String(error)}`));
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (aborted.signal.aborted) process.exit(130); // a second interrupt: the children die with us
      log(`${signal}: stopping everything this run started (seed ${options.seed})`);
      aborted.abort();
      void stopAll().finally(() => process.exit(130));
    });
  }

  try {
    const started = Date.now();
    server = await startDevServer({ projectRoot, headless: true, log: (line) => log(`temporal: ${line}`) });
    const connection = await Connection.connect({ address: server.address });
    try {
      await prepareNamespace({ connection, namespace: server.namespace });
    } finally {
      await connection.close();
    }
    if (aborted.signal.aborted) return 130;
    log('starting the orders service and a worker');
    harness = await startHarness({ address: server.address, logger: workerErrors.logger });
    if (aborted.signal.aborted) return 130;
    log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s; proposing`);
    const report = await runFuzzCampaign({
      target: harness,
      payloads: options.payloads,
      seed: options.seed,
      concurrency: options.concurrency,
      log,
      signal: aborted.signal,
    });
    if (aborted.signal.aborted) return 130;
    process.stdout.write(`${formatFuzzReport(report)}\n\n${workerErrors.summary()}\n`);
    return report.violations.length === 0 ? 0 : 1;
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exitCode = 1;
  },
);
