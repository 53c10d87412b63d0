import { generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createJwtVerifier, JwtVerificationError, parseRequiredClaims } from './jwt-verifier';

const issuer = 'https://login.example.com/';
const audience = 'temporal-ui';
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const small = generateKeyPairSync('rsa', { modulusLength: 1024 });

const encode = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
function tokenOf(kid: string, key: KeyObject, claims: Record<string, unknown>): string {
  const signed = `${encode({ alg: 'RS256', kid })}.${encode(claims)}`;
  return `${signed}.${sign('sha256', Buffer.from(signed), key).toString('base64url')}`;
}
const claims = (extra: Record<string, unknown> = {}) => ({
  iss: issuer,
  aud: audience,
  exp: Math.floor(Date.now() / 1000) + 300,
  ...extra,
});

/** A fetch that answers from a table of URL → JSON (404 for the rest) and records what was asked. */
function fakeFetch(routes: Record<string, unknown>, asked: string[] = []): typeof fetch {
  return async (input: string | URL | Request) => {
    const url = input instanceof Request ? input.url : input.toString();
    asked.push(url);
    return url in routes
      ? new Response(JSON.stringify(routes[url]), { status: 200 })
      : new Response('{}', { status: 404 });
  };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(JwtVerificationError);
  return (error as JwtVerificationError).code;
}

describe('createJwtVerifier', () => {
  it('falls back to <issuer>/.well-known/jwks.json without a discovery document', async () => {
    const asked: string[] = [];
    const verifier = createJwtVerifier({
      issuer,
      audience,
      fetch: fakeFetch(
        {
          'https://login.example.com/.well-known/jwks.json': {
            keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1' }],
          },
        },
        asked,
      ),
    });
    await expect(verifier.verify(tokenOf('k1', rsa.privateKey, claims()))).resolves.toMatchObject({
      iss: issuer,
    });
    expect(asked).toEqual([
      'https://login.example.com/.well-known/openid-configuration',
      'https://login.example.com/.well-known/jwks.json',
    ]);
  });

  it('ignores RSA keys under 2048 bits and says when the JWKS cannot be had', async () => {
    const jwksUrl = 'https://login.example.com/keys';
    const weak = createJwtVerifier({
      issuer,
      audience,
      jwksUrl,
      fetch: fakeFetch({
        [jwksUrl]: { keys: [{ ...small.publicKey.export({ format: 'jwk' }), kid: 'k1' }] },
      }),
    });
    expect(await refusal(weak.verify(tokenOf('k1', small.privateKey, claims())))).toBe('jwt_unknown_key');
    const down = createJwtVerifier({ issuer, audience, jwksUrl, fetch: fakeFetch({}) });
    expect(await refusal(down.verify(tokenOf('k1', rsa.privateKey, claims())))).toBe('jwks_unavailable');
  });

  it('requires claims by name or dotted path, as a string or in an array', async () => {
    const jwksUrl = 'https://login.example.com/keys';
    const verifier = createJwtVerifier({
      issuer,
      audience,
      jwksUrl,
      requiredClaims: parseRequiredClaims(['realm_access.roles=codec-reader', 'tenant=acme']),
      fetch: fakeFetch({ [jwksUrl]: { keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1' }] } }),
    });
    const good = claims({ realm_access: { roles: ['codec-reader'] }, tenant: 'acme' });
    await expect(verifier.verify(tokenOf('k1', rsa.privateKey, good))).resolves.toBeDefined();
    expect(await refusal(verifier.verify(tokenOf('k1', rsa.privateKey, { ...good, tenant: 'other' })))).toBe(
      'jwt_missing_claim',
    );
  });

  it('is a configuration error to give a malformed claim, an http issuer off loopback or no audience', () => {
    expect(() => parseRequiredClaims(['groups'])).toThrow(/<name>=<value>/);
    expect(() => createJwtVerifier({ issuer: 'http://login.example.com', audience })).toThrow(/https/);
    expect(() => createJwtVerifier({ issuer: 'http://127.0.0.1:9000', audience })).not.toThrow();
    expect(() => createJwtVerifier({ issuer, audience: ' ' })).toThrow(/--jwt-audience/);
  });

  it('follows no redirect, reads no JWKS over its size, and trusts no discovery document of another issuer', async () => {
    const jwks = { keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1' }] };
    const token = tokenOf('k1', rsa.privateKey, claims());
    const asked: RequestInit[] = [];
    const redirected = createJwtVerifier({
      issuer,
      audience,
      jwksUrl: 'https://login.example.com/keys',
      fetch: async (_input, init) => {
        asked.push(init ?? {});
        return Promise.reject(new TypeError('fetch failed: redirect mode is set to error'));
      },
    });
    expect(await refusal(redirected.verify(token))).toBe('jwks_unavailable');
    expect(asked[0]?.redirect).toBe('error');
    const huge = createJwtVerifier({
      issuer,
      audience,
      jwksUrl: 'https://login.example.com/keys',
      fetch: async () =>
        new Response(JSON.stringify({ ...jwks, padding: 'x'.repeat(2 * 1024 * 1024) }), { status: 200 }),
    });
    expect(await refusal(huge.verify(token))).toBe('jwks_unavailable');
    const elsewhere = createJwtVerifier({
      issuer,
      audience,
      fetch: fakeFetch({
        'https://login.example.com/.well-known/openid-configuration': {
          issuer: 'https://attacker.example.net/',
          jwks_uri: 'https://login.example.com/keys',
        },
        'https://login.example.com/keys': jwks,
      }),
    });
    expect(await refusal(elsewhere.verify(token))).toBe('jwks_unavailable');
  });

  it('stops trusting keys it could not refresh an hour after it fetched them', async () => {
    let now = Date.now();
    let up = true;
    const verifier = createJwtVerifier({
      issuer,
      audience,
      jwksUrl: 'https://login.example.com/keys',
      now: () => now,
      fetch: async () =>
        up
          ? new Response(
              JSON.stringify({ keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1' }] }),
            )
          : Promise.reject(new Error('unreachable')),
    });
    const fresh = () => tokenOf('k1', rsa.privateKey, claims({ exp: Math.floor(now / 1000) + 300 }));
    await expect(verifier.verify(fresh())).resolves.toBeDefined();
    up = false;
    now += 30 * 60 * 1000; // the provider is down: the keys it had still hold for a while
    await expect(verifier.verify(fresh())).resolves.toBeDefined();
    now += 31 * 60 * 1000;
    expect(await refusal(verifier.verify(fresh()))).toBe('jwks_unavailable');
  });

  it('matches a required claim as a string exactly, never coerced', async () => {
    const verifier = createJwtVerifier({
      issuer,
      audience,
      jwksUrl: 'https://login.example.com/keys',
      requiredClaims: { group: 'operators', admin: 'true' },
      fetch: fakeFetch({
        'https://login.example.com/keys': {
          keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1' }],
        },
      }),
    });
    const token = (extra: Record<string, unknown>) => tokenOf('k1', rsa.privateKey, claims(extra));
    await expect(verifier.verify(token({ group: ['operators'], admin: 'true' }))).resolves.toBeDefined();
    expect(await refusal(verifier.verify(token({ group: [['operators']], admin: 'true' })))).toBe(
      'jwt_missing_claim',
    );
    expect(await refusal(verifier.verify(token({ group: 'operators', admin: true })))).toBe(
      'jwt_missing_claim',
    );
  });
});
