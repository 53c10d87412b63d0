// A worker process of the bench: the toolgate worker or the bare baseline's worker, alone in its
// process so that its resident memory is its own. The parent (bench-harness.ts, or the chaos suite,
// which SIGKILLs and restarts it) forks it, talks to it over IPC and stops it; it also stops by
// itself when the parent goes away.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createOrdersTools } from '../examples/orders/orders-implementations';
import { ordersContracts } from '../examples/orders/orders-contracts';
import { resolveConfig, startToolGateWorker } from 'toolgate';
import { prebuildWorkflowBundle } from 'toolgate/testing';
import { createBareActivities } from './bare-activities';
import type { BenchWorkerConfig, ChildMessage, ParentMessage } from './worker-protocol';
import { benchWorkerConfigVariable, rssSampleIntervalMs } from './worker-protocol';

const projectRoot = resolve(__dirname, '..');
const shutdownGraceMs = 15_000;

async function main(): Promise<void> {
  const config = JSON.parse(process.env[benchWorkerConfigVariable] ?? 'null') as BenchWorkerConfig | null;
  if (!config || !process.send) throw new Error('bench-worker.ts is started by the bench, not by hand');
  const send = (message: ChildMessage): void => {
    if (process.connected) process.send?.(message);
  };
  // Rejections close runs as failed, which the SDK logs at WARN for every one: keep the output readable.
  Runtime.install({ logger: new DefaultLogger('ERROR') });

  const closers: (() => unknown)[] = [];
  const connection = await NativeConnection.connect({ address: config.address });
  closers.push(() => connection.close());
  let worker: Worker;
  try {
    worker = await createWorker(config, connection, closers);
  } catch (error) {
    for (const close of closers.reverse()) await close();
    throw error;
  }
  const running = worker.run();

  // Since the last mark: peak resident memory (sampled on a timer), CPU time, event-loop delay.
  let peakBytes = process.memoryUsage.rss();
  let samples = 0;
  let cpuAtMark = process.cpuUsage();
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const sampler = setInterval(() => {
    peakBytes = Math.max(peakBytes, process.memoryUsage.rss());
    samples++;
  }, rssSampleIntervalMs);

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    // A worker that cannot drain (its server gone) must not keep the process alive.
    setTimeout(() => process.exit(1), shutdownGraceMs).unref();
    if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'stop') return stop();
    const currentBytes = process.memoryUsage.rss();
    peakBytes = Math.max(peakBytes, currentBytes);
    const cpu = process.cpuUsage(cpuAtMark);
    send({
      type: 'usage',
      id: message.id,
      usage: {
        currentBytes,
        peakBytes,
        samples,
        cpuMicros: cpu.user + cpu.system,
        loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
        loopDelayMaxMs: loopDelay.max / 1e6,
      },
    });
    if (message.type === 'mark') {
      peakBytes = currentBytes;
      samples = 0;
      cpuAtMark = process.cpuUsage();
      loopDelay.reset();
    }
  });
  // The parent went away (ended, killed): nobody will ever tell us to stop.
  process.on('disconnect', stop);
  send({ type: 'ready' });

  try {
    await running;
  } finally {
    clearInterval(sampler);
    loopDelay.disable();
    for (const close of closers.reverse()) await close();
    if (process.connected) process.disconnect();
  }
}

async function createWorker(
  config: BenchWorkerConfig,
  connection: NativeConnection,
  closers: (() => unknown)[],
): Promise<Worker> {
  switch (config.kind) {
    case 'bare':
      return Worker.create({
        connection,
        taskQueue: config.taskQueue,
        // Bundled in a child process with toolgate's own bundler options, as toolgate's bundle is.
        workflowBundle: prebuildWorkflowBundle({
          workflowsPath: join(__dirname, 'bare-workflows.ts'),
          outFile: join(mkdtempSync(join(tmpdir(), 'bench-bare-')), 'workflows.js'),
        }),
        activities: createBareActivities({
          ordersUrl: config.ordersUrl,
          ...(config.minterPrivateKeyPath !== undefined
            ? { minterPrivateKeyPath: config.minterPrivateKeyPath }
            : {}),
        }),
      });
    case 'toolgate': {
      // Written as a user's deployment would be: a config with the policy in a file, started by the
      // one worker assembly the CLI and `npm start` use.
      const policyPath = join(dirname(config.auditPath), 'bench-policy.json');
      writeFileSync(policyPath, JSON.stringify(config.policy));
      const started = await startToolGateWorker({
        config: resolveConfig({
          source: join(projectRoot, 'bench', 'bench-worker.ts'),
          config: {
            tools: ordersContracts,
            policyPath,
            keysDirectory: config.keysDirectory,
            auditPath: config.auditPath,
            implementations: () => createOrdersTools({ ordersUrl: config.ordersUrl }),
          },
        }),
        target: { taskQueue: config.taskQueue },
        connection,
        ...(config.workflowBundlePath !== undefined
          ? { workflowBundle: { codePath: config.workflowBundlePath } }
          : {}),
      });
      closers.push(() => started.audit.close());
      return started.worker;
    }
  }
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  if (process.connected) process.send?.({ type: 'failed', message } satisfies ChildMessage);
  process.stderr.write(`${message}\n`);
  process.exitCode = 1;
  if (process.connected) process.disconnect();
});
