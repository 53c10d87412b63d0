// The production topology (docker-compose.yml, Dockerfile, deploy/) checked by reading it: this machine
// has no Docker engine, so the test parses the files and holds them to the rules docs/operations.md states.
import { existsSync, readFileSync } from 'node:fs';
import { join, posix, resolve } from 'node:path';
import { keyPaths } from 'toolgate';
import { searchAttributes } from 'toolgate/protocol';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = resolve(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
/** docs/operations.md's "### docker compose" section, up to the next section of its level. */
const dockerComposeSection = (): string =>
  read('docs/operations.md').split('\n### docker compose\n')[1]?.split('\n### ')[0] ?? '';

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
const oneShotJobs = ['temporal-schema', 'audit-schema', 'temporal-namespace'] as const;
/** The one-shot jobs of the admin-tools image, running deploy/temporal/setup.sh. */
const adminJobs = ['temporal-schema', 'temporal-namespace'] as const;
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

/** A service's bind mounts from the host: the host path (normalised, relative to the file) and the target. */
function bindMounts(entry: Service): { host: string; target: string; readOnly: boolean }[] {
  return (entry.volumes ?? []).flatMap((volume) => {
    const [source = '', target = '', mode = ''] =
      typeof volume === 'string'
        ? volume.split(':')
        : [volume.source ?? '', volume.target, volume.read_only ? 'ro' : ''];
    if (!source.startsWith('.') && !source.startsWith('/')) return []; // a named volume
    return [{ host: posix.normalize(source), target, readOnly: mode.split(',').includes('ro') }];
  });
}

/** Whether `path` is `folder` or inside it. */
const within = (path: string, folder: string): boolean =>
  path === folder || path.startsWith(folder.endsWith('/') ? folder : `${folder}/`);

/** The keys directory the toolgate processes read: the config's default, `.toolgate/keys` under /app. */
const containerKeysDirectory = '/app/.toolgate/keys';

/** Where a key of the container's keys directory comes from on the host, through the service's mounts. */
function hostPathOf(entry: Service, containerPath: string): string | undefined {
  const mount = bindMounts(entry)
    .filter((candidate) => within(containerPath, candidate.target))
    .sort((a, b) => b.target.length - a.target.length)[0];
  return mount && posix.join(mount.host, posix.relative(mount.target, containerPath));
}

/** The secrets of the env files, and which files carry them: what each service may be given. */
const secretVariables = [
  'TOOLGATE_AUDIT_URL',
  'TOOLGATE_AUDIT_OWNER_URL',
  'TOOLGATE_CODEC_KEYS',
  'TOOLGATE_CODEC_TOKEN',
  'POSTGRES_USER',
  'POSTGRES_PASSWORD',
  'POSTGRES_PWD',
];

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
        'audit-schema',
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
    for (const job of adminJobs) expect(service(job).image).toMatch(/^temporalio\/admin-tools:1\.29\.1\b/);
    expect(service('temporal-ui').image).toMatch(/^temporalio\/ui:\d+\.\d+\.\d+$/);
  });

  it("builds toolgate's image from the Dockerfile, tagged with the package's version", () => {
    const { version } = JSON.parse(read('package.json')) as { version: string };
    for (const name of [...toolgateServices, 'audit-schema', 'orders']) {
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
    }
    for (const job of adminJobs) {
      const entry = service(job);
      expect(asList(entry.entrypoint), job).toEqual(['/bin/sh', '/toolgate-setup/setup.sh']);
      expect(entry.volumes, job).toContain('./deploy/temporal:/toolgate-setup:ro');
    }
    // The audit tables by their owner, once the schema job made the roles; the processes that write
    // the audit store start after it.
    expect(asList(service('audit-schema').command)).toEqual(['audit', 'init']);
    expect(service('audit-schema').depends_on).toEqual({
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    for (const name of ['worker', 'console']) {
      expect(service(name).depends_on, name).toMatchObject({
        'audit-schema': { condition: 'service_completed_successfully' },
      });
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

  // Review 14: every toolgate service used to get one env file with the superuser's audit URL, the
  // codec keys and the codec token.
  it('gives each service exactly the env files it needs', () => {
    expect(
      Object.fromEntries(Object.entries(services).map(([name, entry]) => [name, envFilesOf(entry)])),
    ).toEqual({
      postgresql: ['deploy/postgres.env'],
      // The superuser's password, and the audit URLs to create their roles with.
      'temporal-schema': ['deploy/postgres.env', 'deploy/audit-owner.env', 'deploy/audit.env'],
      // The owner makes the tables and grants the processes' role insert and read.
      'audit-schema': ['deploy/audit-owner.env', 'deploy/audit.env'],
      temporal: ['deploy/postgres.env'],
      'temporal-namespace': [],
      'temporal-ui': ['deploy/temporal-ui.env'],
      'codec-server': ['deploy/codec-keys.env', 'deploy/codec-token.env'],
      worker: ['deploy/audit.env', 'deploy/codec-keys.env'],
      // It reads the audit record (and writes the decisions it relays): the insert-and-read role.
      console: ['deploy/audit.env', 'deploy/codec-keys.env'],
      mcp: ['deploy/codec-keys.env'],
      orders: [],
    });
  });

  it('gives each toolgate process the environment it needs and no secret it does not, from env files only', () => {
    const common = [
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TOOLGATE_TASK_QUEUE',
      'TOOLGATE_CONFIG',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'ORDERS_URL',
    ];
    const needs: Record<(typeof toolgateServices)[number], string[]> = {
      worker: [
        ...common,
        'TOOLGATE_AUDIT_URL',
        'TOOLGATE_CODEC_KEYS',
        'TOOLGATE_METRICS_PORT',
        'TOOLGATE_METRICS_HOST',
      ],
      console: [...common, 'TOOLGATE_AUDIT_URL', 'TOOLGATE_CODEC_KEYS'],
      mcp: [...common, 'TOOLGATE_CODEC_KEYS'],
      'codec-server': [
        'TOOLGATE_CODEC_KEYS',
        'TOOLGATE_CODEC_TOKEN',
        // Verifying the Web UI's OIDC access tokens: not secrets, passed from the shell or .env.
        'TOOLGATE_CODEC_JWT_ISSUER',
        'TOOLGATE_CODEC_JWT_AUDIENCE',
        'TOOLGATE_CODEC_JWKS_URL',
        'TOOLGATE_CODEC_JWT_CLAIM',
      ],
    };
    for (const name of [...toolgateServices, 'orders'] as const) {
      const entry = service(name);
      const environment = environmentOf(entry);
      const needed = name === 'orders' ? [] : needs[name];
      for (const variable of needed) expect(environment.has(variable), `${name}: ${variable}`).toBe(true);
      for (const secret of secretVariables.filter((variable) => !needed.includes(variable)))
        expect(environment.has(secret), `${name} is given ${secret}`).toBe(false);
      const inline = Object.keys((entry.environment as Record<string, unknown> | undefined) ?? {});
      for (const secret of secretVariables)
        expect(inline, `${name}: ${secret} belongs in an env file`).not.toContain(secret);
    }
    // Secrets never in the compose file itself: no service names one inline.
    for (const [name, entry] of Object.entries(services)) {
      const inline = Array.isArray(entry.environment)
        ? entry.environment.map((item) => item.split('=')[0]!)
        : Object.keys(entry.environment ?? {});
      for (const secret of secretVariables) expect(inline, `${name}: ${secret}`).not.toContain(secret);
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

  it('mounts each process a keys folder of its own, read-only, laid out as the keys directory it reads', () => {
    expect(bindMounts(service('worker'))).toEqual([
      { host: 'deploy/keys/worker', target: containerKeysDirectory, readOnly: true },
    ]);
    expect(bindMounts(service('mcp'))).toEqual([
      { host: 'deploy/keys/mcp', target: containerKeysDirectory, readOnly: true },
    ]);
    expect(bindMounts(service('console'))).toEqual([
      { host: 'deploy/console', target: '/etc/toolgate/console', readOnly: true },
    ]);
    expect(bindMounts(service('orders'))).toEqual([
      { host: 'deploy/keys/orders', target: '/etc/orders/keys', readOnly: true },
    ]);
    expect(service('orders').environment).toMatchObject({
      ORDERS_MINTER_PUBLIC_KEY: '/etc/orders/keys/minter.pub',
    });
    expect(bindMounts(service('codec-server'))).toEqual([]);
    // Every host folder with keys is mounted read-only, and no two services share one.
    const hosts = Object.values(services).flatMap((entry) => bindMounts(entry));
    for (const mount of hosts) expect(mount.readOnly, mount.host).toBe(true);
    const keyFolders = hosts.filter((mount) => within(mount.host, 'deploy/keys')).map((mount) => mount.host);
    expect(new Set(keyFolders).size).toBe(keyFolders.length);
    for (const [a, b] of keyFolders.flatMap((x) => keyFolders.map((y) => [x, y] as const)))
      if (a !== b) expect(within(a, b), `${a} inside ${b}`).toBe(false);
  });

  // Review 14: the whole of deploy/keys (minter.key included) was mounted into the MCP front end, and
  // the callers' private keys into the workers.
  it('gives the minter key to the workers only: no other service mounts a folder that holds it', () => {
    // Where the worker reads its minter key (start-worker: keyPaths of the keys directory), on the host.
    const minter = keyPaths({ directory: containerKeysDirectory, owner: { kind: 'minter' } });
    const minterKey = hostPathOf(service('worker'), minter.privateKey);
    expect(minterKey).toBe('deploy/keys/worker/minter.key');
    const workerFolder = posix.dirname(minterKey!);
    for (const [name, entry] of Object.entries(services)) {
      if (name === 'worker') continue;
      for (const mount of bindMounts(entry)) {
        expect(within(minterKey!, mount.host), `${name} mounts ${mount.host}, which holds ${minterKey}`).toBe(
          false,
        );
        expect(within(mount.host, workerFolder), `${name} mounts ${mount.host}, in the workers' folder`).toBe(
          false,
        );
      }
    }
    // The MCP server reads the same keys directory: its minter key path lands in its own folder, where
    // the documented steps never put one.
    const mcpMinter = hostPathOf(service('mcp'), minter.privateKey);
    expect(mcpMinter).toBe('deploy/keys/mcp/minter.key');
    const startIt = dockerComposeSection().split('#### Start it')[1]?.split('\n#### ')[0] ?? '';
    const copies = startIt.split('\n').filter((line) => /\bcp\b.*minter\.key/.test(line));
    expect(copies.length, 'the docs copy the minter key somewhere').toBeGreaterThan(0);
    for (const line of copies) expect(line, line).toMatch(/deploy\/keys\/worker\/?(\s|$)/);
    // The backend gets the public half only.
    expect(startIt).toMatch(/cp "\$from\/minter\.pub" deploy\/keys\/orders\//);
    // The MCP server gets its callers' private keys; the workers get none of them.
    expect(startIt).toMatch(/cp "\$from"\/callers\/\*\.key deploy\/keys\/mcp\/callers\//);
    expect(startIt).not.toMatch(/callers\/\*\.key deploy\/keys\/worker/);
  });

  it('hands the PostgreSQL superuser to the database, the Temporal server and the schema job only', () => {
    const postgres = envFile('deploy/postgres.env.example');
    for (const [name, entry] of Object.entries(services)) {
      const holdsSuperuser = envFilesOf(entry).some(
        (file) => 'POSTGRES_PASSWORD' in envFile(`${file}.example`),
      );
      expect(holdsSuperuser, name).toBe(['postgresql', 'temporal', 'temporal-schema'].includes(name));
    }
    // The audit store connects as a role of its own, with a password of its own.
    const audit = new URL(envFile('deploy/audit.env.example').TOOLGATE_AUDIT_URL ?? '');
    expect(audit.username).not.toBe(postgres.POSTGRES_USER);
    expect(audit.password).not.toBe(postgres.POSTGRES_PASSWORD);
    expect(audit.pathname).toBe('/toolgate_audit');
    expect(audit.password).toMatch(/^[A-Za-z0-9._~-]+$/);
    // The owner of its tables: another role, another password, the same database; held by the two
    // set-up jobs only.
    const ownerUrl = new URL(envFile('deploy/audit-owner.env.example').TOOLGATE_AUDIT_OWNER_URL ?? '');
    expect(ownerUrl.username).not.toBe(audit.username);
    expect(ownerUrl.username).not.toBe(postgres.POSTGRES_USER);
    expect(ownerUrl.password).not.toBe(audit.password);
    expect(ownerUrl.password).toMatch(/^[A-Za-z0-9._~-]+$/);
    expect([ownerUrl.host, ownerUrl.pathname]).toEqual([audit.host, audit.pathname]);
    for (const [name, entry] of Object.entries(services)) {
      expect(envFilesOf(entry).includes('deploy/audit-owner.env'), name).toBe(
        ['temporal-schema', 'audit-schema'].includes(name),
      );
    }
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
      'deploy/audit-owner.env',
      'deploy/audit.env',
      'deploy/codec-keys.env',
      'deploy/codec-token.env',
      'deploy/postgres.env',
      'deploy/temporal-ui.env',
    ]);
    for (const file of files) expect(existsSync(join(root, `${file}.example`)), `${file}.example`).toBe(true);
    // The one file every toolgate service used to share is gone.
    expect(existsSync(join(root, 'deploy/toolgate.env.example'))).toBe(false);
    expect(read('deploy/.gitignore')).toMatch(/^\*\.env$/m);
    for (const file of [
      'deploy/audit-owner.env',
      'deploy/audit.env',
      'deploy/codec-keys.env',
      'deploy/codec-token.env',
    ]) {
      const entries = Object.entries(envFile(`${file}.example`));
      expect(entries.length, file).toBe(1);
      for (const [name, value] of entries)
        expect(value, `${file}: ${name}: a placeholder, never a real secret`).toMatch(/change-me/);
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

  // What the script does is proved by running it against a real PostgreSQL and Temporal server
  // (test/cluster/compose-setup.cluster.ts); this checks the rules a reader relies on.
  it('gives the audit store two roles of their own, the owner of its database and the processes’ one', () => {
    const script = read('deploy/temporal/setup.sh');
    const audit = script.slice(script.indexOf('audit_store() {'));
    expect(script).toMatch(/^ {2}audit_store$/m);
    expect(audit).toContain('${TOOLGATE_AUDIT_OWNER_URL:?');
    expect(audit).toContain('${TOOLGATE_AUDIT_URL:?');
    expect(audit).toMatch(
      /\$verb ROLE "\$1" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS/,
    );
    expect(audit).toMatch(/ALTER DATABASE \\"\$database\\" OWNER TO \\"\$owner\\"/);
    expect(audit).toMatch(/REVOKE ALL ON DATABASE \\"\$database\\" FROM PUBLIC/);
    // Never the superuser, never one role for both, and the password never on a command line.
    expect(audit).toMatch(/if \[ "\$role" = "\$POSTGRES_USER" \]/);
    expect(audit).toMatch(/if \[ "\$writer" = "\$owner" \]/);
    expect(audit).toMatch(/statements postgres <<SQL/);
    // Temporal's databases: nobody but their owner connects.
    expect(script).toMatch(/REVOKE ALL ON DATABASE \\"\$database\\" FROM PUBLIC" >\/dev\/null\n {2}done/);
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

  it('bakes no secret into the image', () => {
    const body = instructions.join('\n');
    for (const secret of secretVariables) expect(body, secret).not.toContain(secret);
    expect(body).not.toMatch(/^(COPY|ADD)\b.*(deploy\/keys|\.env\b|\.key\b)/m);
  });
});
