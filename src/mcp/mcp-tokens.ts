// Bearer tokens for the MCP server over HTTP: each names the caller its requests act for. A token is
// 32 random bytes shown once; the tokens file keeps only its SHA-256, with the caller, a label and
// when it was made, so reading the file grants nothing. Every change to the file (create, revoke) is
// read, changed and written under an exclusive lock file, so two processes at once (an operator's
// `toolgate mcp revoke` while a script creates tokens) never lose a token or bring a revoked one back.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { ConfigurationError } from '../policy/load-policy';
import type { CallContext } from '../calls/call-context';
import { checkContext, maxContextIdLength } from '../calls/call-context';

/** One token as the tokens file keeps it: never the token itself. */
export interface McpTokenRecord {
  /** SHA-256 of the token, in hex. */
  hash: string;
  /** The caller every request with this token acts for. */
  caller: string;
  /**
   * The end user every call with this token acts for, when the token is one end user's (a customer's
   * chat client): its calls carry `context.onBehalfOf`, and the token can act for nobody else.
   */
  onBehalfOf?: string;
  label?: string;
  /** ISO 8601. */
  createdAt: string;
}

/** Who a verified bearer token stands for, and which token it is. */
export interface McpTokenPrincipal {
  /** The caller every request with this token acts for. */
  caller: string;
  /** On whose behalf its calls act: the token's end user, when it names one. */
  context?: CallContext;
  /**
   * The token's identity, never the token itself (`mcpTokenVerifier`: its SHA-256 in hex): an MCP
   * session opened with a token answers to that token only.
   */
  tokenId: string;
}

/** Answers which caller a presented bearer token stands for; the HTTP server asks it on every request. */
export interface McpTokenVerifier {
  verify(token: string): McpTokenPrincipal | undefined;
  /**
   * Whether the token with this id still verifies (false once revoked). The HTTP server asks it to
   * close the sessions of a revoked token without waiting for their next request; without it, a
   * session closes at its token's next refused request or when idle.
   */
  isActive?(tokenId: string): boolean;
}

/** A revocation: the record removed, or why none was. */
export type McpTokenRevocation =
  | { ok: true; revoked: McpTokenRecord }
  | { ok: false; reason: 'NOT_FOUND' | 'AMBIGUOUS'; matches: McpTokenRecord[] };

/** How tokens start: recognisable in a config or a leak report, the rest random. */
const tokenPrefix = 'tgmcp_';
const hashPattern = /^[0-9a-f]{64}$/;

/** SHA-256 of a token, in hex: what the tokens file keeps. */
export function mcpTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Creates a token for `caller` and stores its hash in the tokens file (created, readable by its owner
 * only), under the file's lock. The token is returned once and kept nowhere.
 */
export function createMcpToken(input: {
  path: string;
  caller: string;
  label?: string;
  onBehalfOf?: string;
}): {
  token: string;
  record: McpTokenRecord;
} {
  if (typeof input.caller !== 'string' || input.caller.length === 0) {
    throw new ConfigurationError('an MCP token needs a caller: the policy name it acts for');
  }
  if (input.onBehalfOf !== undefined && !checkContext({ onBehalfOf: input.onBehalfOf }).ok) {
    throw new ConfigurationError(
      `an MCP token's end user must be text of 1 to ${maxContextIdLength} printable characters`,
    );
  }
  const token = `${tokenPrefix}${randomBytes(32).toString('base64url')}`;
  const record: McpTokenRecord = {
    hash: mcpTokenHash(token),
    caller: input.caller,
    ...(input.onBehalfOf !== undefined ? { onBehalfOf: input.onBehalfOf } : {}),
    ...(input.label !== undefined ? { label: input.label } : {}),
    createdAt: new Date().toISOString(),
  };
  withTokensFileLock(input.path, () =>
    writeRecords({ path: input.path, records: [...readRecords(input.path), record] }),
  );
  return { token, record };
}

/** The tokens in the file, oldest first (none when the file does not exist yet). */
export function listMcpTokens(input: { path: string }): McpTokenRecord[] {
  return readRecords(input.path);
}

/**
 * Removes the one token whose hash starts with `hashPrefix` (as `listMcpTokens` shows it), under the
 * file's lock: once it returns ok, no concurrent create can bring the token back. A prefix that
 * matches several removes none. A running server refuses the token from its next request on and
 * closes the MCP sessions it opened.
 */
