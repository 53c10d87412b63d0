import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateCodecKeyLine,
  parseCodecKeys,
  PayloadEncryptionCodec,
  runCli,
  startCodecServer,
} from 'toolgate';
import type { CodecServer, JsonPayload } from 'toolgate';

const uiOrigin = 'http://127.0.0.1:8233';
const token = randomBytes(24).toString('base64url');
const codec = new PayloadEncryptionCodec({ keys: [{ id: 'ops-key', key: randomBytes(32) }] });
const secret = { customer: 'Ana Souza', order: 'ORD-1001', label: 'codec-server-marker' };
let server: CodecServer;

beforeAll(async () => {
  server = await startCodecServer({ codec, token, uiOrigin, host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await server?.stop();
});

const toJson = (payload: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([name, value]) => [
      name,
      Buffer.from(value).toString('base64'),
    ]),
  ),
  data: Buffer.from(payload.data ?? []).toString('base64'),
});
const fromJson = (payload: JsonPayload): Payload => ({
  metadata: Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([name, value]) => [name, Buffer.from(value, 'base64')]),
  ),
  data: Buffer.from(payload.data ?? '', 'base64'),
});

async function post(input: {
  path: string;
  payloads: JsonPayload[];
  authorization?: string;
  origin?: string;
  url?: string;
}): Promise<Response> {
  return fetch(`${input.url ?? server.url}${input.path}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Namespace': 'default',
      ...(input.authorization !== undefined ? { Authorization: input.authorization } : {}),
      ...(input.origin !== undefined ? { Origin: input.origin } : {}),
    },
    body: JSON.stringify({ payloads: input.payloads }),
  });
}

async function sealedSecret(): Promise<JsonPayload> {
  const [sealed] = await codec.encode([defaultPayloadConverter.toPayload(secret)]);
  return toJson(sealed!);
}

describe('the codec server, over HTTP', () => {
  it('decodes the payloads the Web UI sends for a bearer of the token', async () => {
    const response = await post({
      path: '/decode',
      payloads: [await sealedSecret()],
      authorization: `Bearer ${token}`,
      origin: uiOrigin,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(uiOrigin);
    const body = (await response.json()) as { payloads: JsonPayload[] };
    expect(body.payloads).toHaveLength(1);
    const payload = fromJson(body.payloads[0]!);
    expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe('json/plain');
    expect(defaultPayloadConverter.fromPayload(payload)).toEqual(secret);
  });

  it('encodes too, and answers under a namespace path as the Temporal CLI sends it', async () => {
    const plain = toJson(defaultPayloadConverter.toPayload(secret));
    const encoded = await post({ path: '/encode', payloads: [plain], authorization: `Bearer ${token}` });
    expect(encoded.status).toBe(200);
    const sealed = ((await encoded.json()) as { payloads: JsonPayload[] }).payloads;
    expect(Buffer.from(sealed[0]!.data!, 'base64').includes('codec-server-marker')).toBe(false);
    const decoded = await post({
      path: '/default/decode',
      payloads: sealed,
      authorization: `Bearer ${token}`,
    });
    const body = (await decoded.json()) as { payloads: JsonPayload[] };
    expect(defaultPayloadConverter.fromPayload(fromJson(body.payloads[0]!))).toEqual(secret);
  });

  it('answers 401 to a missing or wrong token, and decodes nothing', async () => {
    const payloads = [await sealedSecret()];
    for (const authorization of [undefined, 'Bearer not-the-token', `Basic ${token}`, token]) {
      const response = await post({ path: '/decode', payloads, ...(authorization ? { authorization } : {}) });
      expect(response.status, String(authorization)).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await response.text()).not.toContain('codec-server-marker');
    }
  });

  it('lets the Web UI origin preflight with Authorization and X-Namespace, and no other origin', async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/decode`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'authorization,content-type,x-namespace',
        },
      });
    const allowed = await preflight(uiOrigin);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(uiOrigin);
    expect(allowed.headers.get('access-control-allow-methods')).toContain('POST');
    const headers = allowed.headers.get('access-control-allow-headers')!.toLowerCase();
    for (const header of ['authorization', 'content-type', 'x-namespace']) expect(headers).toContain(header);

    const other = await preflight('http://evil.example');
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // Even with the token, a page from another origin gets nothing decoded.
    const fromOther = await post({
      path: '/decode',
      payloads: [await sealedSecret()],
      authorization: `Bearer ${token}`,
      origin: 'http://evil.example',
    });
    expect(fromOther.status).toBe(403);
    expect(await fromOther.text()).not.toContain('codec-server-marker');
  });

  it('says which key it lacks when a payload was encrypted with a key it does not know', async () => {
    const stranger = new PayloadEncryptionCodec({ keys: [{ id: 'retired-2024', key: randomBytes(32) }] });
    const [sealed] = await stranger.encode([defaultPayloadConverter.toPayload(secret)]);
    const response = await post({
      path: '/decode',
      payloads: [toJson(sealed!)],
      authorization: `Bearer ${token}`,
    });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { error: string }).error).toMatch(/key "retired-2024"/);
  });

  it('refuses to start without a token, and without auth anywhere but loopback', async () => {
    await expect(startCodecServer({ codec, port: 0 })).rejects.toThrow(/set TOOLGATE_CODEC_TOKEN/);
    await expect(startCodecServer({ codec, insecureNoAuth: true, host: '0.0.0.0', port: 0 })).rejects.toThrow(
      /only accepted on a loopback host/,
    );
    const open = await startCodecServer({ codec, insecureNoAuth: true, host: '127.0.0.1', port: 0 });
    try {
      const response = await post({ url: open.url, path: '/decode', payloads: [await sealedSecret()] });
      expect(response.status).toBe(200);
    } finally {
      await open.stop();
    }
  });
});

