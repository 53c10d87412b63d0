import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

/**
 * Canonical JSON: object keys sorted recursively, no whitespace. Pure and sandbox-safe, so the
 * client, the workflow and the backends produce identical bytes for the same value.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) sorted[key] = sortKeys(item);
    }
    return sorted;
  }
  return value;
}

/** Hex SHA-256 of a UTF-8 string, computed by a pure-JS implementation that runs in the workflow sandbox. */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/** SHA-256 digest of a value's canonical JSON. */
export function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
