// The codec server: the Temporal Web UI (and `temporal workflow show --codec-endpoint`) send it the
// encrypted payloads of a history and get them back readable, so authorised operators read calls
// while Temporal itself only ever stores ciphertext. It answers only a bearer token (its static token,
// or an operator's access token from the Web UI's identity provider), and a browser only from the Web
// UI's own origin.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as HonoNodeServer from '@hono/node-server';
import type { Payload, PayloadCodec } from '@temporalio/common';
import type * as HonoModule from 'hono';
import type { Context, Hono } from 'hono';
import { limitBody } from './body-limit';
import { authorityOf, isLoopbackHost } from '../mcp/http-access';
import { ConfigurationError } from '../policy/load-policy';
import { createJwtVerifier, JwtVerificationError } from './jwt-verifier';
import type { JwtVerifier, JwtVerifierOptions } from './jwt-verifier';

/** The environment variable with the bearer token the codec server requires. */
export const codecTokenEnvironmentVariable = 'TOOLGATE_CODEC_TOKEN';
/** The environment variables of JWT verification (the flags --jwt-issuer, --jwt-audience, --jwks-url, --jwt-claim). */
export const codecJwtEnvironmentVariables = {
  issuer: 'TOOLGATE_CODEC_JWT_ISSUER',
  audience: 'TOOLGATE_CODEC_JWT_AUDIENCE',
  jwksUrl: 'TOOLGATE_CODEC_JWKS_URL',
  claims: 'TOOLGATE_CODEC_JWT_CLAIM',
} as const;
/** The codec server's default port (the approvals console has 4300). */
export const defaultCodecServerPort = 4301;

/** A payload as the Web UI sends and reads it: protobuf's JSON form, bytes in base64. */
export interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

/** What the codec server needs; it never holds a Temporal connection. */
export interface CodecServerOptions {
  codec: PayloadCodec;
  /** A static bearer token a request may carry. */
  token?: string;
  /**
   * Also accept an access token from this issuer (the Web UI's OIDC sign-in with
   * TEMPORAL_CODEC_PASS_ACCESS_TOKEN=true). Without `token` or `jwt`, only `insecureNoAuth` on loopback.
   */
  jwt?: JwtVerifierOptions;
  /** Serve without a token (development only); refused unless `host` is a loopback address. */
  insecureNoAuth?: boolean;
  /** The Web UI's origin (e.g. `http://127.0.0.1:8233`): the one origin a browser may call from. */
  uiOrigin?: string;
  /** Where it listens (default 127.0.0.1, port 4301; 0 picks a free port). */
  host?: string;
  port?: number;
  log?: (line: string) => void;
}

/** A running codec server. */
export interface CodecServer {
  /** e.g. `http://127.0.0.1:4301`: the Web UI's "codec server endpoint". */
  url: string;
  /** Stops listening and closes open connections; calling it again is harmless. */
  stop(): Promise<void>;
}

/** What the auth step tells the routes: who the bearer is, for the access log. */
type CodecServerEnvironment = { Variables: { bearer: string } };

const maximumBodyBytes = 16 * 1024 * 1024;
const allowedHeaders = 'Authorization, Content-Type, X-Namespace';

