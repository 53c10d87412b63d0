import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import {
  codecJwtEnvironmentVariables,
  codecTokenEnvironmentVariable,
  defaultCodecServerPort,
  startCodecServer,
} from '../connection/codec-server';
import { parseRequiredClaims } from '../connection/jwt-verifier';
import type { JwtVerifierOptions } from '../connection/jwt-verifier';
import { codecKeysEnvironmentVariable, generateCodecKeyLine } from '../connection/payload-encryption';
import { resolvePayloadCodec } from '../connection/temporal-connection';
import { ConfigurationError } from '../policy/load-policy';
import type { CliContext, GlobalOptions } from './cli-context';
import { commandAction, configOf, untilStopped } from './cli-context';

type CodecServerOptions = GlobalOptions & {
  host: string;
  port: number;
  uiOrigin?: string;
  insecureNoAuth?: boolean;
  jwtIssuer?: string;
  jwtAudience?: string;
  jwksUrl?: string;
  jwtClaim?: string[];
};

/**
 * Adds `codec key` (prints a new payload encryption key line) and `codec-server` (serves the Web
 * UI's codec endpoint with the configured keys until it is stopped).
 */
export function addCodecCommands(program: Command, context: CliContext): void {
  const { output } = context;
  program
    .command('codec')
    .description('payload encryption: keys for the codec that encrypts arguments and results in Temporal')
    .command('key')
    .description(
      `print a new key line for ${codecKeysEnvironmentVariable} (put it first to make it active; keep the old ones after it)`,
    )
    .option('--id <id>', 'the key id (default: key-<date>-<random>)')
    .action(
      commandAction(context, (options: { id?: string }) => {
        output.out(generateCodecKeyLine(options.id !== undefined ? { id: options.id } : {}));
        return 0;
      }),
    );

  program
    .command('codec-server')
    .description(
      `serve POST /encode and /decode for the Temporal Web UI with the codec's keys ($${codecKeysEnvironmentVariable}, ` +
        `else the config's codec.keys); requests need the bearer token $${codecTokenEnvironmentVariable} ` +
        `or, with --jwt-issuer, an operator's access token from the Web UI's identity provider`,
    )
    .option(
      '--host <address>',
      'the address to listen on (elsewhere than loopback: put it behind HTTPS)',
      '127.0.0.1',
    )
    .option('--port <number>', 'the port to listen on', parsePort, defaultCodecServerPort)
    .option(
      '--ui-origin <origin>',
      "the Web UI's origin, the one browser origin allowed (e.g. http://127.0.0.1:8233)",
    )
    .option(
      '--jwt-issuer <url>',
      `also accept access tokens (JWT, RS256/ES256) issued by this OIDC issuer, exactly its iss ($${codecJwtEnvironmentVariables.issuer})`,
    )
    .option(
      '--jwt-audience <aud>',
      `the audience the access tokens must carry; required with --jwt-issuer ($${codecJwtEnvironmentVariables.audience})`,
    )
    .option(
      '--jwks-url <url>',
      `the issuer's signing keys (default: jwks_uri of <issuer>/.well-known/openid-configuration, else <issuer>/.well-known/jwks.json) ($${codecJwtEnvironmentVariables.jwksUrl})`,
    )
    .option(
      '--jwt-claim <name=value>',
      `a claim every access token must carry, e.g. groups=toolgate-operators; repeatable, all required ($${codecJwtEnvironmentVariables.claims}, comma-separated)`,
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option('--insecure-no-auth', 'serve without a token: development only, and only on a loopback host')
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        codecServerCommand({ options: command.optsWithGlobals<CodecServerOptions>(), context }),
      ),
    );
}

async function codecServerCommand(input: {
  options: CodecServerOptions;
  context: CliContext;
}): Promise<number> {
  const { options, context } = input;
  // The keys alone are needed: with TOOLGATE_CODEC_KEYS set, no config file is read.
  const config = process.env[codecKeysEnvironmentVariable] ? undefined : configOf(options);
  const codec = resolvePayloadCodec({ ...(config ? { config } : {}), env: process.env });
  if (!codec) {
    throw new ConfigurationError(
      `no payload encryption keys: set ${codecKeysEnvironmentVariable} (toolgate codec key prints one) or codec.keys in ${config?.source ?? 'your config'}`,
    );
  }
  const jwt = jwtOptionsOf(options);
  const server = await startCodecServer({
    codec,
    ...(process.env[codecTokenEnvironmentVariable]
      ? { token: process.env[codecTokenEnvironmentVariable] }
      : {}),
    ...jwt,
    insecureNoAuth: options.insecureNoAuth === true,
    ...(options.uiOrigin !== undefined ? { uiOrigin: options.uiOrigin } : {}),
    host: options.host,
    port: options.port,
    log: (line) => context.output.error(`[codec-server] ${line}`),
  });
  try {
    context.output.out(
      `codec server on ${server.url} (keys ${codec.keyIds.join(', ')}; active ${codec.activeKeyId})` +
        (jwt.jwt ? `, accepting access tokens from ${jwt.jwt.issuer} for ${jwt.jwt.audience}` : '') +
        (options.uiOrigin
          ? `, for the Web UI at ${options.uiOrigin}`
          : ', no browser origin allowed (pass --ui-origin)'),
    );
    await untilStopped({ signal: context.signal }).promise;
    return 0;
  } finally {
    await server.stop();
  }
}

/** The JWT verification the flags (else the environment) ask for; nothing without an issuer or anything else. */
function jwtOptionsOf(options: CodecServerOptions): { jwt?: JwtVerifierOptions } {
  const setting = (flag: string | undefined, variable: string): string | undefined =>
    flag?.trim() || process.env[variable]?.trim() || undefined;
  const issuer = setting(options.jwtIssuer, codecJwtEnvironmentVariables.issuer);
  const audience = setting(options.jwtAudience, codecJwtEnvironmentVariables.audience);
  const jwksUrl = setting(options.jwksUrl, codecJwtEnvironmentVariables.jwksUrl);
  const claimPairs = options.jwtClaim?.length
    ? options.jwtClaim
    : [process.env[codecJwtEnvironmentVariables.claims] ?? ''];
  const requiredClaims = parseRequiredClaims(claimPairs);
  if (issuer === undefined) {
    if (audience !== undefined || jwksUrl !== undefined || Object.keys(requiredClaims).length > 0) {
      throw new ConfigurationError(
        `--jwt-audience, --jwks-url and --jwt-claim need --jwt-issuer (${codecJwtEnvironmentVariables.issuer}): the issuer whose access tokens the codec server accepts`,
      );
    }
    return {};
  }
  return {
    jwt: {
      issuer,
      audience: audience ?? '',
      ...(jwksUrl !== undefined ? { jwksUrl } : {}),
      ...(Object.keys(requiredClaims).length > 0 ? { requiredClaims } : {}),
    },
  };
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new InvalidArgumentError('a port is a whole number from 0 to 65535.');
  }
  return port;
}
