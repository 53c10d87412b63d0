// What the bench and its worker processes (bench-worker.ts) say to each other.

/** What the parent tells a worker process to run (passed in the environment as JSON). */
export type BenchWorkerConfig =
  | {
      kind: 'toolgate';
      address: string;
      taskQueue: string;
      ordersUrl: string;
      keysDirectory: string;
      /** The policy file's content; checked here as a worker checks its own file. */
      policy: unknown;
      minterPrivateKeyPath: string;
      auditPath: string;
      /** A workflow bundle built once by the parent, so that a restarted worker does not bundle again. */
      workflowBundlePath?: string;
    }
  | {
      kind: 'bare';
      address: string;
      taskQueue: string;
      ordersUrl: string;
      /** Signs the bare refunds' credentials (the orders service asks for one). */
      minterPrivateKeyPath?: string;
    };

/** Messages from the parent. `mark` answers the usage so far and starts a new window; `read` only answers. */
export type ParentMessage = { type: 'stop' } | { type: 'mark' | 'read'; id: number };

/** A worker process's usage since the last mark. */
export interface WorkerUsage {
  /** Resident memory now. */
  currentBytes: number;
  /** The highest resident memory sampled (every {@link rssSampleIntervalMs}). */
  peakBytes: number;
  samples: number;
  /** CPU time of the whole process (every thread), user + system. */
  cpuMicros: number;
  /** Delay of the main thread's event loop. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

/** Messages to the parent. */
export type ChildMessage =
  { type: 'ready' } | { type: 'failed'; message: string } | { type: 'usage'; id: number; usage: WorkerUsage };

/** The environment variable that carries the config. */
export const benchWorkerConfigVariable = 'TOOLGATE_BENCH_WORKER';
/** How often the resident set size is sampled. */
export const rssSampleIntervalMs = 100;
