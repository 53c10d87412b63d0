import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConsoleProcess, ConsoleProcessPlan } from '../../examples/orders/start';
import { startConsoleProcess } from '../../examples/orders/start';
import { approvalHelpers } from '../support/approval-helpers';
import { ConsoleVisitor, harnessConsolePlan } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// `npm start` runs the approvals console as a process of its own (examples/orders/start.ts): given
// the policy's public keys, the audit store and Temporal's address, not the keys folder, the config
// or the parent's environment; stopped with npm start, and on its own when npm start dies.

let harness: ToolGateHarness;
useHarness((started) => (harness = started));
const { appliedRefunds, proposeRefund } = approvalHelpers(() => harness);
const folders: string[] = [];

afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function plan(): ConsoleProcessPlan {
  const planned = harnessConsolePlan(harness);
  folders.push(planned.cwd);
  return planned;
}

/** True while a process with this id runs. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the approvals console in a process of its own', () => {
  it('is given public keys, the audit store and Temporal only, and relays an approval: one refund applied', async () => {
    const planned = plan();
    // Its environment is a handful of variables a Node program needs, none of npm start's.
    expect(
      Object.keys(planned.env).every((name) =>
        ['PATH', 'TMPDIR', 'TEMP', 'TMP', 'SYSTEMROOT', 'LANG', 'TZ'].includes(name),
      ),
    ).toBe(true);
    // No argument names the keys folder, the config, or a private key file.
    for (const argument of planned.args) {
      expect(argument).not.toContain(harness.keysDirectory);
      expect(argument).not.toMatch(/\.key$|toolgate\.config/);
    }
    expect(planned.args).toContain('--exit-with-parent');
    // Its folder holds its policy alone, every key in it a public half written inline.
    expect(readdirSync(planned.cwd)).toEqual(['console-policy.json']);
    const policy = JSON.parse(readFileSync(`${planned.cwd}/console-policy.json`, 'utf8')) as Record<
      string,
      Record<string, { publicKey: string }>
    >;
    for (const group of ['callers', 'approvers', 'operators']) {
      for (const entry of Object.values(policy[group] ?? {}))
        expect(entry.publicKey).toMatch(/^ed25519:[0-9a-f]{64}$/);
    }

    const lines: string[] = [];
    const approvals: ConsoleProcess = await startConsoleProcess({
      plan: planned,
      log: (line) => lines.push(line),
    });
    try {
      expect(approvals.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(running(approvals.pid)).toBe(true);
      const alice = new ConsoleVisitor(approvals.url, 'alice');
      await alice.enrol(harness);
      expect(await alice.login()).toMatchObject({ status: 200, body: { ok: true } });
      const pending = await proposeRefund();
      expect(await alice.decide(await alice.envelope(harness, pending.callId))).toMatchObject({
        status: 200,
        body: { accepted: true, state: 'approved' },
      });
      expect(await harness.client.result(pending.callId)).toMatchObject({ ok: true, effect: 'applied' });
      expect(await appliedRefunds()).toBe(1);
      // The console process logged what it relayed to the audit store it was given.
      expect(harness.audit.decisionAttemptsOf(pending.callId)).toContainEqual(
        expect.objectContaining({ source: 'admin', outcome: 'accepted', keyId: alice.keyId }),
      );
    } finally {
      await approvals.stop();
    }
    // It stopped by itself on SIGTERM (not killed after the grace period), and left no process behind.
    expect(lines).toContain('the approvals console stopped (exit 0)');
    expect(running(approvals.pid)).toBe(false);
    expect(lines.join('\n')).not.toMatch(/error/i);
  });

  it('stops on its own when the process that started it goes away (its standard input closes)', async () => {
    const planned = plan();
    const child = spawn(planned.command, planned.args, {
      cwd: planned.cwd,
      env: planned.env,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('approvals console on')) resolve();
      }),
    );
    // What the pipe does when npm start is killed: it closes.
    child.stdin.end();
    expect(await exited).toBe(0);
  });
});
