import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMcpToken, listMcpTokens, mcpTokenHash, mcpTokenVerifier, revokeMcpToken } from 'toolgate/mcp';
import { projectRoot } from './mcp-test-support';

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
    expect(verifier.verify(support.token)).toEqual({ caller: 'support-bot', tokenId: support.record.hash });
    expect(verifier.verify(readonly.token)).toEqual({
      caller: 'readonly-bot',
      tokenId: readonly.record.hash,
    });
    expect(verifier.isActive?.(support.record.hash)).toBe(true);
    expect(verifier.verify(support.record.hash)).toBeUndefined();
    expect(verifier.verify(`${support.token}x`)).toBeUndefined();
    expect(verifier.verify('')).toBeUndefined();
    expect(revokeMcpToken({ path, hashPrefix: support.record.hash.slice(0, 8).toUpperCase() })).toEqual({
      ok: true,
      revoked: support.record,
    });
    expect(verifier.verify(support.token)).toBeUndefined();
    expect(verifier.isActive?.(support.record.hash)).toBe(false);
    expect(verifier.verify(readonly.token)).toEqual({
      caller: 'readonly-bot',
      tokenId: readonly.record.hash,
    });
  });

  it('makes a tokens file readable by its owner only again on every rewrite, and leaves no lock behind', () => {
    createMcpToken({ path, caller: 'support-bot' });
    chmodSync(path, 0o644);
    const second = createMcpToken({ path, caller: 'support-bot' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    chmodSync(path, 0o666);
    expect(revokeMcpToken({ path, hashPrefix: second.record.hash })).toMatchObject({ ok: true });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it("breaks a lock left by a holder that died (older than 10 s), and never a live holder's", () => {
    const lock = `${path}.lock`;
    const before = createMcpToken({ path, caller: 'support-bot' });
    const old = new Date(Date.now() - 60_000);
    writeFileSync(lock, JSON.stringify({ pid: 999_999, acquiredAt: old.toISOString(), nonce: 'dead' }));
    const started = Date.now();
    const after = createMcpToken({ path, caller: 'support-bot' });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(listMcpTokens({ path }).map((record) => record.hash)).toEqual([
      before.record.hash,
      after.record.hash,
    ]);
    expect(existsSync(lock)).toBe(false);
    // A holder that crashed before writing its pid and time: judged by the lock file's own age.
    writeFileSync(lock, '');
    utimesSync(lock, old, old);
    expect(revokeMcpToken({ path, hashPrefix: after.record.hash })).toMatchObject({ ok: true });
    expect(existsSync(lock)).toBe(false);
  });

  it('never loses a created token nor brings a revoked one back when two processes change the file at once', async () => {
    const victims = Array.from({ length: 150 }, (_, index) =>
      createMcpToken({ path, caller: 'support-bot', label: `leaked-${index}` }),
    );
    const revokeList = join(directory, 'revoke.json');
    writeFileSync(revokeList, JSON.stringify(victims.map((victim) => victim.record.hash)));
    // Both processes spin until the same moment, once their module loading is done.
    const startAt = Date.now() + 5_000;
    const [created, revoked] = await Promise.all([
      runTokenWriter(['create', path, '150'], startAt) as Promise<{ token: string; hash: string }[]>,
      runTokenWriter(['revoke', path, revokeList], startAt) as Promise<string[]>,
    ]);
    expect(revoked).toHaveLength(victims.length);
    expect(created).toHaveLength(150);
    const verifier = mcpTokenVerifier({ path });
    // Every revoked token is refused...
    expect(victims.filter((victim) => verifier.verify(victim.token) !== undefined)).toEqual([]);
    // ...and every token printed to the operator is there, and verifies.
    expect(created.filter((made) => verifier.verify(made.token)?.tokenId !== made.hash)).toEqual([]);
    expect(listMcpTokens({ path })).toHaveLength(created.length);
    expect(existsSync(`${path}.lock`)).toBe(false);
  }, 120_000);

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

/** Runs test/mcp/support/token-writer.ts in a process of its own; resolves with what it printed. */
function runTokenWriter(args: string[], startAt: number): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [
        '--conditions=toolgate-source',
        '--import',
        'tsx',
        join(__dirname, 'support', 'token-writer.ts'),
        ...args,
      ],
      { cwd: projectRoot, env: { ...process.env, START_AT: String(startAt) }, timeout: 100_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as unknown[]),
    );
  });
}
