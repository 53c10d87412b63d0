import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

/** One piece of work of the serialiser: text to emit, a value to serialise, or a container to leave. */
type Step =
  | { kind: 'text'; text: string }
  | { kind: 'value'; value: unknown; inArray: boolean }
  | { kind: 'leave'; container: object };

/**
 * Canonical JSON: object keys sorted recursively (array-index keys first, in numeric order), no
 * whitespace; otherwise the bytes of
 * `JSON.stringify` (a property whose value is undefined, a function or a symbol is left out; in an
 * array it is `null`). Pure and sandbox-safe, so the client, the workflow and the backends produce
 * identical bytes for the same value. It walks with an explicit stack, never recursion, so no
 * nesting depth can overflow the call stack; a cyclic value throws a `TypeError`, as
 * `JSON.stringify` does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const out: string[] = [];
  const open = new Set<object>();
  const steps: Step[] = [{ kind: 'value', value, inArray: false }];
  for (let step = steps.pop(); step !== undefined; step = steps.pop()) {
    if (step.kind === 'text') {
      out.push(step.text);
      continue;
    }
    if (step.kind === 'leave') {
      open.delete(step.container);
      continue;
    }
    const current = step.value;
    if (current === null || typeof current !== 'object') {
      out.push(leafJson(current, step.inArray));
      continue;
    }
    if (open.has(current)) throw new TypeError('canonicalJson: the value is cyclic');
    open.add(current);
    // Pushed in reverse, so they come off the stack in order.
    const later: Step[] = [{ kind: 'leave', container: current }];
    if (Array.isArray(current)) {
      later.push({ kind: 'text', text: ']' });
      for (let index = current.length - 1; index >= 0; index--) {
        later.push({ kind: 'value', value: current[index] as unknown, inArray: true });
        if (index > 0) later.push({ kind: 'text', text: ',' });
      }
      later.push({ kind: 'text', text: '[' });
    } else {
      const record = current as Record<string, unknown>;
      const keys = orderedKeys(record).filter((key) => isSerialisedProperty(record[key]));
      later.push({ kind: 'text', text: '}' });
      for (let index = keys.length - 1; index >= 0; index--) {
        const key = keys[index] as string;
        later.push({ kind: 'value', value: record[key], inArray: false });
        later.push({ kind: 'text', text: `${index > 0 ? ',' : ''}${JSON.stringify(key)}:` });
      }
      later.push({ kind: 'text', text: '{' });
    }
    for (const item of later) steps.push(item);
  }
  return out.join('');
}

/**
 * Keys in canonical order: sorted, except that keys which are array indices ("0", "17") come first
 * in numeric order, as JavaScript orders an object's own keys. These are the bytes every call id,
 * digest and signature since the first release was computed from, so they stay.
 */
function orderedKeys(record: Record<string, unknown>): string[] {
  const indices: string[] = [];
  const names: string[] = [];
  for (const key of Object.keys(record)) (isArrayIndex(key) ? indices : names).push(key);
  indices.sort((a, b) => Number(a) - Number(b));
  names.sort();
  return indices.length ? [...indices, ...names] : names;
}

function isArrayIndex(key: string): boolean {
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4_294_967_295;
}

function isSerialisedProperty(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}

function leafJson(value: unknown, inArray: boolean): string {
  // JSON.stringify gives undefined for these; in an array JSON writes null in their place.
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined && inArray ? 'null' : (text as string);
}

/** Hex SHA-256 of a UTF-8 string, computed by a pure-JS implementation that runs in the workflow sandbox. */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/** SHA-256 digest of a value's canonical JSON. */
export function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
