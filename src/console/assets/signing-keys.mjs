// The approver's signing key in the browser: a non-extractable Ed25519 key made by WebCrypto, kept in
// IndexedDB, signing the same bytes as toolgate's `signedText({ kind, value })` (src/shared/signatures.ts).
// Plain ES, served by the approvals console as it is; test/browser/webcrypto-signing.test.ts checks
// its bytes against toolgate's.
/* global crypto, indexedDB, TextEncoder, btoa, atob */
import { canonicalJson } from './canonical-json.mjs';

const databaseName = 'toolgate-keys';
const storeName = 'signing-keys';

/**
 * A new Ed25519 key pair whose private key can sign but never be exported (not even by this page);
 * its public key exports as 32 raw bytes.
 * @returns {Promise<CryptoKeyPair>}
 */
export function generateSigningKey() {
  return crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
}

/**
 * The raw public key as lowercase hex, the form toolgate's `verifySignature` takes.
 * @param {CryptoKey} publicKey
 * @returns {Promise<string>}
 */
export async function publicKeyHex(publicKey) {
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', publicKey));
  return Array.from(raw, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * The exact text signed for a value of a kind: `"toolgate/v1/<kind>\n" + canonicalJson(value)`.
 * @param {{ kind: string, value: unknown }} input
 * @returns {string}
 */
export function signedText({ kind, value }) {
  return `toolgate/v1/${kind}\n${canonicalJson(value)}`;
}

/**
 * The exact text signed for a decision.
 * @param {object} envelope
 * @returns {string}
 */
export function decisionText(envelope) {
  return signedText({ kind: 'decision', value: envelope });
}

/**
 * Signs a value of a kind (`decision`, `enrolment`, `login`, `grant-revocation`); the signature is base64url without
 * padding, as toolgate expects.
 * @param {{ kind: string, value: unknown, privateKey: CryptoKey }} input
 * @returns {Promise<string>}
 */
export async function signValue({ kind, value, privateKey }) {
  const bytes = new TextEncoder().encode(signedText({ kind, value }));
  const signature = new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, bytes));
  return btoa(String.fromCharCode(...signature))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/**
 * Signs a decision envelope.
 * @param {{ privateKey: CryptoKey, envelope: object }} input
 * @returns {Promise<string>}
 */
export function signDecision({ privateKey, envelope }) {
  return signValue({ kind: 'decision', value: envelope, privateKey });
}

// An Ed25519 private key's PKCS#8 wrapping around its 32-byte seed, as toolgate's invite links carry it.
const pkcs8Prefix = [
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/**
 * The invite's private key from an invite link's fragment (a base64url 32-byte seed), usable to sign
 * the enrolment only, and never exportable.
 * @param {string} seed
 * @returns {Promise<CryptoKey>}
 */
export async function importInviteKey(seed) {
  if (!/^[A-Za-z0-9_-]{43}$/.test(seed)) throw new Error('the link does not carry an invite key after its #');
  const binary = atob(seed.replace(/-/g, '+').replace(/_/g, '/') + '=');
  const bytes = Uint8Array.from([
    ...pkcs8Prefix,
    ...Array.from(binary, (character) => character.charCodeAt(0)),
  ]);
  return crypto.subtle.importKey('pkcs8', bytes, { name: 'Ed25519' }, false, ['sign']);
}

/**
 * Stores the key pair under `id` (replacing one stored before), with what the console shows of it.
 * IndexedDB keeps the CryptoKey objects themselves, so the private key stays non-extractable at rest.
 * @param {{ id: string, keyPair: CryptoKeyPair, approver?: string, label?: string }} input
 * @returns {Promise<void>}
 */
export async function saveSigningKey({ id, keyPair, approver = '', label = '' }) {
  const database = await openDatabase();
  try {
    const transaction = database.transaction(storeName, 'readwrite');
    transaction.objectStore(storeName).put({ id, keyPair, approver, label }, id);
    // Committed, not merely queued: a page that reloads right after must find the key.
    await new Promise((resolve, reject) => {
      transaction.oncomplete = () => resolve(undefined);
      transaction.onabort = () => reject(transaction.error);
    });
  } finally {
    database.close();
  }
}

/**
 * The key pair stored under `id`, or undefined when there is none.
 * @param {{ id: string }} input
 * @returns {Promise<CryptoKeyPair | undefined>}
 */
export async function loadSigningKey({ id }) {
  const database = await openDatabase();
  try {
    const record = await request(database.transaction(storeName, 'readonly').objectStore(storeName).get(id));
    return record?.keyPair;
  } finally {
    database.close();
  }
}

/**
 * Every key this browser holds, as `{ id, approver, label }` (no key material).
 * @returns {Promise<{ id: string, approver: string, label: string }[]>}
 */
export async function listSigningKeys() {
  const database = await openDatabase();
  try {
    const records = await request(
      database.transaction(storeName, 'readonly').objectStore(storeName).getAll(),
    );
    return records.map(({ id, approver, label }) => ({ id, approver, label }));
  } finally {
    database.close();
  }
}

/** @returns {Promise<IDBDatabase>} */
function openDatabase() {
  const opening = indexedDB.open(databaseName, 1);
  opening.onupgradeneeded = () => opening.result.createObjectStore(storeName);
  return request(opening);
}

/**
 * @template T
 * @param {IDBRequest<T>} pending
 * @returns {Promise<T>}
 */
function request(pending) {
  return new Promise((resolve, reject) => {
    pending.onsuccess = () => resolve(pending.result);
    pending.onerror = () => reject(pending.error);
  });
}
