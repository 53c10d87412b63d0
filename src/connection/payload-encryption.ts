// Payload encryption for Temporal: every payload a client or worker writes (arguments, previews,
// results: customer data) is sealed with AES-256-GCM before it reaches the server, so history and
// visibility hold ciphertext. The key id travels in the payload's metadata: keys rotate by adding a
// new active key while older ones stay known for decryption.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { ConfigurationError } from '../policy/load-policy';

/** The `encoding` metadata of an encrypted payload. */
export const encryptedPayloadEncoding = 'binary/encrypted';
/** The metadata field that names the key a payload was encrypted with. */
export const encryptionKeyIdMetadata = 'encryption-key-id';
/** The environment variable with the codec's keys: `<id>:<base64 of 32 bytes>`, comma-separated, the first active. */
export const codecKeysEnvironmentVariable = 'TOOLGATE_CODEC_KEYS';

/** One AES-256 key and the id payloads name it by. */
export interface PayloadEncryptionKey {
  id: string;
  /** 32 bytes. */
  key: Uint8Array;
}

/** Why a payload could not be decrypted; its message names the key id and what to do. */
export class PayloadEncryptionError extends Error {
  override readonly name = 'PayloadEncryptionError';
}

const ivLength = 12;
const tagLength = 16;
const keyLength = 32;
const keyIdPattern = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * A payload codec that encrypts with the active key (the first one) and decrypts with any key it
 * knows. The whole payload (its metadata too) is sealed; the key id is bound to the ciphertext as
 * associated data, so a payload relabelled with another key id, or altered in any byte, is refused.
 * Payloads that are not encrypted pass through `decode` unchanged (histories written before the
 * codec was configured still read).
 */
export class PayloadEncryptionCodec implements PayloadCodec {
  readonly activeKeyId: string;
  private readonly keys: ReadonlyMap<string, Buffer>;

  constructor(input: { keys: readonly PayloadEncryptionKey[] }) {
    const checked = checkKeys({ keys: input.keys, source: 'PayloadEncryptionCodec' });
    this.activeKeyId = checked[0]!.id;
    this.keys = new Map(checked.map((entry) => [entry.id, Buffer.from(entry.key)]));
  }

