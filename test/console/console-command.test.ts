import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from 'toolgate';
import { caught } from '../support/caught';
import { harnessPolicy } from '../support/console-helpers';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';

// `toolgate console`: serves the approvals console for the config's policy until it is stopped.

let harness: ToolGateHarness;

beforeAll(async () => {
  harness = await startHarness({ address: temporalAddress() });
  process.env.TOOLGATE_TEST_POLICY = harness.policyPath;
  process.env.TOOLGATE_TEST_KEYS = harness.keysDirectory;
  process.env.TOOLGATE_TEST_AUDIT = join(harness.keysDirectory, '..', 'console-audit.sqlite');
});

afterAll(async () => {
  await harness?.stop();
});

const common = () => [
  '--config',
  join(__dirname, '../support/test-toolgate.config.ts'),
  '--address',
  temporalAddress(),
  '--task-queue',
  harness.taskQueue,
];

describe('toolgate console', () => {
  it('serves the console on loopback, prints its URL, and stops when told to', async () => {
    const stop = new AbortController();
    const lines: string[] = [];
    let printed: (line: string) => void = () => undefined;
    const started = new Promise<string>((resolve) => (printed = resolve));
    const running = runCli(
      ['console', '--port', '0', ...common()],
      {
        out: (text) => {
          lines.push(text);
          printed(text);
        },
        error: (text) => lines.push(text),
      },
      { signal: stop.signal },
    );
    try {
      const line = await started;
      const url = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1];
      expect(url, line).toBeDefined();
      const login = await fetch(`${url}/login`);
      expect(login.status).toBe(200);
      expect(login.headers.get('content-security-policy')).toContain("default-src 'self'");

      // An invite link made for this console opens its enrolment page.
      let out = '';
      const invited = await runCli(
        ['approvers', 'invite', 'alice', '--as', 'olivia', '--console-url', url!, '--json', ...common()],
        { out: (text) => (out += text), error: () => undefined },
      );
      expect(invited).toBe(0);
      const link = (JSON.parse(out) as { link: string }).link;
      const enrol = await fetch(link.replace(/#.*$/, ''));
      expect(enrol.status).toBe(200);
      expect(await enrol.text()).toContain('invited <strong>alice</strong>');
    } finally {
      stop.abort();
    }
    expect(await running).toBe(0);
    expect(lines.join('\n')).not.toMatch(/error/i);
    const url = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(lines[0] ?? '')?.[1];
    expect(await caught(() => fetch(`${url}/login`))).toBeInstanceOf(Error);
  });

  it('with --policy, serves from that file alone: no config is read, and a private key is refused', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'toolgate-console-policy-'));
    try {
      const policy = harnessPolicy(harness);
      // Inline keys for the approvers, a .pub file next to it for the operator.
      copyFileSync(join(harness.keysDirectory, 'operators', 'olivia.pub'), join(folder, 'olivia.pub'));
      const file = (operatorKey: string) => ({
        ...policy.file,
        approvers: Object.fromEntries(
          Object.entries(policy.file.approvers).map(([name, approver]) => [
            name,
            { ...approver, publicKey: `ed25519:${policy.approvers[name]?.publicKeyHex ?? ''}` },
          ]),
        ),
        operators: { olivia: { publicKey: operatorKey } },
      });
      writeFileSync(join(folder, 'console-policy.json'), JSON.stringify(file('olivia.pub')));
      const stop = new AbortController();
      let printed: (line: string) => void = () => undefined;
      const started = new Promise<string>((resolve) => (printed = resolve));
      const running = runCli(
        [
          'console',
          '--policy',
          join(folder, 'console-policy.json'),
          '--port',
          '0',
          // A config that does not exist: with --policy, none is read.
          '--config',
          join(folder, 'no-such-config.ts'),
          '--address',
          temporalAddress(),
          '--task-queue',
          harness.taskQueue,
        ],
        { out: (text) => printed(text), error: () => undefined },
        { signal: stop.signal },
      );
      try {
        const url = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(await started)?.[1];
        expect((await fetch(`${url}/login`)).status).toBe(200);
      } finally {
        stop.abort();
      }
      expect(await running).toBe(0);

      // A policy that names a private key file is refused before anything starts.
      copyFileSync(join(harness.keysDirectory, 'operators', 'olivia.key'), join(folder, 'olivia.key'));
      writeFileSync(join(folder, 'leaky-policy.json'), JSON.stringify(file('olivia.key')));
      let error = '';
      const leaky = await runCli(
        [
          'console',
          '--policy',
          join(folder, 'leaky-policy.json'),
          '--port',
          '0',
          '--address',
          temporalAddress(),
        ],
        { out: () => undefined, error: (text) => (error += text) },
      );
      expect(leaky).toBe(2);
      expect(error).toContain('operators.olivia.publicKey');
      expect(error).toContain('public keys only');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('refuses a port that is not a number (exit 2)', async () => {
    let error = '';
    const code = await runCli(['console', '--port', 'eighty', ...common()], {
      out: () => undefined,
      error: (text) => (error += text),
    });
    expect(code).toBe(2);
    expect(error).toContain('--port takes a port number');
  });
});
