import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import {
  codecTokenEnvironmentVariable,
  defaultCodecServerPort,
  startCodecServer,
} from '../connection/codec-server';
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
        `else the config's codec.keys); requests need the bearer token $${codecTokenEnvironmentVariable}`,
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
  const server = await startCodecServer({
    codec,
    ...(process.env[codecTokenEnvironmentVariable]
      ? { token: process.env[codecTokenEnvironmentVariable] }
      : {}),
    insecureNoAuth: options.insecureNoAuth === true,
    ...(options.uiOrigin !== undefined ? { uiOrigin: options.uiOrigin } : {}),
    host: options.host,
    port: options.port,
    log: (line) => context.output.error(`[codec-server] ${line}`),
  });
  try {
    context.output.out(
      `codec server on ${server.url} (keys ${codec.keyIds.join(', ')}; active ${codec.activeKeyId})` +
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

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new InvalidArgumentError('a port is a whole number from 0 to 65535.');
  }
  return port;
}
