import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMcpToken, listMcpTokens, mcpTokenHash, mcpTokenVerifier, revokeMcpToken } from 'toolgate/mcp';

let directory: string;
let path: string;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'toolgate-mcp-tokens-'));
  path = join(directory, 'mcp-tokens.json');
});

afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

describe('MCP bearer tokens', () => {
  it('creates a random token and keeps only its SHA-256, in a file only its owner can read', () => {
    path = join(directory, 'a', 'new', 'folder', 'mcp-tokens.json');
    const first = createMcpToken({ path, caller: 'support-bot', label: 'laptop' });
    const second = createMcpToken({ path, caller: 'support-bot' });
    expect(first.token).toMatch(/^tgmcp_[A-Za-z0-9_-]{43}$/);
    expect(second.token).not.toBe(first.token);
    expect(first.record).toMatchObject({
      caller: 'support-bot',
      label: 'laptop',
      hash: mcpTokenHash(first.token),
    });
    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain(first.token);
    expect(text).not.toContain(first.token.slice('tgmcp_'.length));
    expect(text).toContain(first.record.hash);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(listMcpTokens({ path })).toEqual([first.record, second.record]);
  });

  it('verifies a token as its caller, and follows the file: a token revoked or created counts at once', () => {
    const verifier = mcpTokenVerifier({ path });
    expect(verifier.verify('tgmcp_anything')).toBeUndefined();
    const support = createMcpToken({ path, caller: 'support-bot' });
    const readonly = createMcpToken({ path, caller: 'readonly-bot' });
    expect(verifier.verify(support.token)).toEqual({ caller: 'support-bot' });
    expect(verifier.verify(readonly.token)).toEqual({ caller: 'readonly-bot' });
    expect(verifier.verify(support.record.hash)).toBeUndefined();
    expect(verifier.verify(`${support.token}x`)).toBeUndefined();
    expect(verifier.verify('')).toBeUndefined();
    expect(revokeMcpToken({ path, hashPrefix: support.record.hash.slice(0, 8).toUpperCase() })).toEqual({
      ok: true,
      revoked: support.record,
    });
    expect(verifier.verify(support.token)).toBeUndefined();
    expect(verifier.verify(readonly.token)).toEqual({ caller: 'readonly-bot' });
  });

  it('revokes nothing for a prefix that matches no token, or several', () => {
    const hash = (tail: string) => `abcdef${tail.repeat(58)}`;
    writeFileSync(
      path,
      JSON.stringify({
        tokens: [
          { hash: hash('1'), caller: 'a', createdAt: '2026-01-01T00:00:00Z' },
          { hash: hash('2'), caller: 'b', createdAt: '2026-01-01T00:00:00Z' },
        ],
      }),
    );
    expect(revokeMcpToken({ path, hashPrefix: 'abcdef' })).toMatchObject({
      ok: false,
      reason: 'AMBIGUOUS',
    });
    expect(revokeMcpToken({ path, hashPrefix: '000000' })).toEqual({
      ok: false,
      reason: 'NOT_FOUND',
      matches: [],
    });
    expect(revokeMcpToken({ path, hashPrefix: '' })).toMatchObject({ ok: false, reason: 'NOT_FOUND' });
    expect(listMcpTokens({ path })).toHaveLength(2);
  });

  it('refuses a malformed tokens file, naming the file and what to fix', () => {
    writeFileSync(path, JSON.stringify({ tokens: [{ hash: 'short', caller: 'a' }] }));
    expect(() => listMcpTokens({ path: path })).toThrow(
      /MCP tokens file .*mcp-tokens\.json: tokens\.0 must be \{hash: 64 hex digits/,
    );
    writeFileSync(path, '{');
    expect(() => mcpTokenVerifier({ path: path }).verify('x')).toThrow(/not valid JSON/);
  });
});