  /** The ids of every key this codec decrypts with, the active one first. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  encode(payloads: Payload[]): Promise<Payload[]> {
    // A refusal rejects the promise; it never throws synchronously.
    return Promise.resolve().then(() => payloads.map((payload) => this.encrypt(payload)));
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.resolve().then(() => payloads.map((payload) => this.decrypt(payload)));
  }

  private encrypt(payload: Payload): Payload {
    const keyId = this.activeKeyId;
    const iv = randomBytes(ivLength);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(keyId)!, iv);
    cipher.setAAD(Buffer.from(keyId, 'utf8'));
    const plaintext = encodePayload(payload);
    const sealed = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: Buffer.from(encryptedPayloadEncoding, 'utf8'),
        [encryptionKeyIdMetadata]: Buffer.from(keyId, 'utf8'),
      },
      data: sealed,
    };
  }

  private decrypt(payload: Payload): Payload {
    const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
    if (!encoding || Buffer.from(encoding).toString('utf8') !== encryptedPayloadEncoding) return payload;
    const keyIdBytes = payload.metadata?.[encryptionKeyIdMetadata];
    if (!keyIdBytes) {
      throw new PayloadEncryptionError(
        `an encrypted payload has no "${encryptionKeyIdMetadata}" metadata; it was not written by this codec`,
      );
    }
    const keyId = Buffer.from(keyIdBytes).toString('utf8');
    const key = this.keys.get(keyId);
    if (!key) {
      throw new PayloadEncryptionError(
        `a payload is encrypted with key "${keyId}", which this codec does not know ` +
          `(it knows ${this.keyIds.map((id) => `"${id}"`).join(', ')}); ` +
          `add that key after the active one in ${codecKeysEnvironmentVariable} or the config's codec.keys`,
      );
    }
    const sealed = Buffer.from(payload.data ?? new Uint8Array());
    if (sealed.length < ivLength + tagLength) {
      throw new PayloadEncryptionError(`a payload encrypted with key "${keyId}" is truncated`);
    }
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, ivLength));
    decipher.setAAD(Buffer.from(keyId, 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - tagLength));
    let plaintext: Buffer;
    try {
      plaintext = Buffer.concat([
        decipher.update(sealed.subarray(ivLength, sealed.length - tagLength)),
        decipher.final(),
      ]);
    } catch {
      throw new PayloadEncryptionError(
        `a payload encrypted with key "${keyId}" failed authentication: it was altered, or the key ` +
          `with that id is not the one that encrypted it`,
      );
    }
    return decodePayload(plaintext);
  }
}

/**
 * Parses `TOOLGATE_CODEC_KEYS` (or any text in its form): `<id>:<base64 of 32 bytes>`, comma-separated,
 * the first active. A malformed value throws a `ConfigurationError` that says what to write.
 */
export function parseCodecKeys(input: { text: string; source?: string }): PayloadEncryptionKey[] {
  const source = input.source ?? codecKeysEnvironmentVariable;
  const hint = `write "<id>:<base64 of 32 random bytes>", comma-separated, the active key first (toolgate codec key prints one)`;
  const entries = input.text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  if (entries.length === 0) throw new ConfigurationError(`${source}: no key; ${hint}`);
  const keys = entries.map((entry, index) => {
    const separator = entry.indexOf(':');
    if (separator <= 0) {
      throw new ConfigurationError(`${source}: key ${index + 1} has no "<id>:" prefix; ${hint}`);
    }
    return { id: entry.slice(0, separator), key: decodeKey(entry.slice(separator + 1)) };
  });
  return checkKeys({ keys, source, hint });
}

/** Keys in the form `TOOLGATE_CODEC_KEYS` takes (`<id>:<base64>`, comma-separated, in order): `parseCodecKeys` reads it back. */
export function formatCodecKeys(keys: readonly PayloadEncryptionKey[]): string {
  return keys.map((entry) => `${entry.id}:${Buffer.from(entry.key).toString('base64')}`).join(',');
}

/** Checks keys given as `{ id, key }` with the key in base64 (the config's `codec.keys`). */
export function codecKeysFromConfig(input: {
  keys: readonly { id: string; key: string }[];
  source: string;
}): PayloadEncryptionKey[] {
  const hint = `give codec.keys as [{ id: "<id>", key: "<base64 of 32 random bytes>" }], the active key first`;
  // A config is JavaScript too: its shape is checked here, not only by the type.
  const entries: unknown = input.keys;
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new ConfigurationError(`${input.source}: codec.keys is empty; ${hint}`);
  }
  return checkKeys({
    keys: (entries as unknown[]).map((entry) => {
      const { id, key } = (typeof entry === 'object' && entry !== null ? entry : {}) as {
        id?: unknown;
        key?: unknown;
      };
      return { id: typeof id === 'string' ? id : '', key: decodeKey(typeof key === 'string' ? key : '') };
    }),
    source: `${input.source}: codec.keys`,
    hint,
  });
}

/** A new key in the form `TOOLGATE_CODEC_KEYS` takes: `<id>:<base64 of 32 random bytes>`. */
export function generateCodecKeyLine(input: { id?: string } = {}): string {
  const id = input.id ?? `key-${new Date().toISOString().slice(0, 10)}-${randomBytes(3).toString('hex')}`;
  if (!keyIdPattern.test(id)) {
    throw new ConfigurationError(`key id "${id}": use 1 to 64 letters, digits, ".", "_" or "-"`);
  }
  return `${id}:${randomBytes(keyLength).toString('base64')}`;
}

function decodeKey(text: string): Uint8Array {
  const trimmed = text.trim();
  // Buffer.from(..., 'base64') skips what is not base64: check the text itself first.
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return new Uint8Array();
  return Buffer.from(trimmed, 'base64');
}

