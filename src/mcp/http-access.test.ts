import { describe, expect, it } from 'vitest';
import {
  authorityOf,
  bearerTokenOf,
  defaultAllowedOrigins,
  hostAllowed,
  isLoopbackHost,
  originAllowed,
} from './http-access';

describe('who may reach the MCP server over HTTP', () => {
  it("allows by default only the server's own origins, under each loopback name", () => {
    expect(defaultAllowedOrigins({ host: '127.0.0.1', port: 4200 })).toEqual([
      'http://127.0.0.1:4200',
      'http://localhost:4200',
      'http://[::1]:4200',
    ]);
    expect(defaultAllowedOrigins({ host: 'mcp.internal', port: 80 })).toEqual(['http://mcp.internal:80']);
    const allowed = new Set(defaultAllowedOrigins({ host: '127.0.0.1', port: 4200 }));
    expect(originAllowed({ origin: undefined, allowed })).toBe(true);
    expect(originAllowed({ origin: 'http://localhost:4200', allowed })).toBe(true);
    expect(originAllowed({ origin: 'http://localhost:4201', allowed })).toBe(false);
    expect(originAllowed({ origin: 'https://localhost:4200', allowed })).toBe(false);
    expect(originAllowed({ origin: 'null', allowed })).toBe(false);
  });

  it('accepts on loopback only a Host that names this machine, so a rebinding page is refused', () => {
    for (const hostHeader of ['127.0.0.1:4200', 'localhost:4200', 'LOCALHOST', '[::1]:4200']) {
      expect(hostAllowed({ hostHeader, boundHost: '127.0.0.1' }), hostHeader).toBe(true);
    }
    for (const hostHeader of [
      undefined,
      'evil.example:4200',
      '127.0.0.1.evil.example',
      'localhost.evil:1',
      '',
    ]) {
      expect(hostAllowed({ hostHeader, boundHost: 'localhost' }), String(hostHeader)).toBe(false);
    }
    expect(hostAllowed({ hostHeader: 'mcp.internal', boundHost: '0.0.0.0' })).toBe(true);
    expect(isLoopbackHost('127.0.0.2')).toBe(true);
    expect(isLoopbackHost('10.0.0.1')).toBe(false);
    expect(authorityOf({ host: '::1', port: 1 })).toBe('[::1]:1');
  });

  it('reads a bearer token and nothing else', () => {
    expect(bearerTokenOf('Bearer tgmcp_abc')).toBe('tgmcp_abc');
    expect(bearerTokenOf('bearer  tgmcp_abc ')).toBe('tgmcp_abc');
    expect(bearerTokenOf('Basic dXNlcjpwYXNz')).toBeUndefined();
    expect(bearerTokenOf('Bearer')).toBeUndefined();
    expect(bearerTokenOf('Bearer a b')).toBeUndefined();
    expect(bearerTokenOf(undefined)).toBeUndefined();
  });
});
