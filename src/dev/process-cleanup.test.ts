import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';

// A process that started a detached process group (as the cluster test starts the Temporal server and
// its workers) and is then ended by a signal: the group must not outlive it.
const parentScript = (modulePath: string) => `
const { spawn } = require('node:child_process');
const { cleanUpOnProcessEnd } = require(${JSON.stringify(modulePath)});
const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
cleanUpOnProcessEnd(() => process.kill(-child.pid, 'SIGKILL'));
process.stdout.write(String(child.pid) + '\\n');
setInterval(() => {}, 1000);
`;

/** Running: it exists and is not a zombie (a killed child whose parent exited waits for init to reap it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('cleanUpOnProcessEnd', () => {
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    it(`kills a detached process group when its parent is ended by ${signal}`, async () => {
      const parent = spawn(
        process.execPath,
        ['--import', 'tsx', '-e', parentScript(join(__dirname, 'process-cleanup.ts'))],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const pid = await new Promise<number>((resolvePid) =>
        parent.stdout.once('data', (data) => resolvePid(Number(String(data).trim()))),
      );
      expect(alive(pid)).toBe(true);
      const exited = new Promise<number | null>((resolveExit) =>
        parent.once('exit', (code) => resolveExit(code)),
      );
      parent.kill(signal);
      expect(await exited).toBeGreaterThan(128);
      await delay(200);
      const orphaned = alive(pid);
      if (orphaned) process.kill(-pid, 'SIGKILL');
      expect(orphaned).toBe(false);
    });
  }
});
