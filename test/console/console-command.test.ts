import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from 'toolgate';
import { caught } from '../support/caught';
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
