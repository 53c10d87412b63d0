// The production topology (docker-compose.yml, Dockerfile, deploy/) checked by reading it: this machine
// has no Docker engine, so the test parses the files and holds them to the rules the README states.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { searchAttributes } from 'toolgate';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = resolve(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

interface Healthcheck {
  test?: string[] | string;
  disable?: boolean;
}
interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string | number | boolean | null> | string[];
  env_file?: (string | { path: string })[] | string;
  ports?: (string | { published?: string | number; target?: number; host_ip?: string })[];
  volumes?: (string | { source?: string; target: string; read_only?: boolean })[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: Healthcheck;
  restart?: string;
  deploy?: { replicas?: number };
}

// Compose resolves `<<:` merge keys; so must the parser, or the shared blocks would be lost.
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const service = (name: string): Service => {
  const found = services[name];
  if (!found) throw new Error(`docker-compose.yml has no service "${name}"`);
  return found;
};

/** The toolgate processes: the package's CLI, run from the image the Dockerfile builds. */
const toolgateServices = ['worker', 'console', 'mcp', 'codec-server'] as const;
/** One-shot jobs: they run to completion, so they have no healthcheck and restart only on failure. */
const oneShotJobs = ['temporal-schema', 'temporal-namespace'] as const;
/** The only published ports: the Web UI, the two front ends, and the codec server the UI's page calls. */
const allowedPublished: Record<string, string[]> = {
  'temporal-ui': ['127.0.0.1:8080:8080'],
  console: ['127.0.0.1:4300:4300'],
  mcp: ['127.0.0.1:4200:4200'],
  // The Web UI's page (in the operator's browser) calls the codec endpoint itself, so it must be
  // reachable from there; loopback only, and it answers a bearer token and the UI's origin only.
  'codec-server': ['127.0.0.1:4301:4301'],
};

const asList = (value: string[] | string | undefined): string[] =>
  value === undefined ? [] : typeof value === 'string' ? value.split(/\s+/) : value;

/** `KEY=value` lines of an env file; comments and blank lines skipped. */
function envFile(path: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const line of read(path).split('\n')) {
    const match = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line);
    if (match?.[1] !== undefined) entries[match[1]] = match[2] ?? '';
  }
  return entries;
}

/** The env files a service reads, as their committed examples (the user copies `X.example` to `X`). */
function envFilesOf(entry: Service): string[] {
  const files =
    entry.env_file === undefined ? [] : Array.isArray(entry.env_file) ? entry.env_file : [entry.env_file];
  return files.map((file) => (typeof file === 'string' ? file : file.path));
}

/** Every variable a service's process gets: its `environment` and its env files' examples. */
function environmentOf(entry: Service): Set<string> {
  const names = new Set<string>();
  const environment = entry.environment ?? {};
  if (Array.isArray(environment)) for (const item of environment) names.add(item.split('=')[0]!);
  else for (const name of Object.keys(environment)) names.add(name);
  for (const file of envFilesOf(entry))
    for (const name of Object.keys(envFile(`${file}.example`))) names.add(name);
  return names;
}

/** `name:tag` with a tag that names a version: digits first, never `latest`. */
function pinnedVersion(image: string): string | undefined {
  const match = /^(?:[\w.-]+\/)*[\w.-]+:([\w.-]+)$/.exec(image);
  const tag = match?.[1];
  return tag !== undefined && /^\d+(\.\d+)+([.-][\w.-]+)?$/.test(tag) ? tag : undefined;
}

