// The worker chaos: keeps one toolgate worker process running, and SIGKILLs it at a random moment
// 1-5 s after each start (counted from when it polls, so that every incarnation does some work),
// then starts it again at once. A start that fails (the Temporal server is down) is tried again.
import { setTimeout as delay } from 'node:timers/promises';
import type { WorkerChild } from '../../bench/bench-harness';
import { startWorkerChild } from '../../bench/bench-harness';
import type { BenchWorkerConfig } from '../../bench/worker-protocol';
import type { Random } from './chaos-plan';

const failedStartPauseMs = 1_000;

/** What the worker chaos has done so far. */
export interface WorkerChaosCounts {
  starts: number;
  kills: number;
  failedStarts: number;
  /** Exits nobody asked for (a crash of the worker itself): each is logged. */
  unexpectedExits: number;
  /** Time from fork to polling, summed over the successful starts. */
  startMs: number;
}

/** A running worker chaos; `stop()` ends the loop and the worker process, and resolves once it has exited. */
export interface WorkerChaos {
  counts(): WorkerChaosCounts;
  stop(): Promise<void>;
}

/** Starts the loop; the first worker is started in the background (see `counts().starts`). */
export function startWorkerChaos(input: {
  config: BenchWorkerConfig;
  random: Random;
  /** Bounds of the time a worker runs before it is killed. */
  killAfterMs?: { min: number; max: number };
  log: (line: string) => void;
}): WorkerChaos {
  const { log, random } = input;
  const killAfter = input.killAfterMs ?? { min: 1_000, max: 5_000 };
  const counts: WorkerChaosCounts = { starts: 0, kills: 0, failedStarts: 0, unexpectedExits: 0, startMs: 0 };
  let stopped = false;
  let current: WorkerChild | undefined;
  let requestStop: () => void = () => undefined;
  const stopRequested = new Promise<'stop'>((resolveStop) => {
    requestStop = () => resolveStop('stop');
  });
  /** Resolves with `value` after `milliseconds`, or with 'stop' as soon as a stop is requested. */
  const waitFor = async <T>(milliseconds: number, value: T): Promise<T | 'stop'> => {
    const timer = new AbortController();
    try {
      // Aborted only once the race is decided, so what it rejects with is never read.
      const elapsed = delay(milliseconds, value, { signal: timer.signal }).catch(() => 'stop' as const);
      return await Promise.race([elapsed, stopRequested]);
    } finally {
      timer.abort();
    }
  };

  const loop = (async () => {
    while (!stopped) {
      let worker: WorkerChild;
      const forkedAt = performance.now();
      try {
        worker = await startWorkerChild({
          config: input.config,
          // The worker's own lines only matter when something is wrong; its warnings are counted by kind.
          log: (line) => {
            if (!/ready \(pid/.test(line)) log(line);
          },
        });
      } catch (error) {
        counts.failedStarts++;
        if (counts.failedStarts <= 3 || counts.failedStarts % 10 === 0) {
          log(`worker start failed (${counts.failedStarts} so far): ${firstLine(error)}`);
        }
        await waitFor(failedStartPauseMs, 'retry');
        continue;
      }
      current = worker;
      counts.starts++;
      counts.startMs += performance.now() - forkedAt;
      if (stopped) break;
      const exited = worker.exited.then(() => 'exited' as const);
      const lifetimeMs = killAfter.min + random() * (killAfter.max - killAfter.min);
      const next = await Promise.race([exited, waitFor(lifetimeMs, 'kill' as const)]);
      if (next === 'stop') break;
      if (next === 'exited') {
        counts.unexpectedExits++;
        log(`the worker (pid ${String(worker.pid)}) exited by itself; starting another`);
        continue;
      }
      await worker.kill();
      counts.kills++;
    }
  })();

  return {
    counts: () => ({ ...counts }),
    stop: async () => {
      stopped = true;
      requestStop();
      // Whatever the loop is doing (starting, waiting), the worker of the moment is killed: nothing drains.
      const killing = current?.kill();
      await loop;
      await current?.kill();
      await killing;
    },
  };
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0]!.slice(0, 300);
}
