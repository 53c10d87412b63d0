// Processes a test or a dev command starts in process groups of their own (`detached`) do not die
// with it: Node emits no 'exit' when it is ended by a signal (a test pool's teardown, a cancelled CI
// job, Ctrl-C, which never reaches a detached group). This runs each registered cleanup on 'exit' and
// on SIGINT, SIGTERM and SIGHUP, then ends the process as the signal would have.
import { constants } from 'node:os';

const cleanups = new Set<() => void>();
let installed = false;

function runCleanups(): void {
  for (const cleanup of [...cleanups]) {
    try {
      cleanup();
    } catch {
      // already gone: nothing more to do for it
    }
  }
  cleanups.clear();
}

/**
 * Runs `cleanup` (synchronous: a kill) when this process exits or is ended by SIGINT, SIGTERM or
 * SIGHUP. Returns the function that unregisters it, for when the process it kills is already stopped.
 */
export function cleanUpOnProcessEnd(cleanup: () => void): () => void {
  cleanups.add(cleanup);
  if (!installed) {
    installed = true;
    process.on('exit', runCleanups);
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(signal, () => {
        runCleanups();
        process.exit(128 + constants.signals[signal]);
      });
    }
  }
  return () => cleanups.delete(cleanup);
}