describe('docker-compose.yml', () => {
  it('has the production topology: database, Temporal, its admin jobs and UI, toolgate and the orders service', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'postgresql',
        'temporal-schema',
        'temporal',
        'temporal-namespace',
        'temporal-ui',
        'worker',
        'console',
        'mcp',
        'codec-server',
        'orders',
      ].sort(),
    );
  });

  it('pins every image by an explicit version: no latest, no untagged', () => {
    for (const [name, entry] of Object.entries(services)) {
      expect(entry.image, `${name}: image`).toBeTypeOf('string');
      expect(pinnedVersion(entry.image!), `${name}: ${entry.image} is not pinned by version`).toBeDefined();
    }
    expect(service('postgresql').image).toMatch(/^postgres:16\.\d+$/);
    expect(service('temporal').image).toBe('temporalio/server:1.29.1');
    for (const job of oneShotJobs) expect(service(job).image).toMatch(/^temporalio\/admin-tools:1\.29\.1\b/);
    expect(service('temporal-ui').image).toMatch(/^temporalio\/ui:\d+\.\d+\.\d+$/);
  });

  it("builds toolgate's image from the Dockerfile, tagged with the package's version", () => {
    const { version } = JSON.parse(read('package.json')) as { version: string };
    for (const name of [...toolgateServices, 'orders']) {
      const entry = service(name);
      expect(entry.image, name).toBe(`toolgate:${version}`);
      expect(entry.build, name).toEqual({ context: '.' });
    }
  });

  it('gives every long-running service a healthcheck and a restart policy', () => {
    for (const [name, entry] of Object.entries(services)) {
      if ((oneShotJobs as readonly string[]).includes(name)) continue;
      expect(entry.healthcheck?.disable, name).not.toBe(true);
      expect(asList(entry.healthcheck?.test).length, `${name}: healthcheck.test`).toBeGreaterThan(1);
      expect(['always', 'unless-stopped'], `${name}: restart`).toContain(entry.restart);
    }
  });

  it('runs the admin jobs once, in order: schema before the server, namespace once it is healthy', () => {
    for (const job of oneShotJobs) {
      const entry = service(job);
      expect(entry.healthcheck, job).toBeUndefined();
      expect(entry.restart, job).toMatch(/^on-failure(:\d+)?$/);
      expect(entry.deploy?.replicas ?? 1, job).toBe(1);
      expect(asList(entry.entrypoint), job).toEqual(['/bin/sh', '/toolgate-setup/setup.sh']);
      expect(entry.volumes, job).toContain('./deploy/temporal:/toolgate-setup:ro');
    }
    expect(asList(service('temporal-schema').command)).toEqual(['schema']);
    expect(asList(service('temporal-namespace').command)).toEqual(['namespace']);
    expect(service('temporal-schema').depends_on).toEqual({ postgresql: { condition: 'service_healthy' } });
    expect(service('temporal').depends_on).toMatchObject({
      postgresql: { condition: 'service_healthy' },
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    expect(service('temporal-namespace').depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
    // Nothing that talks to Temporal starts before its namespace and search attributes exist.
    for (const name of ['worker', 'console', 'mcp']) {
      expect(service(name).depends_on, name).toMatchObject({
        'temporal-namespace': { condition: 'service_completed_successfully' },
      });
    }
    expect(service('temporal-ui').depends_on).toMatchObject({ temporal: { condition: 'service_healthy' } });
  });

  it('uses only the documented conditions in depends_on, and names only services that exist', () => {
    for (const [name, entry] of Object.entries(services)) {
      const dependsOn = entry.depends_on ?? {};
      expect(Array.isArray(dependsOn), `${name}: depends_on must carry conditions`).toBe(false);
      for (const [target, { condition }] of Object.entries(
        dependsOn as Record<string, { condition: string }>,
      )) {
        expect(services[target], `${name} depends on ${target}`).toBeDefined();
        const expected = (oneShotJobs as readonly string[]).includes(target)
          ? 'service_completed_successfully'
          : 'service_healthy';
        expect(condition, `${name} -> ${target}`).toBe(expected);
      }
    }
  });

  it('publishes exactly the Web UI, the console, the MCP server and the codec server, on loopback', () => {
    const published = Object.fromEntries(
      Object.entries(services)
        .filter(([, entry]) => entry.ports !== undefined && entry.ports.length > 0)
        .map(([name, entry]) => [name, entry.ports]),
    );
    expect(published).toEqual(allowedPublished);
  });

  it('gives each toolgate process the environment it needs, secrets from env files only', () => {
    const common = [
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TOOLGATE_TASK_QUEUE',
      'TOOLGATE_CONFIG',
      'TOOLGATE_AUDIT_URL',
      'TOOLGATE_CODEC_KEYS',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'ORDERS_URL',
    ];
    const needs: Record<(typeof toolgateServices)[number], string[]> = {
      worker: [...common, 'TOOLGATE_METRICS_PORT', 'TOOLGATE_METRICS_HOST'],
      console: common,
      mcp: common,
      'codec-server': ['TOOLGATE_CODEC_KEYS', 'TOOLGATE_CODEC_TOKEN'],
    };
    const secrets = ['TOOLGATE_AUDIT_URL', 'TOOLGATE_CODEC_KEYS', 'TOOLGATE_CODEC_TOKEN'];
    for (const name of toolgateServices) {
      const entry = service(name);
      const environment = environmentOf(entry);
      for (const variable of needs[name])
        expect(environment.has(variable), `${name}: ${variable}`).toBe(true);
      expect(envFilesOf(entry), name).toContain('deploy/toolgate.env');
      const inline = Object.keys((entry.environment as Record<string, unknown> | undefined) ?? {});
      for (const secret of secrets)
        expect(inline, `${name}: ${secret} belongs in an env file`).not.toContain(secret);
    }
    const worker = service('worker').environment as Record<string, unknown>;
    expect(worker).toMatchObject({
      TEMPORAL_ADDRESS: 'temporal:7233',
      TOOLGATE_CONFIG: '/app/toolgate.config.ts',
      ORDERS_URL: 'http://orders:4100',
    });
    // Optional: taken from the shell when set there, never set to an empty string.
    expect(worker.OTEL_EXPORTER_OTLP_ENDPOINT).toBeNull();
    // The UI and the admin jobs look at the namespace the workers use.
    expect(service('temporal-namespace').environment).toMatchObject({
      TEMPORAL_NAMESPACE: worker.TEMPORAL_NAMESPACE,
    });
    expect(service('temporal-ui').environment).toMatchObject({
      TEMPORAL_DEFAULT_NAMESPACE: worker.TEMPORAL_NAMESPACE,
      TEMPORAL_CODEC_ENDPOINT: 'http://127.0.0.1:4301',
    });
  });

  it('runs the right toolgate command in each service, listening where the compose network reaches it', () => {
    expect(asList(service('worker').command)).toEqual(['worker']);
    expect(asList(service('console').command)).toEqual(
      expect.arrayContaining(['console', '--host', '0.0.0.0', '--port', '4300', '--policy']),
    );
    expect(asList(service('mcp').command)).toEqual(['mcp', 'http', '--host', '0.0.0.0', '--port', '4200']);
    expect(asList(service('codec-server').command).slice(0, 1)).toEqual(['codec-server']);
    expect(asList(service('orders').entrypoint)).toEqual([
      'node',
      '--import',
      'tsx',
      'deploy/orders-service.mjs',
    ]);
    expect(service('orders').environment).toMatchObject({ ORDERS_PORT: '4100' });
  });

  it('runs two worker replicas and lets them scale (no fixed name, no published port)', () => {
    const worker = service('worker') as Service & { container_name?: string };
    expect(worker.deploy?.replicas).toBe(2);
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports).toBeUndefined();
  });

  it('mounts keys read-only from a host folder, and no private key into the console or the orders service', () => {
    expect(service('worker').volumes).toContain('./deploy/keys:/app/.toolgate/keys:ro');
    expect(service('mcp').volumes).toContain('./deploy/keys:/app/.toolgate/keys:ro');
    for (const name of Object.keys(services)) {
      for (const volume of service(name).volumes ?? []) {
        const text = typeof volume === 'string' ? volume : `${volume.source}:${volume.target}`;
        if (text.startsWith('./deploy/keys')) expect(text, `${name}: ${text}`).toMatch(/:ro$/);
      }
    }
    expect(service('console').volumes).toEqual(['./deploy/console:/etc/toolgate/console:ro']);
    expect(service('orders').volumes).toContain('./deploy/keys/minter.pub:/etc/orders/minter.pub:ro');
  });

  it('keeps state in named volumes', () => {
    const volumes = Object.keys(
      (parse(read('docker-compose.yml')) as { volumes: Record<string, unknown> }).volumes,
    );
    expect(volumes.sort()).toEqual(['mcp-state', 'orders-data', 'postgres-data']);
    expect(service('postgresql').volumes).toEqual(['postgres-data:/var/lib/postgresql/data']);
  });
});

