import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keyPaths, openPostgresAuditStore } from 'toolgate';
import { startEmbeddedPostgres } from '../support/postgres';
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
        ['PATH', 'TMPDIR', 'TEMP', 'TMP', 'SYSTEMROOT', 'LANG', 'TZ', 'TSX_DISABLE_CACHE'].includes(name),
      ),
    ).toBe(true);
    // No argument names the keys folder, the config, or a private key file.
    for (const argument of planned.args) {
      expect(argument).not.toContain(harness.keysDirectory);
      expect(argument).not.toMatch(/\.key$|toolgate\.config/);
    }
    expect(planned.args).toContain('--exit-with-parent');
    // Its folder holds its policy, every key in it a public half written inline, and a folder holding
    // its link to the audit store.
    expect(readdirSync(planned.cwd).sort()).toEqual(['audit', 'console-policy.json']);
    expect(readdirSync(join(planned.cwd, 'audit'))).toEqual(['audit.sqlite']);
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
      expect(await harness.audit.decisionAttemptsOf(pending.callId)).toContainEqual(
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

  it('is handed a PostgreSQL audit store in its environment, never on its command line, and logs to it', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'toolgate-console-postgres-'));
    folders.push(directory);
    const postgres = await startEmbeddedPostgres({
      directory: join(directory, 'pg'),
      password: 'console-audit-secret',
    });
    try {
      await postgres.createDatabase('console_audit');
      const url = postgres.urlOf('console_audit');
      const planned = harnessConsolePlan(harness, { url });
      folders.push(planned.cwd);
      expect(planned.env.TOOLGATE_AUDIT_URL).toBe(url);
      expect(planned.args.join(' ')).not.toContain(postgres.password);
      expect(planned.args).not.toContain('--audit');
      expect(readdirSync(planned.cwd)).toEqual(['console-policy.json']);
      const approvals = await startConsoleProcess({ plan: planned, log: () => undefined });
      try {
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
        // What it relayed is in the PostgreSQL store it was given.
        const store = await openPostgresAuditStore({ url });
        try {
          expect(await store.decisionAttemptsOf(pending.callId)).toContainEqual(
            expect.objectContaining({ source: 'admin', outcome: 'accepted', keyId: alice.keyId }),
          );
        } finally {
          await store.close();
        }
      } finally {
        await approvals.stop();
      }
    } finally {
      await postgres.stop();
    }
  });

  it('cannot read the private keys, the config or its parent’s environment, and still serves its pages', async () => {
    const planned = plan();
    // Under Node's permission model: reads of its code, its policy and the audit store; writes of the
    // audit store only. Never the keys folder, nor the repository as a whole.
    expect(planned.args).toContain('--allow-addons');
    const reads = planned.args.filter((argument) => argument.startsWith('--allow-fs-read='));
    const writes = planned.args.filter((argument) => argument.startsWith('--allow-fs-write='));
    expect(reads.length).toBeGreaterThan(0);
    const root = resolve(__dirname, '..', '..');
    for (const argument of [...reads, ...writes]) {
      const path = argument.slice(argument.indexOf('=') + 1);
      expect(path).not.toContain(harness.keysDirectory);
      expect(resolve(path)).not.toBe(root);
      expect(path).not.toContain('*');
    }
    expect(writes).toEqual([`--allow-fs-write=${join(planned.cwd, 'audit')}/`]);

    // Code in the console process (a preload, run with the very flags the plan gives) reaches for what
    // a compromised dependency would: Alice's and Olivia's private keys, the config and the parent's
    // environment, and tries to plant a file in the keys folder.
    const targets = {
      alice: keyPaths({ directory: harness.keysDirectory, owner: { kind: 'approver', name: 'alice' } })
        .privateKey,
      olivia: keyPaths({ directory: harness.keysDirectory, owner: { kind: 'operator', name: 'olivia' } })
        .privateKey,
      config: join(root, 'toolgate.config.ts'),
      keysFolder: harness.keysDirectory,
    };
    const preload = `
      import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
      const targets = ${JSON.stringify(targets)};
      const attempt = (run) => { try { run(); return 'read'; } catch (error) { return error.code; } };
      const reach = {
        alice: attempt(() => readFileSync(targets.alice, 'utf8')),
        olivia: attempt(() => readFileSync(targets.olivia, 'utf8')),
        config: attempt(() => readFileSync(targets.config, 'utf8')),
        keysFolder: attempt(() => readdirSync(targets.keysFolder)),
        parentEnvironment: attempt(() => readFileSync('/proc/' + process.ppid + '/environ', 'latin1')),
        ownEnvironment: attempt(() => readFileSync('/proc/self/environ', 'latin1')),
        plant: attempt(() => writeFileSync(targets.alice + '.planted', 'x')),
      };
      process.stdout.write('reach ' + JSON.stringify(reach) + '\\n');`;
    const withPreload: ConsoleProcessPlan = {
      ...planned,
      args: [
        ...planned.args.slice(0, planned.args.indexOf('--eval')),
        '--import',
        `data:text/javascript,${encodeURIComponent(preload)}`,
        ...planned.args.slice(planned.args.indexOf('--eval')),
      ],
    };
    const lines: string[] = [];
    const approvals = await startConsoleProcess({ plan: withPreload, log: (line) => lines.push(line) });
    try {
      const reached = lines.find((line) => line.startsWith('[console] reach '));
      expect(reached).toBeDefined();
      expect(JSON.parse(reached!.slice('[console] reach '.length))).toEqual({
        alice: 'ERR_ACCESS_DENIED',
        olivia: 'ERR_ACCESS_DENIED',
        config: 'ERR_ACCESS_DENIED',
        keysFolder: 'ERR_ACCESS_DENIED',
        parentEnvironment: 'ERR_ACCESS_DENIED',
        ownEnvironment: 'ERR_ACCESS_DENIED',
        plant: 'ERR_ACCESS_DENIED',
      });
      // And the console still does its work: its sign-in page, and an enrolment and sign-in that
      // read the policy and write the audit store.
      const page = await fetch(`${approvals.url}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<html');
      const alice = new ConsoleVisitor(approvals.url, 'alice');
      await alice.enrol(harness);
      expect(await alice.login()).toMatchObject({ status: 200, body: { ok: true } });
    } finally {
      await approvals.stop();
    }
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
