// Verifies the access tokens an identity provider issues (a JWT in compact JWS form), with node:crypto
// only: the Temporal Web UI signed in through OIDC sends the operator's own token to the codec server
// (TEMPORAL_CODEC_PASS_ACCESS_TOKEN=true), and this is how the codec server tells an operator from
// anyone else. Only RS256 and ES256 are accepted; the keys come from the provider's JWKS, by `kid`.
import { createPublicKey, verify } from 'node:crypto';
import type { JsonWebKey, KeyObject } from 'node:crypto';
import { isLoopbackHost } from '../mcp/http-access';
import { ConfigurationError } from '../policy/load-policy';

/** What a JWT must satisfy: who issued it, for whom, and any claims an operator must carry. */
export interface JwtVerifierOptions {
  /** The `iss` every token must carry, exactly (e.g. `https://login.example.com/`). */
  issuer: string;
  /** An `aud` the token must carry (a string, or one entry of an array). */
  audience: string;
  /** Where the signing keys are; else `jwks_uri` of `<issuer>/.well-known/openid-configuration`, else `<issuer>/.well-known/jwks.json`. */
  jwksUrl?: string;
  /** Claims a token must carry: a string claim equal to the value, or an array claim containing it. */
  requiredClaims?: Record<string, string>;
  /** The clock, in milliseconds (tests move it). */
  now?: () => number;
  /** How JWKS and discovery documents are fetched (default: the global fetch). */
  fetch?: typeof fetch;
  log?: (line: string) => void;
}

/** Why a token was refused; `code` is stable, `message` never contains the token. */
export class JwtVerificationError extends Error {
  override readonly name = 'JwtVerificationError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A verifier of one issuer's tokens, with its JWKS cache. */
export interface JwtVerifier {
  /** The token's claims when it is valid; a `JwtVerificationError` saying why when it is not. */
  verify(token: string): Promise<Record<string, unknown>>;
}

/** The JWKS is kept this long before it is fetched again. */
export const jwksCacheMilliseconds = 10 * 60 * 1000;
/** The JWKS (or the discovery document) is fetched at most this often, whatever tokens arrive. */
export const jwksMinimumRefetchMilliseconds = 60 * 1000;
/** How long keys kept through a failed refresh stay trusted after they were fetched. */
export const jwksStaleLimitMilliseconds = 60 * 60 * 1000;
/** Clock skew tolerated on `exp` and `nbf`. */
export const jwtLeewaySeconds = 60;

const allowedAlgorithms = new Set(['RS256', 'ES256']);
const maximumTokenLength = 16 * 1024;
const maximumDocumentLength = 1024 * 1024;
const fetchTimeoutMilliseconds = 5000;
const base64url = /^[A-Za-z0-9_-]*$/;

interface SigningKey {
  algorithm: 'RS256' | 'ES256';
  key: KeyObject;
}

/**
 * Checks the options (a `ConfigurationError` saying what to fix: an issuer that is not https
 * outside loopback, no audience, a malformed claim) and returns a verifier. Nothing is fetched
 * until the first token arrives.
 */
export function createJwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  const issuer = options.issuer.trim();
  checkUrl(issuer, '--jwt-issuer');
  const audience = options.audience.trim();
  if (!audience) {
    throw new ConfigurationError(
      `--jwt-issuer ${issuer} needs --jwt-audience (TOOLGATE_CODEC_JWT_AUDIENCE): the audience the provider puts in the Web UI's access tokens`,
    );
  }
  if (options.jwksUrl !== undefined) checkUrl(options.jwksUrl, '--jwks-url');
  for (const name of Object.keys(options.requiredClaims ?? {})) {
    if (!name) throw new ConfigurationError('--jwt-claim needs a claim name: <name>=<value>');
  }
  return new IssuerVerifier({ ...options, issuer, audience });
}

/** `name=value` pairs (a flag's values, or a comma-separated environment variable) as required claims. */
export function parseRequiredClaims(pairs: readonly string[]): Record<string, string> {
  const claims: Record<string, string> = {};
  for (const pair of pairs.flatMap((item) => item.split(',')).map((item) => item.trim())) {
    if (!pair) continue;
    const separator = pair.indexOf('=');
    if (separator <= 0 || separator === pair.length - 1) {
      throw new ConfigurationError(
        `--jwt-claim "${pair}": expected <name>=<value>, e.g. groups=toolgate-operators`,
      );
    }
    claims[pair.slice(0, separator).trim()] = pair.slice(separator + 1).trim();
  }
  return claims;
}

function checkUrl(text: string, flag: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigurationError(`${flag} "${text}" is not a URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new ConfigurationError(
      `${flag} "${text}": the identity provider must be reached over https:// (http:// only on a loopback host)`,
    );
  }
  return url;
}

class IssuerVerifier implements JwtVerifier {
  private keys: Map<string, SigningKey> | undefined;
  private fetchedAt = 0;
  private lastAttemptAt: number | undefined;
  private refreshing: Promise<void> | undefined;
  private jwksUrl: string | undefined;
  private readonly now: () => number;
  private readonly fetch: typeof fetch;
  private readonly log: (line: string) => void;

