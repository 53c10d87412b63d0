// Bearer tokens for the MCP server over HTTP: each names the caller its requests act for. A token is
// 32 random bytes shown once; the tokens file keeps only its SHA-256, with the caller, a label and
// when it was made, so reading the file grants nothing.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigurationError } from '../policy/load-policy';

/** One token as the tokens file keeps it: never the token itself. */
export interface McpTokenRecord {
  /** SHA-256 of the token, in hex. */
  hash: string;
  /** The caller every request with this token acts for. */
  caller: string;
  label?: string;
  /** ISO 8601. */
  createdAt: string;
}

/** Answers which caller a presented bearer token stands for; the HTTP server asks it on every request. */
export interface McpTokenVerifier {
  verify(token: string): { caller: string } | undefined;
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
 * only). The token is returned once and kept nowhere.
 */
export function createMcpToken(input: { path: string; caller: string; label?: string }): {
  token: string;
  record: McpTokenRecord;
} {
  if (typeof input.caller !== 'string' || input.caller.length === 0) {
    throw new ConfigurationError('an MCP token needs a caller: the policy name it acts for');
  }
  const token = `${tokenPrefix}${randomBytes(32).toString('base64url')}`;
  const record: McpTokenRecord = {
    hash: mcpTokenHash(token),
    caller: input.caller,
    ...(input.label !== undefined ? { label: input.label } : {}),
    createdAt: new Date().toISOString(),
  };
  writeRecords({ path: input.path, records: [...readRecords(input.path), record] });
  return { token, record };
}

/** The tokens in the file, oldest first (none when the file does not exist yet). */
export function listMcpTokens(input: { path: string }): McpTokenRecord[] {
  return readRecords(input.path);
}

/**
 * Removes the one token whose hash starts with `hashPrefix` (as `listMcpTokens` shows it). A prefix
 * that matches several removes none. A running server refuses the token from its next request on.
 */
export function revokeMcpToken(input: { path: string; hashPrefix: string }): McpTokenRevocation {
  const prefix = input.hashPrefix.toLowerCase();
  const records = readRecords(input.path);
  const matches = prefix.length > 0 ? records.filter((record) => record.hash.startsWith(prefix)) : [];
  if (matches.length !== 1) {
    return { ok: false, reason: matches.length === 0 ? 'NOT_FOUND' : 'AMBIGUOUS', matches };
  }
  const revoked = matches[0]!;
  writeRecords({ path: input.path, records: records.filter((record) => record !== revoked) });
  return { ok: true, revoked };
}

/**
 * A verifier over the tokens file: it reads the file again whenever it changed, so a token created or
 * revoked counts from the next request. Compares hashes in constant time, against every record.
 */
export function mcpTokenVerifier(input: { path: string }): McpTokenVerifier {
  let loaded: { stamp: string; records: { hash: Buffer; caller: string }[] } | undefined;
  const current = (): { hash: Buffer; caller: string }[] => {
    const stamp = stampOf(input.path);
    if (loaded?.stamp !== stamp) {
      loaded = {
        stamp,
        records: readRecords(input.path).map((record) => ({
          hash: Buffer.from(record.hash, 'hex'),
          caller: record.caller,
        })),
      };
    }
    return loaded.records;
  };
  return {
    verify(token) {
      if (typeof token !== 'string' || token.length === 0) return undefined;
      const presented = Buffer.from(mcpTokenHash(token), 'hex');
      let match: { caller: string } | undefined;
      // No early exit: every record is compared, so the time taken says nothing about which matched.
      for (const record of current()) {
        if (timingSafeEqual(presented, record.hash) && !match) match = { caller: record.caller };
      }
      return match;
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
      (record.label !== undefined && typeof record.label !== 'string')
    ) {
      throw new ConfigurationError(
        `MCP tokens file ${path}: tokens.${index} must be {hash: 64 hex digits, caller, createdAt, label?}; ` +
          'fix it, or revoke it and create a new token',
      );
    }
    return {
      hash: record.hash,
      caller: record.caller,
      ...(record.label !== undefined ? { label: record.label } : {}),
      createdAt: record.createdAt,
    };
  });
}

/** Writes the file whole, through a temporary file renamed over it: a reader never sees half of it. */
function writeRecords(input: { path: string; records: McpTokenRecord[] }): void {
  mkdirSync(dirname(input.path), { recursive: true });
  const temporary = `${input.path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ tokens: input.records }, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, input.path);
}