/**
 * Starts the codec server. Refuses to start (a `ConfigurationError` saying what to set) without a
 * token unless `insecureNoAuth` is given on a loopback host, and with a `uiOrigin` that is not an origin.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? (() => undefined);
  const token = options.token?.trim() ? options.token.trim() : undefined;
  const jwtVerifier = options.jwt ? createJwtVerifier({ log, ...options.jwt }) : undefined;
  if (token === undefined && jwtVerifier === undefined) {
    if (!options.insecureNoAuth) {
      throw new ConfigurationError(
        `the codec server decrypts customer data: set ${codecTokenEnvironmentVariable} to a long random token ` +
          `(e.g. openssl rand -base64 32), or --jwt-issuer and --jwt-audience to verify the Web UI's access tokens, ` +
          `or pass --insecure-no-auth on a loopback host for development`,
      );
    }
    if (!isLoopbackHost(host)) {
      throw new ConfigurationError(
        `--insecure-no-auth serves decrypted payloads to anyone who reaches ${host}: it is only accepted on a ` +
          `loopback host (127.0.0.1); set ${codecTokenEnvironmentVariable} instead`,
      );
    }
  }
  const uiOrigin = options.uiOrigin !== undefined ? originOf(options.uiOrigin) : undefined;
  if (options.jwt && Object.keys(options.jwt.requiredClaims ?? {}).length === 0) {
    log(
      `warning: every holder of an access token from ${options.jwt.issuer} for ${options.jwt.audience} may decrypt ` +
        `payloads: require an operators' group with --jwt-claim (e.g. groups=toolgate-operators)`,
    );
  }
  const app = createCodecServerApp({
    codec: options.codec,
    log,
    ...(token ? { token } : {}),
    ...(jwtVerifier ? { jwtVerifier } : {}),
    ...(uiOrigin ? { uiOrigin } : {}),
  });
  // Hono and its Node adapter load with the first codec server, not with toolgate's entry.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- deliberately lazy, see above
  const { getRequestListener } = require('@hono/node-server') as typeof HonoNodeServer;
  const listener = getRequestListener(app.fetch, { hostname: 'localhost', overrideGlobalObjects: false });
  const server = createServer((request, response) => void listener(request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? defaultCodecServerPort, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  if (!isLoopbackHost(host)) {
    log(
      `warning: the codec server listens on ${host}: serve it over HTTPS (a reverse proxy) so the token and payloads stay private`,
    );
  }
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${authorityOf({ host, port })}`,
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/**
 * The codec server's routes: `POST /encode` and `POST /decode` (also under `/<namespace>/`, as the
 * Temporal CLI's endpoint template sends them) take and return `{ payloads: JsonPayload[] }`.
 * Every request but a CORS preflight needs a bearer token when `token` or `jwtVerifier` is set: the
 * static token, or a JWT the verifier accepts; 401 (with a `code` saying why) otherwise. A request
 * from a browser origin other than `uiOrigin` is refused (403) before anything is decoded.
 * Each answered encode or decode is logged: who (the JWT's `sub`, or "the codec token"), how many
 * payloads, which namespace; never a payload.
 */
