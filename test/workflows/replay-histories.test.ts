import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { resolveTemporalConnection, toolGateWorkflowBundle } from 'toolgate';

const directory = join(__dirname, '..', 'histories');
const files = readdirSync(directory).filter((file) => file.endsWith('.history.bin'));

describe('recorded histories of representative calls', () => {
  it('cover the main outcomes', () => {
    const names = files.map((file) => file.split('--')[0]).sort();
    expect(names).toEqual(
      [
        'approver-keys',
        'controls',
        'grants',
        'read-ok',
        'refund-approval-expired',
        'refund-approved',
        'refund-approved-enrolled-key',
        'refund-business-rejection',
        'refund-cancelled',
        'refund-chain',
        'refund-contract-changed',
        'refund-denied',
        'refund-edited',
        'refund-granted',
        'refund-invalid-arguments',
        'refund-limit-counter',
        'refund-lost-response-then-unavailable',
        'refund-not-owned',
        'refund-ok',
        'refund-policy-limit',
        'refund-tool-disabled',
        'read-loop-detected',
        'unknown-tool',
      ].sort(),
    );
  });

  it('name no folder of the machine that recorded them: every stack trace is empty', () => {
    for (const file of files) {
      const bytes = readFileSync(join(directory, file));
      const text = bytes.toString('latin1');
      expect(text, file).not.toMatch(/\/(home|root|tmp|work|Users)\/|[A-Z]:\\/);
      const history = temporal.api.history.v1.History.decode(bytes);
      expect(JSON.stringify(history.toJSON()), file).not.toMatch(/"stackTrace":"[^"]/);
    }
  });

  it('replay deterministically with the current workflow code, so no running call breaks', async () => {
    const histories = files.map((file) => ({
      workflowId: file.replace('.history.bin', '').split('--')[1] ?? file,
      history: temporal.api.history.v1.History.decode(readFileSync(join(directory, file))),
    }));
    const failures: string[] = [];
    let replayed = 0;
    // With payload encryption configured (TOOLGATE_CODEC_KEYS), histories recorded encrypted replay
    // too; the recorded plaintext ones pass through the codec unchanged. The failure converter is
    // toolgate's, as workers load it (failures in either form, plaintext or encoded, decode alike).
    const { dataConverter } = resolveTemporalConnection({ env: process.env });
    for await (const result of Worker.runReplayHistories(
      {
        // The very bundle workers load: toolgate's workflows, with no user code in them.
        workflowBundle: toolGateWorkflowBundle(),
        dataConverter,
        // The workflows call the audit sinks; replay never runs them, but they must be registered.
        sinks: {
          audit: {
            decisionAttempt: { fn: () => undefined, callDuringReplay: false },
            admissionRefusal: { fn: () => undefined, callDuringReplay: false },
            registryEvent: { fn: () => undefined, callDuringReplay: false },
          },
        },
      },
      histories,
    )) {
      replayed++;
      if (result.error) failures.push(`${result.workflowId}: ${String(result.error)}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });
});
