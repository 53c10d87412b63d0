import { join } from 'node:path';
import { runCli } from 'toolgate';
import { temporalAddress } from './temporal';
import type { ToolGateHarness } from './toolgate-harness';

/** What one CLI run printed, and its exit code. */
export interface CliRun {
  code: number;
  out: string;
  error: string;
}

/** Runs the CLI in-process with exactly `argv`, capturing what it prints. */
export async function runCliCapturing(argv: readonly string[]): Promise<CliRun> {
  let out = '';
  let error = '';
  const code = await runCli([...argv], {
    out: (text) => (out += `${text}\n`),
    error: (text) => (error += `${text}\n`),
  });
  return { code, out, error };
}

/**
 * Points the test config (test/support/test-toolgate.config.ts) at a harness's policy, keys and an
 * audit store (the worker's), and returns a runner that adds `--config`, `--address` and the harness's task queue.
 */
export function harnessCli(harness: () => ToolGateHarness): {
  useHarnessFiles(): void;
  run(...argv: string[]): Promise<CliRun>;
} {
  return {
    useHarnessFiles: () => {
      process.env.TOOLGATE_TEST_POLICY = harness().policyPath;
      process.env.TOOLGATE_TEST_KEYS = harness().keysDirectory;
      // The worker's own store, as one deployment's CLI and workers share one.
      process.env.TOOLGATE_TEST_AUDIT = harness().auditPath;
    },
    run: (...argv) =>
      runCliCapturing([
        ...argv,
        '--config',
        join(__dirname, 'test-toolgate.config.ts'),
        '--address',
        temporalAddress(),
        '--task-queue',
        harness().taskQueue,
      ]),
  };
}