function checkKeys(input: {
  keys: readonly PayloadEncryptionKey[];
  source: string;
  hint?: string;
}): PayloadEncryptionKey[] {
  const hint = input.hint ?? 'give at least one { id, key } with a 32-byte key, the active key first';
  if (input.keys.length === 0) throw new ConfigurationError(`${input.source}: no key; ${hint}`);
  const seen = new Set<string>();
  for (const [index, entry] of input.keys.entries()) {
    if (!keyIdPattern.test(entry.id)) {
      throw new ConfigurationError(
        // The id is not echoed: a key and its id written the wrong way round would print the key.
        `${input.source}: key ${index + 1} has no usable id (${entry.id.length} characters); an id is 1 to 64 letters, digits, ".", "_" or "-" (is the line written as <id>:<key>?); ${hint}`,
      );
    }
    if (seen.has(entry.id)) {
      throw new ConfigurationError(`${input.source}: the key id "${entry.id}" appears twice; ${hint}`);
    }
    seen.add(entry.id);
    if (entry.key.length !== keyLength) {
      throw new ConfigurationError(
        `${input.source}: key "${entry.id}" is not 32 bytes of base64 (got ${entry.key.length} bytes); ${hint}`,
      );
    }
  }
  return input.keys.map((entry) => ({ id: entry.id, key: entry.key }));
}

// The sealed plaintext is the payload in protobuf's wire format (Temporal's `Payload`: field 1, the
// metadata map of string to bytes; field 2, the data), so any codec that seals the encoded message
// reads it. Written out here because @temporalio/proto is not one of the package's dependencies.

/** `Payload` in protobuf's wire format: its metadata entries, then its data. */
function encodePayload(payload: Payload): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(payload.metadata ?? {})) {
    const entry = Buffer.concat([
      lengthDelimited(1, Buffer.from(name, 'utf8')),
      lengthDelimited(2, Buffer.from(value ?? new Uint8Array())),
    ]);
    parts.push(lengthDelimited(1, entry));
  }
  if (payload.data && payload.data.length > 0) parts.push(lengthDelimited(2, Buffer.from(payload.data)));
  return Buffer.concat(parts);
}

/** Reads what `encodePayload` wrote (or any encoder of `Payload`); fields it does not know are skipped. */
function decodePayload(bytes: Buffer): Payload {
  const metadata: Record<string, Uint8Array> = {};
  let data: Uint8Array | undefined;
  for (const field of fieldsOf(bytes)) {
    if (field.number === 1 && field.value) {
      let name = '';
      let value: Uint8Array = new Uint8Array();
      for (const entryField of fieldsOf(field.value)) {
        if (entryField.number === 1 && entryField.value) name = entryField.value.toString('utf8');
        if (entryField.number === 2 && entryField.value) value = new Uint8Array(entryField.value);
      }
      metadata[name] = value;
    } else if (field.number === 2 && field.value) {
      data = new Uint8Array(field.value);
    }
  }
  return { metadata, ...(data ? { data } : {}) };
}

function lengthDelimited(fieldNumber: number, value: Buffer): Buffer {
  return Buffer.concat([varint((fieldNumber << 3) | 2), varint(value.length), value]);
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest > 0x7f) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** The fields of one protobuf message; length-delimited ones carry their bytes, others are skipped. */
function* fieldsOf(bytes: Buffer): Generator<{ number: number; value?: Buffer }> {
  let offset = 0;
  const readVarint = (): number => {
    let result = 0;
    let factor = 1;
    for (;;) {
      if (offset >= bytes.length) throw new PayloadEncryptionError('a decrypted payload is malformed');
      const byte = bytes[offset++]!;
      result += (byte & 0x7f) * factor;
      if (byte < 0x80) return result;
      factor *= 128;
    }
  };
  while (offset < bytes.length) {
    const tag = readVarint();
    const wireType = tag & 7;
    const number = Math.floor(tag / 8);
    if (wireType === 0) {
      readVarint();
      yield { number };
    } else if (wireType === 1 || wireType === 5) {
      offset += wireType === 1 ? 8 : 4;
      yield { number };
    } else if (wireType === 2) {
      const length = readVarint();
      if (offset + length > bytes.length)
        throw new PayloadEncryptionError('a decrypted payload is malformed');
      const value = bytes.subarray(offset, offset + length);
      offset += length;
      yield { number, value };
    } else {
      throw new PayloadEncryptionError('a decrypted payload is malformed');
    }
  }
}