export function createCodecServerApp(input: {
  codec: PayloadCodec;
  token?: string;
  jwtVerifier?: JwtVerifier;
  uiOrigin?: string;
  log?: (line: string) => void;
}): Hono<CodecServerEnvironment> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded with the first app, see startCodecServer
  const app = new (require('hono') as typeof HonoModule).Hono<CodecServerEnvironment>();
  const log = input.log ?? (() => undefined);
  const tokenDigest = input.token !== undefined ? digest(input.token) : undefined;
  const jwtVerifier = input.jwtVerifier;

  app.use('*', async (context, next) => {
    const origin = context.req.header('Origin');
    if (origin !== undefined && origin !== input.uiOrigin) {
      return context.json(
        { error: `origin ${origin} is not the Web UI origin this codec server serves` },
        403,
      );
    }
    if (origin !== undefined) {
      context.header('Access-Control-Allow-Origin', origin);
      context.header('Access-Control-Allow-Credentials', 'true');
    }
    context.header('Vary', 'Origin');
    if (context.req.method === 'OPTIONS') {
      // A preflight carries no credentials: it only learns which requests this origin may send.
      context.header('Access-Control-Allow-Methods', 'POST, OPTIONS');
      context.header('Access-Control-Allow-Headers', allowedHeaders);
      context.header('Access-Control-Max-Age', '600');
      return context.body(null, 204);
    }
    if (tokenDigest !== undefined || jwtVerifier !== undefined) {
      const refusal = await refusalOf(context.req.header('Authorization'));
      if (typeof refusal === 'string') {
        context.set('bearer', refusal);
      } else {
        context.header(
          'WWW-Authenticate',
          `Bearer realm="toolgate codec server", error="${refusal.code === 'missing_token' ? 'invalid_request' : 'invalid_token'}"`,
        );
        return context.json({ error: refusal.message, code: refusal.code }, 401);
      }
    }
    await next();
    return undefined;
  });
  /**
   * Why a request's Authorization is refused, or who it is when it carries a valid token ("the codec
   * token", or the access token's subject). Never the token itself.
   */
  async function refusalOf(
    authorization: string | undefined,
  ): Promise<{ code: string; message: string } | string> {
    const accepted = [
      ...(tokenDigest !== undefined ? ['the codec token'] : []),
      ...(jwtVerifier !== undefined ? ["an access token from the Web UI's identity provider"] : []),
    ].join(' or ');
    const presented = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1]?.trim();
    if (presented === undefined) {
      return {
        code: 'missing_token',
        message: `a bearer token is required (Authorization: Bearer <token>): ${accepted}`,
      };
    }
    if (tokenDigest !== undefined && timingSafeEqual(digest(presented), tokenDigest))
      return 'the codec token';
    if (jwtVerifier === undefined || presented.split('.').length !== 3) {
      return { code: 'invalid_token', message: `the bearer token is not valid: give ${accepted}` };
    }
    try {
      const claims = await jwtVerifier.verify(presented);
      return typeof claims.sub === 'string'
        ? `subject ${JSON.stringify(claims.sub)}`
        : 'an access token without a subject';
    } catch (error) {
      if (error instanceof JwtVerificationError) return { code: error.code, message: error.message };
      return { code: 'invalid_token', message: 'the bearer token could not be verified' };
    }
  }

  app.use(
    '*',
    limitBody({
      maxBytes: maximumBodyBytes,
      onTooLarge: (context) => context.json({ error: 'body too large' }, 413),
    }),
  );

  const route = (direction: 'encode' | 'decode') => async (context: Context<CodecServerEnvironment>) => {
    const parsed = await payloadsOf(context);
    if (!parsed.ok) return context.json({ error: parsed.message }, 400);
    try {
      const payloads = await input.codec[direction](parsed.payloads);
      const namespace = context.req.param('namespace') ?? context.req.header('X-Namespace');
      log(
        `${direction}: ${payloads.length} payload${payloads.length === 1 ? '' : 's'} for ${context.get('bearer') ?? 'an unauthenticated caller (--insecure-no-auth)'}` +
          (namespace !== undefined ? ` in namespace ${JSON.stringify(namespace)}` : ''),
      );
      return context.json({ payloads: payloads.map(toJsonPayload) });
    } catch (error) {
      // The codec's own message names the key id and the fix; it never contains payload bytes.
      return context.json({ error: (error as Error).message }, 422);
    }
  };
  for (const direction of ['encode', 'decode'] as const) {
    app.post(`/${direction}`, route(direction));
    app.post(`/:namespace/${direction}`, route(direction));
  }
  return app;
}

async function payloadsOf(
  context: Context,
): Promise<{ ok: true; payloads: Payload[] } | { ok: false; message: string }> {
  let body: unknown;
  try {
    body = await context.req.json();
  } catch {
    return {
      ok: false,
      message: 'the body must be JSON: { "payloads": [{ "metadata": {...}, "data": "<base64>" }] }',
    };
  }
  const payloads = (body as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(payloads)) return { ok: false, message: 'the body must have a "payloads" array' };
  const decoded: Payload[] = [];
  for (const [index, payload] of payloads.entries()) {
    const converted = fromJsonPayload(payload);
    if (!converted) {
      return {
        ok: false,
        message: `payloads[${index}]: expected { metadata: { name: base64 }, data: base64 }`,
      };
    }
    decoded.push(converted);
  }
  return { ok: true, payloads: decoded };
}

function fromJsonPayload(value: unknown): Payload | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { metadata, data } = value as { metadata?: unknown; data?: unknown };
  if (data !== undefined && data !== null && typeof data !== 'string') return undefined;
  const entries: [string, Uint8Array][] = [];
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object') return undefined;
    for (const [name, text] of Object.entries(metadata)) {
      if (typeof text !== 'string') return undefined;
      entries.push([name, Buffer.from(text, 'base64')]);
    }
  }
  return {
    metadata: Object.fromEntries(entries),
    ...(typeof data === 'string' ? { data: Buffer.from(data, 'base64') } : {}),
  };
}

function toJsonPayload(payload: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([name, value]) => [
        name,
        Buffer.from(value ?? new Uint8Array()).toString('base64'),
      ]),
    ),
    data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
  };
}

function originOf(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigurationError(
      `--ui-origin "${text}" is not a URL; give the Web UI's origin, e.g. http://127.0.0.1:8233`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigurationError(`--ui-origin "${text}": an origin is http:// or https://`);
  }
  return url.origin;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
