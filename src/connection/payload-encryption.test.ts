import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import {
  encryptedPayloadEncoding,
  encryptionKeyIdMetadata,
  generateCodecKeyLine,
  parseCodecKeys,
  PayloadEncryptionCodec,
} from './payload-encryption';

const key = (id: string) => ({ id, key: randomBytes(32) });
const text = (bytes: Uint8Array | null | undefined) =>
  Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
const secret = { customer: 'Ana Souza', note: 'refund-marker-7f3a' };

async function encrypted(codec: PayloadEncryptionCodec, value: unknown = secret): Promise<Payload> {
  const [payload] = await codec.encode([defaultPayloadConverter.toPayload(value)]);
  return payload!;
}

describe('the payload encryption codec', () => {
  it('round-trips a payload, metadata included, and leaves no plaintext in what it writes', async () => {
    const codec = new PayloadEncryptionCodec({ keys: [key('k1')] });
    const original = defaultPayloadConverter.toPayload(secret);
    const sealed = await encrypted(codec);
    expect(text(sealed.metadata?.encoding)).toBe(encryptedPayloadEncoding);
    expect(text(sealed.metadata?.[encryptionKeyIdMetadata])).toBe('k1');
    expect(Buffer.from(sealed.data!).includes('refund-marker-7f3a')).toBe(false);
    expect(Buffer.from(sealed.data!).includes('json/plain')).toBe(false);
    const [opened] = await codec.decode([sealed]);
    expect(text(opened!.metadata?.encoding)).toBe(text(original.metadata?.encoding));
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual(secret);
  });

  it('seals the payload in protobuf wire format, so any codec that decodes Temporal payloads reads it', async () => {
    const codec = new PayloadEncryptionCodec({ keys: [key('k1')] });
    const original = defaultPayloadConverter.toPayload(secret);
    // The SDK's own encoder and decoder agree with the codec's, both ways.
    const viaProto = temporal.api.common.v1.Payload.decode(
      temporal.api.common.v1.Payload.encode(original).finish(),
    );
    const [opened] = await codec.decode([await encrypted(codec)]);
    expect(text(opened!.data)).toBe(text(viaProto.data));
    expect(Object.keys(opened!.metadata ?? {})).toEqual(Object.keys(viaProto.metadata ?? {}));
  });

  it('draws a fresh nonce for every payload: the same value never encrypts to the same bytes', async () => {
    const codec = new PayloadEncryptionCodec({ keys: [key('k1')] });
    const [first, second] = await Promise.all([encrypted(codec), encrypted(codec)]);
    expect(Buffer.from(first.data!).equals(Buffer.from(second.data!))).toBe(false);
  });

  it('decrypts what an older key encrypted after a new key became active (rotation)', async () => {
    const old = key('2025-old');
    const before = new PayloadEncryptionCodec({ keys: [old] });
    const sealedBefore = await encrypted(before);
    const rotated = new PayloadEncryptionCodec({ keys: [key('2026-new'), old] });
    const sealedAfter = await encrypted(rotated);
    expect(text(sealedAfter.metadata?.[encryptionKeyIdMetadata])).toBe('2026-new');
    const [fromOld, fromNew] = await rotated.decode([sealedBefore, sealedAfter]);
    expect(defaultPayloadConverter.fromPayload(fromOld!)).toEqual(secret);
    expect(defaultPayloadConverter.fromPayload(fromNew!)).toEqual(secret);
  });

  it('refuses a payload encrypted with a key it does not know, naming that key id', async () => {
    const sealed = await encrypted(new PayloadEncryptionCodec({ keys: [key('retired-key')] }));
    const other = new PayloadEncryptionCodec({ keys: [key('current-key')] });
    await expect(other.decode([sealed])).rejects.toThrow(/key "retired-key", which this codec does not know/);
  });

  it('refuses tampered ciphertext, and a payload relabelled with another known key id', async () => {
    const codec = new PayloadEncryptionCodec({ keys: [key('a'), key('b')] });
    const sealed = await encrypted(codec);
    const flipped = Buffer.from(sealed.data!);
    flipped[20] = flipped[20]! ^ 0x01;
    await expect(codec.decode([{ ...sealed, data: flipped }])).rejects.toThrow(/failed authentication/);
    const relabelled = {
      ...sealed,
      metadata: { ...sealed.metadata, [encryptionKeyIdMetadata]: Buffer.from('b') },
    };
    await expect(codec.decode([relabelled])).rejects.toThrow(/key "b" failed authentication/);
  });

  it('passes payloads that were never encrypted through decode unchanged', async () => {
    const codec = new PayloadEncryptionCodec({ keys: [key('k1')] });
    const plain = defaultPayloadConverter.toPayload({ written: 'before the codec' });
    const [decoded] = await codec.decode([plain]);
    expect(decoded).toBe(plain);
  });
});

describe('codec keys in TOOLGATE_CODEC_KEYS form', () => {
  it('parses <id>:<base64> entries, the first one active', () => {
    const first = generateCodecKeyLine({ id: 'new' });
    const second = generateCodecKeyLine({ id: 'old' });
    const keys = parseCodecKeys({ text: ` ${first} , ${second} ` });
    expect(keys.map((entry) => entry.id)).toEqual(['new', 'old']);
    expect(keys.every((entry) => entry.key.length === 32)).toBe(true);
    expect(new PayloadEncryptionCodec({ keys }).activeKeyId).toBe('new');
  });

  it('refuses malformed values with a message that says what to write', () => {
    const write = /write "<id>:<base64 of 32 random bytes>"/;
    expect(() => parseCodecKeys({ text: '' })).toThrow(write);
    expect(() => parseCodecKeys({ text: randomBytes(32).toString('base64') })).toThrow(/no "<id>:" prefix/);
    expect(() => parseCodecKeys({ text: `k1:${randomBytes(16).toString('base64')}` })).toThrow(
      /key "k1" is not 32 bytes of base64 \(got 16 bytes\)/,
    );
    expect(() => parseCodecKeys({ text: 'k1:not base64!' })).toThrow(/TOOLGATE_CODEC_KEYS: key "k1"/);
    const line = generateCodecKeyLine({ id: 'twice' });
    expect(() => parseCodecKeys({ text: `${line},${line}` })).toThrow(/"twice" appears twice/);
    // A key and its id written the wrong way round: refused without printing the key to the logs.
    const key = randomBytes(32).toString('base64');
    let swapped: unknown;
    try {
      parseCodecKeys({ text: `${key}:prod-1` });
    } catch (error) {
      swapped = error;
    }
    expect((swapped as Error).name).toBe('ConfigurationError');
    expect((swapped as Error).message).toMatch(/no usable id .*is the line written as <id>:<key>\?/);
    expect((swapped as Error).message).not.toContain(key.slice(0, 12));
    try {
      parseCodecKeys({ text: 'k1:short' });
    } catch (error) {
      expect((error as Error).name).toBe('ConfigurationError');
      expect((error as Error).message).toMatch(write);
    }
  });
});
