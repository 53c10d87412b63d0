// Canonical JSON for the approver's browser: the same bytes as toolgate's `canonicalJson`
// (src/shared/canonical-json.ts), which test/browser/webcrypto-signing.test.ts checks value by value.
// Plain ES, no imports, served by the approvals console as it is. It recurses where toolgate walks an
// explicit stack: what the browser canonicalises (an envelope, an enrolment, a challenge) is flat.
/* global crypto, TextEncoder */

/**
 * Object keys sorted recursively (array-index keys first, in numeric order, then the rest by
 * UTF-16 code units), no whitespace; otherwise the bytes of `JSON.stringify`: a property whose
 * value is undefined, a function or a symbol is left out, and is `null` in an array. A cyclic value
 * throws a `TypeError`.
 * @param {unknown} value
 * @returns {string}
 */
export function canonicalJson(value) {
  return write(value, false, new Set());
}

/**
 * Hex SHA-256 of the UTF-8 bytes of `text`, as toolgate's `sha256Hex`.
 * @param {string} text
 * @returns {Promise<string>}
 */
export async function sha256Hex(text) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * @param {unknown} value
 * @param {boolean} inArray
 * @param {Set<object>} open the containers being written, to refuse a cycle
 * @returns {string}
 */
function write(value, inArray, open) {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    return text === undefined && inArray ? 'null' : text;
  }
  if (open.has(value)) throw new TypeError('canonicalJson: the value is cyclic');
  open.add(value);
  let text;
  if (Array.isArray(value)) {
    text = `[${value.map((item) => write(item, true, open)).join(',')}]`;
  } else {
    const members = orderedKeys(value)
      .filter((key) => isSerialised(value[key]))
      .map((key) => `${JSON.stringify(key)}:${write(value[key], false, open)}`);
    text = `{${members.join(',')}}`;
  }
  open.delete(value);
  return text;
}

/**
 * @param {object} record
 * @returns {string[]}
 */
function orderedKeys(record) {
  const indices = [];
  const names = [];
  for (const key of Object.keys(record)) (isArrayIndex(key) ? indices : names).push(key);
  indices.sort((a, b) => Number(a) - Number(b));
  names.sort();
  return [...indices, ...names];
}

/** @param {string} key */
function isArrayIndex(key) {
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4_294_967_295;
}

/** @param {unknown} value */
function isSerialised(value) {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}