  constructor(private readonly options: JwtVerifierOptions) {
    this.jwksUrl = options.jwksUrl;
    this.now = options.now ?? Date.now;
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.log = options.log ?? (() => undefined);
  }

  async verify(token: string): Promise<Record<string, unknown>> {
    const parts = token.length <= maximumTokenLength ? token.split('.') : [];
    if (parts.length !== 3 || !parts.every((part) => base64url.test(part))) {
      throw new JwtVerificationError(
        'jwt_malformed',
        'the bearer token is not a JWT (header.payload.signature)',
      );
    }
    const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
    const header = jsonObjectOf(encodedHeader);
    if (!header) throw new JwtVerificationError('jwt_malformed', "the JWT's header is not a JSON object");
    const algorithm = header.alg;
    if (typeof algorithm !== 'string' || !allowedAlgorithms.has(algorithm)) {
      throw new JwtVerificationError(
        'jwt_algorithm_not_allowed',
        `the JWT's algorithm ${JSON.stringify(algorithm ?? null)} is not accepted (only RS256 and ES256)`,
      );
    }
    if (header.crit !== undefined) {
      throw new JwtVerificationError(
        'jwt_malformed',
        'the JWT has critical header parameters this server does not know',
      );
    }
    if (typeof header.kid !== 'string' || !header.kid) {
      throw new JwtVerificationError('jwt_unknown_key', 'the JWT names no signing key (kid)');
    }
    const key = await this.keyFor(header.kid);
    if (key.algorithm !== algorithm) {
      throw new JwtVerificationError(
        'jwt_algorithm_not_allowed',
        `the JWT's algorithm ${algorithm} is not the one of its key "${header.kid}" (${key.algorithm})`,
      );
    }
    const signature = Buffer.from(encodedSignature, 'base64url');
    const signed = Buffer.from(`${encodedHeader}.${encodedPayload}`, 'ascii');
    const valid =
      algorithm === 'ES256'
        ? signature.length === 64 &&
          verify('sha256', signed, { key: key.key, dsaEncoding: 'ieee-p1363' }, signature)
        : verify('sha256', signed, key.key, signature);
    if (!valid) throw new JwtVerificationError('jwt_bad_signature', "the JWT's signature does not verify");
    const claims = jsonObjectOf(encodedPayload);
    if (!claims) throw new JwtVerificationError('jwt_malformed', "the JWT's payload is not a JSON object");
    this.checkClaims(claims);
    return claims;
  }

