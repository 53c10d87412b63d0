import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateCodecKeyLine } from './payload-encryption';
import { toolGateFailureConverterPath } from './failure-converter-path';
import {
  clientConnectionOptions,
  nativeConnectionOptions,
  resolveTemporalConnection,
} from './temporal-connection';

const directory = mkdtempSync(join(tmpdir(), 'toolgate-tls-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const pem = (name: string, body: string): string => {
  const path = join(directory, name);
  writeFileSync(path, `-----BEGIN ${body}-----\n${name}\n-----END ${body}-----\n`);
  return path;
};
const caPath = pem('ca.pem', 'CERTIFICATE');
const certPath = pem('client.pem', 'CERTIFICATE');
const keyPath = pem('client.key', 'PRIVATE KEY');
const configSource = join(directory, 'toolgate.config.ts');

describe('the Temporal connection settings', () => {
  it('connect in plaintext to the local default when nothing is configured', () => {
    const settings = resolveTemporalConnection({ env: {} });
    expect(settings).toEqual({
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'toolgate',
      // No codec, but toolgate's failure converter all the same: the workflow bundle is built with it.
      dataConverter: { failureConverterPath: toolGateFailureConverterPath() },
    });
    expect(clientConnectionOptions(settings, { connectTimeout: '5s' })).toEqual({
      address: '127.0.0.1:7233',
      connectTimeout: '5s',
    });
  });

  it('take each field from the override, else the environment, else the config', () => {
    const config = {
      temporal: { address: 'config:7233', namespace: 'config-ns', taskQueue: 'config-queue' },
    };
    const env = { TEMPORAL_ADDRESS: 'env:7233', TEMPORAL_NAMESPACE: 'env-ns' };
    const settings = resolveTemporalConnection({ config, env, overrides: { namespace: 'flag-ns' } });
    expect(settings).toMatchObject({ address: 'env:7233', namespace: 'flag-ns', taskQueue: 'config-queue' });
  });

  it('read mTLS files and the server name from the environment into both connections’ options', () => {
    const settings = resolveTemporalConnection({
      env: {
        TEMPORAL_ADDRESS: 'temporal.internal:7233',
        TEMPORAL_TLS_CA: caPath,
        TEMPORAL_TLS_CERT: certPath,
        TEMPORAL_TLS_KEY: keyPath,
        TEMPORAL_TLS_SERVER_NAME: 'frontend.temporal.internal',
      },
    });
    const expected = {
      address: 'temporal.internal:7233',
      tls: {
        serverRootCACertificate: Buffer.from(
          `-----BEGIN CERTIFICATE-----\nca.pem\n-----END CERTIFICATE-----\n`,
        ),
        clientCertPair: {
          crt: Buffer.from(`-----BEGIN CERTIFICATE-----\nclient.pem\n-----END CERTIFICATE-----\n`),
          key: Buffer.from(`-----BEGIN PRIVATE KEY-----\nclient.key\n-----END PRIVATE KEY-----\n`),
        },
        serverNameOverride: 'frontend.temporal.internal',
      },
    };
    expect(clientConnectionOptions(settings, {})).toEqual(expected);
    expect(nativeConnectionOptions(settings)).toEqual(expected);
  });

  it('read the config’s TLS files relative to the config file, and let the environment override one', () => {
    const settings = resolveTemporalConnection({
      config: {
        source: configSource,
        temporal: {
          tls: { caPath: 'ca.pem', certPath: 'client.pem', keyPath: 'client.key', serverName: 'a' },
        },
      },
      env: { TEMPORAL_TLS_SERVER_NAME: 'b' },
    });
    expect(settings.tls?.serverRootCACertificate?.toString()).toContain('ca.pem');
    expect(settings.tls?.clientCertPair?.crt.toString()).toContain('client.pem');
    expect(settings.tls?.serverNameOverride).toBe('b');
  });

  it('use TLS with the system’s root CAs for a Temporal Cloud API key', () => {
    const settings = resolveTemporalConnection({
      config: { temporal: { address: 'ns.acct.tmprl.cloud:7233', namespace: 'ns.acct' } },
      env: { TEMPORAL_API_KEY: 'cloud-api-key' },
    });
    expect(clientConnectionOptions(settings, {})).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      tls: {},
      apiKey: 'cloud-api-key',
    });
    expect(nativeConnectionOptions(settings)).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      tls: {},
      apiKey: 'cloud-api-key',
    });
    expect(resolveTemporalConnection({ config: { temporal: { apiKey: 'in-config' } }, env: {} }).tls).toEqual(
      {},
    );
    expect(resolveTemporalConnection({ env: { TEMPORAL_TLS: 'true' } }).tls).toEqual({});
    expect(resolveTemporalConnection({ config: { temporal: { tls: true } }, env: {} }).tls).toEqual({});
  });

  it('refuse, naming the variable and the fix: a missing file, a certificate without its key, TLS off with an API key', () => {
    expect(() =>
      resolveTemporalConnection({ env: { TEMPORAL_TLS_CA: join(directory, 'absent.pem') } }),
    ).toThrow(/TEMPORAL_TLS_CA: cannot read .*absent\.pem \(ENOENT\); give the path of a PEM file/);
    expect(() => resolveTemporalConnection({ env: { TEMPORAL_TLS_CERT: certPath } })).toThrow(
      /mTLS needs a client certificate and its private key: set TEMPORAL_TLS_KEY/,
    );
    expect(() =>
      resolveTemporalConnection({ env: { TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' } }),
    ).toThrow(/turns TLS off/);
    expect(() => resolveTemporalConnection({ env: { TEMPORAL_TLS: 'yes please' } })).toThrow(
      /write true or false/,
    );
    expect(() =>
      resolveTemporalConnection({
        config: { source: configSource, temporal: { tls: { caPath: 'nope.pem' } } },
        env: {},
      }),
    ).toThrow(/toolgate\.config\.ts: temporal\.tls\.caPath: cannot read/);
  });

  it('configure the payload codec from TOOLGATE_CODEC_KEYS, which wins over the config’s keys', () => {
    const configKey = generateCodecKeyLine({ id: 'from-config' }).split(':')[1]!;
    const config = { codec: { keys: [{ id: 'from-config', key: configKey }] } };
    const fromConfig = resolveTemporalConnection({ config, env: {} });
    expect(fromConfig.codec?.activeKeyId).toBe('from-config');
    expect(fromConfig.dataConverter).toEqual({
      failureConverterPath: toolGateFailureConverterPath(),
      payloadCodecs: [fromConfig.codec],
    });
    const fromEnv = resolveTemporalConnection({
      config,
      env: {
        TOOLGATE_CODEC_KEYS: `${generateCodecKeyLine({ id: 'new' })},${generateCodecKeyLine({ id: 'old' })}`,
      },
    });
    expect(fromEnv.codec?.keyIds).toEqual(['new', 'old']);
    expect(() => resolveTemporalConnection({ env: { TOOLGATE_CODEC_KEYS: 'oops' } })).toThrow(
      /TOOLGATE_CODEC_KEYS: .*write "<id>:<base64 of 32 random bytes>"/,
    );
    expect(() =>
      resolveTemporalConnection({
        config: { source: configSource, codec: { keys: [{ id: 'k', key: 'c2hvcnQ=' }] } },
        env: {},
      }),
    ).toThrow(/toolgate\.config\.ts: codec\.keys: key "k" is not 32 bytes/);
  });
});
