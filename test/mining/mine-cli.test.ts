import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCliCapturing } from '../support/cli-runner';

// `toolgate mine` checks its arguments before it loads a config, reads a store or writes a file:
// these runs have no config, no store and no server, and must not need one.

let directory: string;
let out: string;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'toolgate-mine-cli-'));
  out = join(directory, 'mined.json');
});
afterEach(() => rmSync(directory, { recursive: true, force: true }));

const mine = (...argv: string[]) =>
  runCliCapturing(['mine', ...argv, '--out', out, '--config', 'no-such-config.ts']);

describe('toolgate mine refuses a window it cannot read', () => {
  it('refuses a --since that is not a date with INVALID_DATE, exit 2, and writes no file', async () => {
    const run = await mine('--since', 'last tuesday');

    expect(run.code).toBe(2);
    expect(run.error).toContain(
      'INVALID_DATE: --since "last tuesday" is not a date; write 2025-01-31 (midnight UTC)',
    );
    expect(run.out).toBe('');
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a calendar date that does not exist, and a time without a zone', async () => {
    const impossible = await mine('--since', '2025-02-30');
    expect(impossible.code).toBe(2);
    expect(impossible.error).toContain('INVALID_DATE: --since "2025-02-30" is not a calendar date');

    const zoneless = await mine('--since', '2025-01-31T14:00');
    expect(zoneless.code).toBe(2);
    expect(zoneless.error).toContain('INVALID_DATE: --since "2025-01-31T14:00" has no time zone');
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a window that ends before it starts, and a limit that is not a count', async () => {
    const backwards = await mine('--since', '2025-02-01', '--until', '2025-01-31T23:00:00Z');
    expect(backwards.code).toBe(2);
    expect(backwards.error).toContain(
      'INVALID_DATE: --since (2025-02-01T00:00:00.000Z) must be before --until (2025-01-31T23:00:00.000Z)',
    );

    const limit = await mine('--since', '7d', '--limit', '0');
    expect(limit.code).toBe(2);
    expect(limit.error).toContain('INVALID_LIMIT: --limit takes a whole number above 0 (got "0")');
    expect(existsSync(out)).toBe(false);
  });

  it('asks for --since', async () => {
    const run = await runCliCapturing(['mine']);
    expect(run.code).toBe(2);
    expect(run.error).toContain("required option '--since <date>' not specified");
  });
});

describe('toolgate mine refuses a case file it could not write, before mining', () => {
  it('refuses --out in a folder that does not exist with OUTPUT_UNWRITABLE, exit 2', async () => {
    const missing = join(directory, 'no-such-folder', 'mined.json');
    const run = await runCliCapturing([
      'mine',
      '--since',
      '7d',
      '--out',
      missing,
      '--config',
      'no-such-config.ts',
    ]);
    expect(run.code).toBe(2);
    expect(run.error).toContain(`OUTPUT_UNWRITABLE: --out: no folder ${join(directory, 'no-such-folder')}`);
    expect(run.error).toContain('create it first');
  });

  it('refuses --out naming a folder, even with --force', async () => {
    const run = await runCliCapturing([
      'mine',
      '--since',
      '7d',
      '--out',
      directory,
      '--force',
      '--config',
      'no-such-config.ts',
    ]);
    expect(run.code).toBe(2);
    expect(run.error).toContain(
      `OUTPUT_UNWRITABLE: --out: ${directory} is a folder; name the case file to write`,
    );
  });
});
