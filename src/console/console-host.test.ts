import { describe, expect, it } from 'vitest';
import { consoleHostAllowed } from './console-host';
import type { ConsoleHostRule } from './console-host';

const allowed = (rule: ConsoleHostRule, hostHeader: string | undefined) =>
  consoleHostAllowed({ hostHeader, rule });

describe("the approvals console's Host check", () => {
  it('on loopback, answers loopback names only', () => {
    const rule = { boundHost: '127.0.0.1', port: 4300 };
    for (const host of ['127.0.0.1:4300', 'localhost:4300', '[::1]:4300', 'LOCALHOST:4300', '127.0.0.1']) {
      expect(allowed(rule, host), host).toBe(true);
    }
    for (const host of [
      'evil.example:4300',
      'evil.example',
      '127.0.0.1.evil.example',
      '',
      'a b',
      undefined,
    ]) {
      expect(allowed(rule, host), String(host)).toBe(false);
    }
  });

  it("with a public URL, answers that URL's host (and loopback names when bound to loopback), never another name", () => {
    const behindProxy = { boundHost: '127.0.0.1', port: 4300, publicUrl: 'https://approvals.example.com' };
    expect(allowed(behindProxy, 'approvals.example.com')).toBe(true);
    expect(allowed(behindProxy, 'approvals.example.com:443')).toBe(true);
    expect(allowed(behindProxy, 'Approvals.Example.com')).toBe(true);
    expect(allowed(behindProxy, '127.0.0.1:4300')).toBe(true);
    expect(allowed(behindProxy, 'approvals.example.com:8443')).toBe(false);
    expect(allowed(behindProxy, 'rebound.evil.example')).toBe(false);
    expect(allowed(behindProxy, 'approvals.example.com.evil.example')).toBe(false);

    const exposed = { boundHost: '0.0.0.0', port: 4300, publicUrl: 'http://approvals.internal:8080' };
    expect(allowed(exposed, 'approvals.internal:8080')).toBe(true);
    expect(allowed(exposed, 'approvals.internal')).toBe(false);
    expect(allowed(exposed, '10.1.2.3:4300')).toBe(false);
    expect(allowed(exposed, 'rebound.evil.example:4300')).toBe(false);

    const onOneAddress = { boundHost: '10.1.2.3', port: 4300, publicUrl: 'https://approvals.example.com' };
    expect(allowed(onOneAddress, 'approvals.example.com')).toBe(true);
    expect(allowed(onOneAddress, '10.1.2.3:4300')).toBe(false);
    expect(allowed(onOneAddress, 'localhost:4300')).toBe(false);
  });

  it('bound to one other address without a public URL, answers that address and port only', () => {
    const rule = { boundHost: '10.1.2.3', port: 4300 };
    expect(allowed(rule, '10.1.2.3:4300')).toBe(true);
    expect(allowed(rule, '10.1.2.3:4301')).toBe(false);
    expect(allowed(rule, 'rebound.evil.example:4300')).toBe(false);
    expect(allowed(rule, 'localhost:4300')).toBe(false);
  });
});
