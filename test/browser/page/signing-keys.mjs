// The approver's signing key in the browser: a non-extractable Ed25519 key made by WebCrypto, kept in
// IndexedDB, signing the same bytes as toolgate's `signedText({ kind: 'decision', value })`
// (src/shared/signatures.ts). Plain ES for the approvals console to serve as it is.
/* global crypto, indexedDB, TextEncoder, btoa */
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
 * The exact text signed for a decision: `"toolgate/v1/decision\n" + canonicalJson(envelope)`.
 * @param {object} envelope
 * @returns {string}
 */
export function decisionText(envelope) {
  return `toolgate/v1/decision\n${canonicalJson(envelope)}`;
}

/**
 * Signs a decision envelope; the signature is base64url without padding, as toolgate expects.
 * @param {{ privateKey: CryptoKey, envelope: object }} input
 * @returns {Promise<string>}
 */
export async function signDecision({ privateKey, envelope }) {
  const bytes = new TextEncoder().encode(decisionText(envelope));
  const signature = new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, bytes));
  return btoa(String.fromCharCode(...signature))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/**
 * Stores the key pair under `id` (replacing one stored before). IndexedDB keeps the CryptoKey
 * objects themselves, so the private key stays non-extractable at rest.
 * @param {{ id: string, keyPair: CryptoKeyPair }} input
 * @returns {Promise<void>}
 */
export async function saveSigningKey({ id, keyPair }) {
  const database = await openDatabase();
  try {
    const transaction = database.transaction(storeName, 'readwrite');
    transaction.objectStore(storeName).put(keyPair, id);
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
    return await request(database.transaction(storeName, 'readonly').objectStore(storeName).get(id));
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
