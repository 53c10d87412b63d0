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
    }
  | { kind: 'bare'; address: string; taskQueue: string; ordersUrl: string };

/** Messages from the parent. `rss-mark` starts a new peak window; `rss-read` reads it. */
export type ParentMessage = { type: 'stop' } | { type: 'rss-mark' | 'rss-read'; id: number };

/** Messages to the parent. */
export type ChildMessage =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'rss'; id: number; currentBytes: number; peakBytes: number; samples: number };

/** The environment variable that carries the config. */
export const benchWorkerConfigVariable = 'TOOLGATE_BENCH_WORKER';
/** How often the resident set size is sampled. */
export const rssSampleIntervalMs = 100;