export function revokeMcpToken(input: { path: string; hashPrefix: string }): McpTokenRevocation {
  const prefix = input.hashPrefix.toLowerCase();
  if (prefix.length === 0) return { ok: false, reason: 'NOT_FOUND', matches: [] };
  return withTokensFileLock(input.path, (): McpTokenRevocation => {
    const records = readRecords(input.path);
    const matches = records.filter((record) => record.hash.startsWith(prefix));
    if (matches.length !== 1) {
      return { ok: false, reason: matches.length === 0 ? 'NOT_FOUND' : 'AMBIGUOUS', matches };
    }
    const revoked = matches[0]!;
    writeRecords({ path: input.path, records: records.filter((record) => record !== revoked) });
    return { ok: true, revoked };
  });
}

/**
 * A verifier over the tokens file: it reads the file again whenever it changed, so a token created or
 * revoked counts from the next request. Compares hashes in constant time, against every record. A
 * token's id is its hash; `isActive` says whether that hash is still in the file.
 */
export function mcpTokenVerifier(input: { path: string }): McpTokenVerifier {
  type Loaded = { hash: Buffer; tokenId: string; caller: string; onBehalfOf?: string };
  let loaded: { stamp: string; records: Loaded[] } | undefined;
  const current = (): Loaded[] => {
    const stamp = stampOf(input.path);
    if (loaded?.stamp !== stamp) {
      loaded = {
        stamp,
        records: readRecords(input.path).map((record) => ({
          hash: Buffer.from(record.hash, 'hex'),
          tokenId: record.hash,
          caller: record.caller,
          ...(record.onBehalfOf !== undefined ? { onBehalfOf: record.onBehalfOf } : {}),
        })),
      };
    }
    return loaded.records;
  };
  return {
    verify(token) {
      if (typeof token !== 'string' || token.length === 0) return undefined;
      const presented = Buffer.from(mcpTokenHash(token), 'hex');
      let match: McpTokenPrincipal | undefined;
      // No early exit: every record is compared, so the time taken says nothing about which matched.
      for (const record of current()) {
        if (timingSafeEqual(presented, record.hash) && !match) {
          match = {
            caller: record.caller,
            tokenId: record.tokenId,
            ...(record.onBehalfOf !== undefined ? { context: { onBehalfOf: record.onBehalfOf } } : {}),
          };
        }
      }
      return match;
    },
    isActive(tokenId) {
      return current().some((record) => record.tokenId === tokenId);
    },
  };
}