describe('deploy/', () => {
  it('ships every env file compose reads as an example with placeholders, and ignores the real ones', () => {
    const files = new Set(Object.values(services).flatMap(envFilesOf));
    expect([...files].sort()).toEqual([
      'deploy/postgres.env',
      'deploy/temporal-ui.env',
      'deploy/toolgate.env',
    ]);
    for (const file of files) expect(existsSync(join(root, `${file}.example`)), `${file}.example`).toBe(true);
    expect(read('deploy/.gitignore')).toMatch(/^\*\.env$/m);
    for (const [name, value] of Object.entries({ ...envFile('deploy/toolgate.env.example') })) {
      expect(value, `${name}: a placeholder, never a real secret`).toMatch(/change-me/);
    }
    const postgres = envFile('deploy/postgres.env.example');
    expect(postgres.POSTGRES_PASSWORD).toMatch(/change-me/);
    // The server image reads the password as POSTGRES_PWD: the example keeps the two equal.
    expect(postgres.POSTGRES_PWD).toBe(postgres.POSTGRES_PASSWORD);
    expect(read('deploy/.gitignore')).toMatch(/^keys\/$/m);
    expect(read('.dockerignore')).toMatch(/^deploy\/keys$/m);
    expect(read('.dockerignore')).toMatch(/^\*\*\/\*\.env$/m);
  });

  it("registers exactly toolgate's search attributes, with their types", () => {
    const script = read('deploy/temporal/setup.sh');
    const line = /for attribute in ([^;]+);/.exec(script)?.[1] ?? '';
    const registered: Record<string, string> = {};
    for (const pair of line.trim().split(/\s+/)) {
      const [name = '', type = ''] = pair.split(':');
      registered[name] = type;
    }
    const typeNames: Record<string, string> = { KEYWORD: 'Keyword', INT: 'Int', TEXT: 'Text', BOOL: 'Bool' };
    const expected = Object.fromEntries(
      Object.values(searchAttributes).map((key) => [key.name, typeNames[key.type] ?? key.type]),
    );
    expect(registered).toEqual(expected);
    // Both stores' schemas come from the admin-tools image, by the server's own schema tool.
    expect(script).toContain('/etc/temporal/schema/postgresql/v12');
    expect(script).toMatch(/temporal-sql-tool --plugin postgres12/);
    expect(script).toMatch(/"\$\{VISIBILITY_DBNAME:-temporal_visibility\}:visibility"/);
    expect(script).toMatch(/--retention "\$retention"/);
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
  const finalStage = instructions.slice(
    instructions.map((line) => line.startsWith('FROM ')).lastIndexOf(true),
  );
  const jsonArgs = (keyword: string): string[] | undefined => {
    const line = finalStage.filter((entry) => entry.startsWith(`${keyword} `)).at(-1);
    return line === undefined ? undefined : (JSON.parse(line.slice(keyword.length + 1)) as string[]);
  };

  it('builds the package with npm ci and npm run build, from a Node image pinned by version', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:\d+\.\d+\.\d+-[\w-]+$/m);
    expect(dockerfile).toMatch(/^RUN npm ci\b/m);
    expect(dockerfile).toMatch(/^RUN npm run build$/m);
  });

  it('runs as a non-root user', () => {
    const user = finalStage.filter((line) => line.startsWith('USER ')).at(-1);
    expect(user).toBeDefined();
    expect(user!.slice('USER '.length).trim()).not.toMatch(/^(root|0)(:|$)/);
  });

  it('runs `toolgate worker` by default, the command the worker service uses', () => {
    expect(jsonArgs('ENTRYPOINT')).toEqual(['toolgate']);
    expect(jsonArgs('CMD')).toEqual(['worker']);
    expect(finalStage.join('\n')).toContain('ln -s /app/bin/toolgate.cjs /usr/local/bin/toolgate');
    expect(existsSync(join(root, 'bin', 'toolgate.cjs'))).toBe(true);
    // The compose file's healthchecks and the orders entry are in the image.
    expect(existsSync(join(root, 'deploy', 'healthcheck.cjs'))).toBe(true);
    expect(existsSync(join(root, 'deploy', 'orders-service.mjs'))).toBe(true);
  });

  it('keeps local state, secrets and build output out of the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .filter((line) => line && !line.startsWith('#'));
    for (const entry of ['.git', 'node_modules', 'dist', '.toolgate', 'deploy/keys', '**/*.env'])
      expect(ignored, entry).toContain(entry);
  });
});