describe('the codec commands', () => {
  it('print a key line that TOOLGATE_CODEC_KEYS accepts', async () => {
    let out = '';
    const code = await runCli(['codec', 'key', '--id', 'rotation-2026'], {
      out: (text) => (out += text),
      error: () => undefined,
    });
    expect(code).toBe(0);
    const [key] = parseCodecKeys({ text: out.trim() });
    expect(key).toMatchObject({ id: 'rotation-2026' });
    expect(key!.key).toHaveLength(32);
  });

  it('serve the codec with the keys and token of the environment until stopped', async () => {
    const keys = `${generateCodecKeyLine({ id: 'cli-new' })},${generateCodecKeyLine({ id: 'cli-old' })}`;
    const saved = { keys: process.env.TOOLGATE_CODEC_KEYS, token: process.env.TOOLGATE_CODEC_TOKEN };
    process.env.TOOLGATE_CODEC_KEYS = keys;
    process.env.TOOLGATE_CODEC_TOKEN = token;
    const stop = new AbortController();
    let out = '';
    let announced: (url: string) => void = () => undefined;
    const url = new Promise<string>((resolve) => (announced = resolve));
    const running = runCli(
      ['codec-server', '--port', '0', '--ui-origin', uiOrigin],
      {
        out: (text) => {
          out += text;
          const match = /codec server on (http:\/\/\S+)/.exec(text);
          if (match) announced(match[1]!);
        },
        error: () => undefined,
      },
      { signal: stop.signal },
    );
    try {
      const cliCodec = new PayloadEncryptionCodec({ keys: parseCodecKeys({ text: keys }).slice(1) });
      const [sealed] = await cliCodec.encode([defaultPayloadConverter.toPayload(secret)]);
      const response = await post({
        url: await url,
        path: '/decode',
        payloads: [toJson(sealed!)],
        authorization: `Bearer ${token}`,
      });
      expect(response.status).toBe(200);
      expect(out).toContain('active cli-new');
    } finally {
      stop.abort();
      expect(await running).toBe(0);
      process.env.TOOLGATE_CODEC_KEYS = saved.keys;
      process.env.TOOLGATE_CODEC_TOKEN = saved.token;
      if (saved.keys === undefined) delete process.env.TOOLGATE_CODEC_KEYS;
      if (saved.token === undefined) delete process.env.TOOLGATE_CODEC_TOKEN;
    }
  });
});
