import { createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

// An identity provider of the test's own: a JWKS (and discovery) server on loopback, keys from
// node:crypto, tokens signed here. The codec server verifies the Web UI's operator tokens with it.
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const rotated = generateKeyPairSync('rsa', { modulusLength: 2048 });
const audience = 'temporal-ui';
type Algorithm = 'RS256' | 'ES256' | 'HS256' | 'none';

function publicJwk(key: KeyObject, kid: string, alg: 'RS256' | 'ES256'): Record<string, unknown> {
  return { ...key.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

interface IdentityProvider {
  issuer: string;
  jwksUrl: string;
  keys: Record<string, unknown>[];
  /** How many times the JWKS was fetched. */
  jwksFetches: number;
  stop(): Promise<void>;
}

async function startIdentityProvider(): Promise<IdentityProvider> {
  const provider = {
    keys: [publicJwk(rsa.publicKey, 'rsa-1', 'RS256'), publicJwk(ec.publicKey, 'ec-1', 'ES256')],
    jwksFetches: 0,
  } as IdentityProvider;
  const server = createServer((request, response) => {
    response.setHeader('Content-Type', 'application/json');
    if (request.url === '/.well-known/openid-configuration') {
      response.end(JSON.stringify({ issuer: provider.issuer, jwks_uri: `${provider.issuer}/keys` }));
    } else if (request.url === '/keys') {
      provider.jwksFetches += 1;
      response.end(JSON.stringify({ keys: provider.keys }));
    } else {
      response.statusCode = 404;
      response.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  provider.issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  provider.jwksUrl = `${provider.issuer}/keys`;
  provider.stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return provider;
}

const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function signToken(input: {
  alg: Algorithm;
  kid?: string;
  key?: KeyObject;
  secret?: string;
  claims: Record<string, unknown>;
}): string {
  const header = base64url({ alg: input.alg, typ: 'JWT', ...(input.kid ? { kid: input.kid } : {}) });
  const signed = `${header}.${base64url(input.claims)}`;
  const data = Buffer.from(signed);
  const signature =
    input.alg === 'RS256'
      ? sign('sha256', data, input.key!)
      : input.alg === 'ES256'
        ? sign('sha256', data, { key: input.key!, dsaEncoding: 'ieee-p1363' })
        : input.alg === 'HS256'
          ? createHmac('sha256', input.secret!).update(signed).digest()
          : Buffer.alloc(0);
  return `${signed}.${signature.toString('base64url')}`;
}

describe('the codec server, verifying the Web UI’s access tokens', () => {
  let provider: IdentityProvider;
  let jwtServer: CodecServer;
  const clock = Date.now();
  const claimsAt = (now: number, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    iss: provider.issuer,
    aud: [audience, 'account'],
    sub: 'operator-1',
    groups: ['toolgate-operators', 'staff'],
    iat: Math.floor(now / 1000),
    exp: Math.floor(now / 1000) + 300,
    ...extra,
  });
  const claims = (extra: Record<string, unknown> = {}) => claimsAt(clock, extra);
  const rsaToken = (extra: Record<string, unknown> = {}) =>
    signToken({ alg: 'RS256', kid: 'rsa-1', key: rsa.privateKey, claims: claims(extra) });
  const decodeWith = async (bearer: string, url = jwtServer.url) =>
    post({ url, path: '/decode', payloads: [await sealedSecret()], authorization: `Bearer ${bearer}` });

  beforeAll(async () => {
    provider = await startIdentityProvider();
    jwtServer = await startCodecServer({
      codec,
      token,
      jwt: {
        issuer: provider.issuer,
        audience,
        jwksUrl: provider.jwksUrl,
        requiredClaims: { groups: 'toolgate-operators' },
        now: () => clock,
      },
      uiOrigin,
      host: '127.0.0.1',
      port: 0,
    });
  });
  afterAll(async () => {
    await jwtServer?.stop();
    await provider?.stop();
  });

  it('decodes for a valid RS256 or ES256 access token, and still for the static token', async () => {
    const tokens = {
      RS256: rsaToken(),
      ES256: signToken({ alg: 'ES256', kid: 'ec-1', key: ec.privateKey, claims: claims({ aud: audience }) }),
      static: token,
    };
    for (const [name, bearer] of Object.entries(tokens)) {
      const response = await decodeWith(bearer);
      expect(response.status, name).toBe(200);
      const body = (await response.json()) as { payloads: JsonPayload[] };
      expect(defaultPayloadConverter.fromPayload(fromJson(body.payloads[0]!)), name).toEqual(secret);
    }
  });

  it('answers 401 with a code saying why to every token it must not accept, and decodes nothing', async () => {
    const valid = rsaToken();
    const [header, , signature] = valid.split('.');
    const now = Math.floor(clock / 1000);
    const refused: Record<string, [string, string]> = {
      'wrong issuer': [rsaToken({ iss: 'https://login.example.com' }), 'jwt_wrong_issuer'],
      'wrong audience': [rsaToken({ aud: 'another-app' }), 'jwt_wrong_audience'],
      expired: [rsaToken({ iat: now - 900, exp: now - 120 }), 'jwt_expired'],
      'no expiry': [rsaToken({ exp: undefined }), 'jwt_expired'],
      'not yet valid': [rsaToken({ nbf: now + 600, exp: now + 900 }), 'jwt_not_yet_valid'],
      'unknown kid': [
        signToken({ alg: 'RS256', kid: 'stranger', key: rotated.privateKey, claims: claims() }),
        'jwt_unknown_key',
      ],
      'alg none': [signToken({ alg: 'none', kid: 'rsa-1', claims: claims() }), 'jwt_algorithm_not_allowed'],
      // The classic confusion: HMAC keyed with the RSA public key, which anyone can fetch.
      'HS256 with the public key as its secret': [
        signToken({
          alg: 'HS256',
          kid: 'rsa-1',
          secret: rsa.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
          claims: claims(),
        }),
        'jwt_algorithm_not_allowed',
      ],
      'RS256 header on the EC key': [
        signToken({ alg: 'RS256', kid: 'ec-1', key: rsa.privateKey, claims: claims() }),
        'jwt_algorithm_not_allowed',
      ],
      'tampered payload': [
        `${header}.${base64url(claims({ sub: 'admin', exp: now + 86_400 }))}.${signature}`,
        'jwt_bad_signature',
      ],
      'missing required claim': [rsaToken({ groups: ['staff'] }), 'jwt_missing_claim'],
      'not a JWT': ['not-the-token', 'invalid_token'],
    };
    for (const [name, [bearer, code]] of Object.entries(refused)) {
      const response = await decodeWith(bearer);
      expect(response.status, name).toBe(401);
      expect(response.headers.get('www-authenticate'), name).toMatch(/^Bearer realm=.*error="invalid_token"/);
      const text = await response.text();
      expect(text, name).not.toContain('codec-server-marker');
      expect(text, name).not.toContain(bearer);
      expect((JSON.parse(text) as { code: string }).code, name).toBe(code);
    }
    const missing = await post({ path: '/decode', url: jwtServer.url, payloads: [await sealedSecret()] });
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { code: string }).code).toBe('missing_token');
  });

  it('tolerates 60 seconds of clock skew on exp and nbf', async () => {
    const now = Math.floor(clock / 1000);
    expect((await decodeWith(rsaToken({ exp: now - 30 }))).status).toBe(200);
    expect((await decodeWith(rsaToken({ nbf: now + 30 }))).status).toBe(200);
  });

  it('accepts a rotated key once the JWKS is fetched again, and fetches it at most once a minute', async () => {
    const idp = await startIdentityProvider();
    let now = Date.now();
    const server = await startCodecServer({
      codec,
      jwt: { issuer: idp.issuer, audience, jwksUrl: idp.jwksUrl, now: () => now },
      host: '127.0.0.1',
      port: 0,
    });
    const tokenOf = (kid: string, key: KeyObject) =>
      signToken({ alg: 'RS256', kid, key, claims: { ...claimsAt(now), iss: idp.issuer } });
    const flood = async (count: number) =>
      Promise.all(
        Array.from(
          { length: count },
          async (_, index) =>
            (await decodeWith(tokenOf(`unknown-${now}-${index}`, rotated.privateKey), server.url)).status,
        ),
      );
    try {
      expect((await decodeWith(tokenOf('rsa-1', rsa.privateKey), server.url)).status).toBe(200);
      expect(idp.jwksFetches).toBe(1);

      // Unknown kids within the minute of the last fetch: refused, and the provider is left alone.
      expect(new Set(await flood(30))).toEqual(new Set([401]));
      expect(idp.jwksFetches).toBe(1);

      // The provider rotates: a new key appears in its JWKS and signs the next tokens.
      idp.keys = [...idp.keys, publicJwk(rotated.publicKey, 'rsa-2', 'RS256')];
      now += 61_000;
      expect((await decodeWith(tokenOf('rsa-2', rotated.privateKey), server.url)).status).toBe(200);
      expect(idp.jwksFetches).toBe(2);
      expect((await decodeWith(tokenOf('rsa-2', rotated.privateKey), server.url)).status).toBe(200);
      expect(idp.jwksFetches).toBe(2);

      // A flood of unknown kids a minute later: one fetch for all of them, then none.
      now += 61_000;
      expect(new Set(await flood(30))).toEqual(new Set([401]));
      expect(idp.jwksFetches).toBe(3);
      expect(new Set(await flood(30))).toEqual(new Set([401]));
      expect(idp.jwksFetches).toBe(3);

      // The cache lasts ten minutes: then the keys are fetched again even for a known kid.
      now += 10 * 60_000;
      expect((await decodeWith(tokenOf('rsa-1', rsa.privateKey), server.url)).status).toBe(200);
      expect(idp.jwksFetches).toBe(4);
    } finally {
      await server.stop();
      await idp.stop();
    }
  });

  it('logs who decoded how many payloads (never a token or payload), and warns when no claim is required', async () => {
    const lines: string[] = [];
    const server = await startCodecServer({
      codec,
      token,
      jwt: {
        issuer: provider.issuer,
        audience,
        jwksUrl: provider.jwksUrl,
        requiredClaims: { groups: 'toolgate-operators' },
        now: () => clock,
      },
      host: '127.0.0.1',
      port: 0,
      log: (line) => lines.push(line),
    });
    try {
      expect(lines).toEqual([]);
      expect((await decodeWith(rsaToken(), server.url)).status).toBe(200);
      expect((await decodeWith(token, server.url)).status).toBe(200);
      expect((await decodeWith(rsaToken({ groups: ['staff'] }), server.url)).status).toBe(401);
      const namespaced = await post({
        url: server.url,
        path: '/orders-prod/decode',
        payloads: [await sealedSecret(), await sealedSecret()],
        authorization: `Bearer ${rsaToken({ sub: 'operator-2' })}`,
      });
      expect(namespaced.status).toBe(200);
      expect(lines).toEqual([
        'decode: 1 payload for subject "operator-1" in namespace "default"',
        'decode: 1 payload for the codec token in namespace "default"',
        'decode: 2 payloads for subject "operator-2" in namespace "orders-prod"',
      ]);
      expect(lines.join('\n')).not.toMatch(/Ana Souza|ORD-1001|codec-server-marker/);
    } finally {
      await server.stop();
    }
    const open: string[] = [];
    const unrestricted = await startCodecServer({
      codec,
      jwt: { issuer: provider.issuer, audience, jwksUrl: provider.jwksUrl },
      host: '127.0.0.1',
      port: 0,
      log: (line) => open.push(line),
    });
    await unrestricted.stop();
    expect(open).toEqual([
      `warning: every holder of an access token from ${provider.issuer} for ${audience} may decrypt payloads: require an operators' group with --jwt-claim (e.g. groups=toolgate-operators)`,
    ]);
  });

  it("finds the keys through the issuer's OpenID discovery document when no JWKS URL is given", async () => {
    const server = await startCodecServer({
      codec,
      jwt: { issuer: provider.issuer, audience },
      host: '127.0.0.1',
      port: 0,
    });
    try {
      const es256 = signToken({
        alg: 'ES256',
        kid: 'ec-1',
        key: ec.privateKey,
        claims: claimsAt(Date.now()),
      });
      expect((await decodeWith(es256, server.url)).status).toBe(200);
      // Only JWTs: no static token is configured, so nothing else opens it.
      expect((await decodeWith(token, server.url)).status).toBe(401);
    } finally {
      await server.stop();
    }
  });

  it('refuses to start with an issuer that is not https outside loopback, or without an audience', async () => {
    await expect(
      startCodecServer({ codec, jwt: { issuer: 'http://login.example.com', audience }, port: 0 }),
    ).rejects.toThrow(/https/);
    await expect(
      startCodecServer({ codec, jwt: { issuer: 'https://login.example.com', audience: '' }, port: 0 }),
    ).rejects.toThrow(/--jwt-audience/);
    await expect(
      startCodecServer({
        codec,
        jwt: { issuer: 'https://login.example.com', audience, jwksUrl: 'http://keys.example.com/jwks' },
        port: 0,
      }),
    ).rejects.toThrow(/--jwks-url/);
  });

  it('are configured by the CLI from its flags and environment', async () => {
    const names = [
      'TOOLGATE_CODEC_KEYS',
      'TOOLGATE_CODEC_TOKEN',
      'TOOLGATE_CODEC_JWT_ISSUER',
      'TOOLGATE_CODEC_JWT_AUDIENCE',
      'TOOLGATE_CODEC_JWKS_URL',
      'TOOLGATE_CODEC_JWT_CLAIM',
    ];
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    const keys = generateCodecKeyLine({ id: 'cli-jwt' });
    process.env.TOOLGATE_CODEC_KEYS = keys;
    delete process.env.TOOLGATE_CODEC_TOKEN;
    process.env.TOOLGATE_CODEC_JWT_ISSUER = provider.issuer;
    process.env.TOOLGATE_CODEC_JWKS_URL = provider.jwksUrl;
    delete process.env.TOOLGATE_CODEC_JWT_CLAIM;
    delete process.env.TOOLGATE_CODEC_JWT_AUDIENCE;
    const stop = new AbortController();
    let announced: (url: string) => void = () => undefined;
    const url = new Promise<string>((resolve) => (announced = resolve));
    let errors = '';
    try {
      // An issuer without an audience is a configuration error, said before anything listens.
      expect(
        await runCli(['codec-server', '--port', '0'], {
          out: () => undefined,
          error: (text) => (errors += text),
        }),
      ).toBe(2);
      expect(errors).toContain('--jwt-audience');

      process.env.TOOLGATE_CODEC_JWT_AUDIENCE = audience;
      const running = runCli(
        ['codec-server', '--port', '0', '--jwt-claim', 'groups=toolgate-operators'],
        {
          out: (text) => {
            const match = /codec server on (http:\/\/\S+)/.exec(text);
            if (match) announced(match[1]!);
          },
          error: () => undefined,
        },
        { signal: stop.signal },
      );
      try {
        const cliCodec = new PayloadEncryptionCodec({ keys: parseCodecKeys({ text: keys }) });
        const [sealed] = await cliCodec.encode([defaultPayloadConverter.toPayload(secret)]);
        const now = Date.now();
        const base = { iss: provider.issuer, aud: audience, exp: Math.floor(now / 1000) + 300 };
        const send = (claims: Record<string, unknown>) =>
          url.then((at) =>
            post({
              url: at,
              path: '/decode',
              payloads: [toJson(sealed!)],
              authorization: `Bearer ${signToken({ alg: 'RS256', kid: 'rsa-1', key: rsa.privateKey, claims })}`,
            }),
          );
        expect((await send({ ...base, groups: ['toolgate-operators'] })).status).toBe(200);
        expect((await send({ ...base, groups: ['staff'] })).status).toBe(401);
      } finally {
        stop.abort();
        expect(await running).toBe(0);
      }
    } finally {
      for (const name of names) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });
});