  private checkClaims(claims: Record<string, unknown>): void {
    const { issuer, audience } = this.options;
    if (claims.iss !== issuer) {
      throw new JwtVerificationError('jwt_wrong_issuer', `the JWT was not issued by ${issuer}`);
    }
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audiences.includes(audience)) {
      throw new JwtVerificationError('jwt_wrong_audience', `the JWT is not for the audience ${audience}`);
    }
    const now = this.now() / 1000;
    if (typeof claims.exp !== 'number' || !Number.isFinite(claims.exp)) {
      throw new JwtVerificationError('jwt_expired', 'the JWT has no expiry (exp)');
    }
    if (now > claims.exp + jwtLeewaySeconds) {
      throw new JwtVerificationError('jwt_expired', 'the JWT has expired: sign in to the Web UI again');
    }
    if (claims.nbf !== undefined) {
      if (typeof claims.nbf !== 'number' || !Number.isFinite(claims.nbf)) {
        throw new JwtVerificationError('jwt_malformed', "the JWT's nbf is not a number");
      }
      if (now + jwtLeewaySeconds < claims.nbf) {
        throw new JwtVerificationError('jwt_not_yet_valid', 'the JWT is not valid yet (nbf)');
      }
    }
    for (const [name, value] of Object.entries(this.options.requiredClaims ?? {})) {
      const actual = claimOf(claims, name);
      const values = Array.isArray(actual) ? actual : [actual];
      // Strings compared exactly: no coercion (`["x"]`, `true`, `1` never stand for "x", "true", "1").
      if (!values.some((item) => typeof item === 'string' && item === value)) {
        throw new JwtVerificationError(
          'jwt_missing_claim',
          `the JWT lacks the required claim ${name}=${value}`,
        );
      }
    }
  }

  /** The key of `kid`: from the cache, else after one refetch (at most one a minute). */
  private async keyFor(kid: string): Promise<SigningKey> {
    if (this.keys === undefined || this.now() - this.fetchedAt >= jwksCacheMilliseconds) await this.refresh();
    // Keys kept through a provider's outage are trusted for a bounded time only: a key the provider
    // dropped must not stay good for as long as someone can keep the codec server from asking again.
    if (this.keys !== undefined && this.now() - this.fetchedAt >= jwksStaleLimitMilliseconds) {
      this.keys = undefined;
    }
    let key = this.keys?.get(kid);
    if (key === undefined && this.keys !== undefined) {
      await this.refresh();
      key = this.keys.get(kid);
    }
    if (key !== undefined) return key;
    if (this.keys === undefined) {
      throw new JwtVerificationError(
        'jwks_unavailable',
        "the identity provider's signing keys (JWKS) could not be fetched; try again in a minute",
      );
    }
    throw new JwtVerificationError(
      'jwt_unknown_key',
      `the JWT's signing key "${kid}" is not in the issuer's JWKS`,
    );
  }

  /** Fetches the JWKS unless a fetch is under way (then waits for it) or one started less than a minute ago. */
  private async refresh(): Promise<void> {
    if (this.refreshing) return this.refreshing;
    const now = this.now();
    if (this.lastAttemptAt !== undefined && now - this.lastAttemptAt < jwksMinimumRefetchMilliseconds) return;
    this.lastAttemptAt = now;
    this.refreshing = this.fetchKeys()
      .then((keys) => {
        this.keys = keys;
        this.fetchedAt = this.now();
      })
      .catch((error: unknown) => {
        // Keep the keys we had: a provider that is briefly down does not lock operators out.
        this.log(`could not fetch the JWKS: ${(error as Error).message}`);
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  private async fetchKeys(): Promise<Map<string, SigningKey>> {
    const url = await this.keysUrl();
    const document = await this.getJson(url);
    if (document === undefined || !Array.isArray(document.keys))
      throw new Error(`${url} has no "keys" array`);
    const keys = new Map<string, SigningKey>();
    for (const jwk of document.keys as unknown[]) {
      const key = signingKeyOf(jwk);
      if (key) keys.set((jwk as { kid: string }).kid, key);
    }
    return keys;
  }

  private async keysUrl(): Promise<string> {
    if (this.jwksUrl !== undefined) return this.jwksUrl;
    const base = this.options.issuer.replace(/\/+$/, '');
    const discovery = await this.getJson(`${base}/.well-known/openid-configuration`);
    const discovered = discovery?.jwks_uri;
    if (discovery !== undefined && discovery.issuer !== this.options.issuer) {
      throw new Error(
        `${base}/.well-known/openid-configuration names another issuer than ${this.options.issuer}`,
      );
    }
    if (typeof discovered === 'string') {
      checkUrl(discovered, 'the discovered jwks_uri');
      if (base.startsWith('https:') && !discovered.startsWith('https:')) {
        throw new Error(`the discovered jwks_uri ${discovered} is not https, though the issuer is`);
      }
      this.jwksUrl = discovered;
    } else {
      this.jwksUrl = `${base}/.well-known/jwks.json`;
    }
    return this.jwksUrl;
  }

  /** The JSON object at `url`; undefined for a 404; an error for anything else that is not one. */
  private async getJson(url: string): Promise<Record<string, unknown> | undefined> {
    // No redirect is followed: the https-only rule holds for the address actually read.
    const response = await this.fetch(url, {
      headers: { Accept: 'application/json' },
      redirect: 'error',
      signal: AbortSignal.timeout(fetchTimeoutMilliseconds),
    });
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    const text = await boundedText({ response, url, maximumBytes: maximumDocumentLength });
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`${url} is not JSON`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new Error(`${url} is not a JSON object`);
    }
    return value as Record<string, unknown>;
  }
}

/** A JWK this server may verify with: a signing RSA (2048 bits or more) or P-256 key with a kid. */
function signingKeyOf(value: unknown): SigningKey | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const jwk = value as Record<string, unknown>;
  if (typeof jwk.kid !== 'string' || !jwk.kid) return undefined;
  if (jwk.use !== undefined && jwk.use !== 'sig') return undefined;
  let algorithm: SigningKey['algorithm'];
  let publicJwk: JsonWebKey;
  if (jwk.kty === 'RSA' && typeof jwk.n === 'string' && typeof jwk.e === 'string') {
    algorithm = 'RS256';
    publicJwk = { kty: 'RSA', n: jwk.n, e: jwk.e };
  } else if (
    jwk.kty === 'EC' &&
    jwk.crv === 'P-256' &&
    typeof jwk.x === 'string' &&
    typeof jwk.y === 'string'
  ) {
    algorithm = 'ES256';
    publicJwk = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
  } else {
    return undefined;
  }
  if (jwk.alg !== undefined && jwk.alg !== algorithm) return undefined;
  try {
    const key = createPublicKey({ key: publicJwk, format: 'jwk' });
    if (algorithm === 'RS256' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) return undefined;
    return { algorithm, key };
  } catch {
    return undefined;
  }
}

function jsonObjectOf(encoded: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A claim by its name, else (for a dotted name such as `realm_access.roles`) by its path. */
function claimOf(claims: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(claims, name)) return claims[name];
  let value: unknown = claims;
  for (const segment of name.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** The body as text, read no further than `maximumBytes` (a provider cannot fill the memory). */
async function boundedText(input: {
  response: Response;
  url: string;
  maximumBytes: number;
}): Promise<string> {
  const { response, url, maximumBytes } = input;
  const tooLarge = () => new Error(`${url} is larger than a JWKS should be (over ${maximumBytes} bytes)`);
  if (Number(response.headers.get('content-length') ?? 0) > maximumBytes) throw tooLarge();
  const reader = (response.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maximumBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
