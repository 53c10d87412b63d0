import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { diffSnapshots, parseContractSnapshot, renderContractDiff, snapshotContracts } from 'toolgate';
import { describe, expect, it } from 'vitest';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { runCliCapturing } from '../support/cli-runner';

// The orders example's contracts are committed as a snapshot next to its config (toolgate.config.ts).
// A change to a contract without a new snapshot fails here, with the diff: after a change you meant,
// run `npm run toolgate -- contract snapshot` and commit toolgate.contracts.json with it.
const repository = join(__dirname, '..', '..');

describe("the orders example's committed contract snapshot", () => {
  it('matches the orders tools as they are', () => {
    const committed = parseContractSnapshot(
      readFileSync(join(repository, 'toolgate.contracts.json'), 'utf8'),
    );
    if (!committed.ok) throw new Error(`toolgate.contracts.json: ${committed.message}`);
    const diff = diffSnapshots(committed.snapshot, snapshotContracts({ tools: ordersContracts }));
    expect(renderContractDiff(diff)).toBe('no changes: the tools match the snapshot');
  });

  it('passes `toolgate contract check` with the repository config, as CI runs it', async () => {
    const run = await runCliCapturing([
      'contract',
      'check',
      '--config',
      join(repository, 'toolgate.config.ts'),
    ]);
    expect(run.code, run.out + run.error).toBe(0);
  });
});
