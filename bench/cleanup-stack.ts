// How a run of the bench or of the chaos suite starts its parts so that whatever started can be
// stopped: each part registers its cleanup as it comes up, and one `stop()` undoes them all.

/** What a run's start registers its cleanups with, and what stops them. */
export interface CleanupStack {
  /** Registers a cleanup; one registered after `stop()` has ended runs at once. */
  track: (cleanup: () => unknown) => void;
  /** Runs the cleanups newest first, logging (not throwing) a failed one; safe to call more than once and concurrently. */
  stop: () => Promise<void>;
  /** Whether `stop()` has been called (it may still be running). */
  stopRequested: () => boolean;
}

/**
 * Runs `start` with a fresh cleanup stack. A failed start stops what had started before it throws;
 * `exposeStop` receives the stack's `stop` at once, so that an interrupt during the start can stop
 * what has started.
 */
export async function startWithCleanup<T>(input: {
  log: (line: string) => void;
  exposeStop?: ((stop: () => Promise<void>) => void) | undefined;
  start: (cleanup: CleanupStack) => Promise<T>;
}): Promise<T> {
  const { log } = input;
  const cleanups: (() => unknown)[] = [];
  let stopping: Promise<void> | undefined;
  let stopped = false;
  const runCleanup = async (cleanup: () => unknown): Promise<void> => {
    try {
      await cleanup();
    } catch (error) {
      log(`cleanup failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      // Reverse order; what finishes starting while this runs is picked up too.
      while (cleanups.length > 0) await runCleanup(cleanups.pop()!);
      stopped = true;
    })());
  // Something that finished starting after stop() ended is stopped at once.
  const track = (cleanup: () => unknown): void => {
    if (stopped) void runCleanup(cleanup);
    else cleanups.push(cleanup);
  };
  input.exposeStop?.(stop);
  try {
    return await input.start({ track, stop, stopRequested: () => stopping !== undefined });
  } catch (error) {
    await stop();
    throw error;
  }
}