/** What changes when the file is rewritten: its modification time and size (or that it is missing). */
function stampOf(path: string): string {
  try {
    const stat = statSync(path);
    return `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
  } catch {
    return 'missing';
  }
}

function readRecords(path: string): McpTokenRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ConfigurationError(`MCP tokens file ${path}: cannot be read (${(error as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigurationError(`MCP tokens file ${path}: not valid JSON (${(error as Error).message})`);
  }
  const tokens = (parsed as { tokens?: unknown } | null)?.tokens;
  if (!Array.isArray(tokens)) {
    throw new ConfigurationError(
      `MCP tokens file ${path}: expected {"tokens": [...]}; fix or delete the file`,
    );
  }
  return tokens.map((value: unknown, index) => {
    const record = value as Partial<McpTokenRecord> | null;
    if (
      typeof record?.hash !== 'string' ||
      !hashPattern.test(record.hash) ||
      typeof record.caller !== 'string' ||
      typeof record.createdAt !== 'string' ||
      (record.label !== undefined && typeof record.label !== 'string') ||
      (record.onBehalfOf !== undefined &&
        (typeof record.onBehalfOf !== 'string' || !checkContext({ onBehalfOf: record.onBehalfOf }).ok))
    ) {
      throw new ConfigurationError(
        `MCP tokens file ${path}: tokens.${index} must be {hash: 64 hex digits, caller, createdAt, label?, onBehalfOf?}; ` +
          'fix it, or revoke it and create a new token',
      );
    }
    return {
      hash: record.hash,
      caller: record.caller,
      ...(record.onBehalfOf !== undefined ? { onBehalfOf: record.onBehalfOf } : {}),
      ...(record.label !== undefined ? { label: record.label } : {}),
      createdAt: record.createdAt,
    };
  });
}

/**
 * Writes the file whole, through a temporary file (mode 0600 whatever the umask, flushed to disk)
 * renamed over it: a reader never sees half of it, and the file is its owner's only after every
 * rewrite, however it was before. Called under the file's lock.
 */
function writeRecords(input: { path: string; records: McpTokenRecord[] }): void {
  const temporary = `${input.path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const descriptor = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(descriptor, `${JSON.stringify({ tokens: input.records }, null, 2)}\n`);
    fsyncSync(descriptor);
  } finally {
    closeSync(descriptor);
  }
  chmodSync(temporary, 0o600);
  renameSync(temporary, input.path);
}

/** A lock older than this is a holder's that died: a read-change-write takes milliseconds. */
const staleLockMs = 10_000;
/** How long a change waits for the lock before it gives up and says which file to check. */
const lockWaitMs = 30_000;

/**
 * Runs `change` (read the file, change it, write it) while holding `<path>.lock`, created exclusively
 * with the holder's pid and time in it. A busy lock is retried with a small, growing, jittered
 * backoff; a lock older than {@link staleLockMs} is a crashed holder's and is broken.
 */
function withTokensFileLock<T>(path: string, change: () => T): T {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const lockPath = `${path}.lock`;
  const nonce = randomBytes(8).toString('hex');
  const deadline = Date.now() + lockWaitMs;
  let backoffMs = 1;
  let content: string;
  for (;;) {
    // The time is the moment of taking the lock: what a waiter judges staleness by.
    content = JSON.stringify({ pid: process.pid, acquiredAt: new Date().toISOString(), nonce });
    try {
      const descriptor = openSync(lockPath, 'wx', 0o600);
      try {
        writeSync(descriptor, content);
      } finally {
        closeSync(descriptor);
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new ConfigurationError(
          `MCP tokens file ${path}: cannot create its lock ${lockPath} (${(error as Error).message}); ` +
            'check that the folder is writable',
        );
      }
    }
    if (breakStaleLock(lockPath)) continue;
    if (Date.now() > deadline) {
      throw new ConfigurationError(
        `MCP tokens file ${path}: still locked after ${lockWaitMs / 1000} s by ${describeLock(lockPath)}; ` +
          `if no toolgate process is changing the tokens, delete ${lockPath}`,
      );
    }
    sleepSync(backoffMs + Math.random() * backoffMs);
    backoffMs = Math.min(backoffMs * 2, 50);
  }
  try {
    return change();
  } finally {
    releaseLock(lockPath, content);
  }
}

/** Removes the lock only if it is still ours (a waiter may have broken it as stale meanwhile). */
function releaseLock(lockPath: string, content: string): void {
  try {
    if (readFileSync(lockPath, 'utf8') === content) unlinkSync(lockPath);
  } catch {
    // Gone already: nothing to release.
  }
}

/**
 * Breaks the lock if its holder died: older than {@link staleLockMs} by the time written in it (or
 * by the file's own time while the holder had not written it yet). It is moved aside first and
 * checked again, so a lock taken afresh by someone else in between is put back, not deleted.
 */
function breakStaleLock(lockPath: string): boolean {
  let seen: string;
  let modifiedMs: number;
  try {
    seen = readFileSync(lockPath, 'utf8');
    modifiedMs = statSync(lockPath).mtimeMs;
  } catch {
    return true; // released meanwhile: try again at once
  }
  const written = parseLock(seen)?.acquiredAt;
  const acquiredAt = typeof written === 'string' ? Date.parse(written) : Number.NaN;
  const since = Number.isNaN(acquiredAt) ? modifiedMs : acquiredAt;
  if (Date.now() - since < staleLockMs) return false;
  const aside = `${lockPath}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(lockPath, aside);
  } catch {
    return true;
  }
  if (readFileSync(aside, 'utf8') !== seen) {
    // Not the stale lock any more: a live holder's. Put it back unless another took the lock since.
    try {
      linkSync(aside, lockPath);
    } catch {
      // Taken again meanwhile: that holder has it.
    }
  }
  unlinkSync(aside);
  return true;
}

function parseLock(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Who holds the lock, for an error message. */
function describeLock(lockPath: string): string {
  try {
    const holder = parseLock(readFileSync(lockPath, 'utf8'));
    const pid = typeof holder?.pid === 'number' ? holder.pid : '?';
    const since = typeof holder?.acquiredAt === 'string' ? holder.acquiredAt : '?';
    return `pid ${pid} since ${since}`;
  } catch {
    return 'a holder that has just released it';
  }
}

/** Blocks this thread for `ms`: the token functions are synchronous, and the wait is a few milliseconds. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
