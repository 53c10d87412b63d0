import { spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { setPriority, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporalAddress } from '../support/temporal';

// A new user's path, end to end: `npm pack` the repository, install the tarball into a project
// outside it, write a second domain there (test/package/ticketing: a ticketing service), type-check it
// against the installed declarations and run it against a real Temporal server, through the
// package's public entries only. Slow by nature (the install may compile better-sqlite3): each step
// has its own generous timeout, and the measured durations are printed at the end.

const repositoryRoot = join(__dirname, '..', '..');
const fixtureSource = join(__dirname, 'ticketing');
const minutes = 60_000;
const isWindows = process.platform === 'win32';

/**
 * Runs a command to its end and returns its output; a non-zero exit or the timeout throws with the
 * output's tail. The command runs in a process group of its own, so a timeout stops everything it
 * started (npm's compilers, the scenario's Temporal server), not just the command itself.
 */
function run(input: {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Yield the CPU to the other test files running meanwhile (the build and a native compile are long). */
  background?: boolean;
}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(input.command, input.args, {
      cwd: input.cwd,
      env: input.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: !isWindows,
      // npm and the installed bin are .cmd shims on Windows, which only a shell runs.
      shell: isWindows,
    });
    // What npm starts (tsc, webpack, the C++ compiler) inherits the priority.
    if (input.background && child.pid !== undefined) setPriority(child.pid, 10);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid !== undefined && !isWindows) process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        // The group ended meanwhile: nothing is left to stop.
      }
    }, input.timeoutMs);
    const tail = (text: string) => text.split('\n').slice(-60).join('\n');
    const failed = (reason: string) =>
      new Error(
        `${input.command} ${input.args.join(' ')} ${reason} in ${input.cwd}\n` +
          `stdout:\n${tail(stdout)}\nstderr:\n${tail(stderr)}`,
      );
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(failed(`could not start (${error.message})`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) reject(failed(`did not finish within ${input.timeoutMs / 1000} s`));
      else if (code !== 0) reject(failed(`failed (${code ?? signal ?? 'unknown'})`));
      else resolve({ stdout, stderr });
    });
  });
}

/**
 * The environment of a user's shell in their own project: none of the variables `npm test` sets that
 * name this repository (its package, script and prefix; npm's own settings, such as its cache, stay),
 * no NODE_OPTIONS or vitest variables, and no Temporal address or CLI unless given.
 */
const notTheUsers =
  /^(npm_package_|npm_lifecycle_|npm_command$|npm_execpath$|npm_node_execpath$|npm_config_local_prefix$|init_cwd$|vitest|node_options$|temporal_address$|temporal_cli$)/i;

function userEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!notTheUsers.test(name)) environment[name] = value;
  }
  return { ...environment, ...extra };
}

/**
 * The Temporal CLI startDevServer would find without building or downloading one: TEMPORAL_CLI (as CI
 * sets it), this repository's .toolgate/bin, or PATH; undefined when there is none.
 */
function findTemporalCli(): string | undefined {
  const name = isWindows ? 'temporal.exe' : 'temporal';
  const candidates = [
    process.env.TEMPORAL_CLI,
    join(repositoryRoot, '.toolgate', 'bin', name),
    ...(process.env.PATH ?? '').split(delimiter).map((directory) => join(directory, name)),
  ];
  return candidates.find((candidate) => candidate !== undefined && candidate !== '' && existsSync(candidate));
}

/** Every file under `directory`, as paths relative to it with forward slashes. */
function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) =>
      join(entry.parentPath, entry.name)
        .slice(directory.length + 1)
        .replace(/\\/g, '/'),
    )
    .sort();
}

/** How long each slow step took, printed after the run (CI cost is watched). */
const durations: Record<string, string> = {};

async function timed<T>(step: string, action: () => Promise<T>): Promise<T> {
  const startedAt = Date.now();
  try {
    return await action();
  } finally {
    durations[step] = `${((Date.now() - startedAt) / 1000).toFixed(1)} s`;
  }
}

/** The scenario's summary line (run-scenario.ts), as the test reads it. */
interface BriefResult {
  ok: boolean;
  code: string;
  effect: string;
  message: string;
  callId: string;
  data?: Record<string, unknown>;
  replayed?: boolean;
}

interface ScenarioSummary {
  startedServer: boolean;
  definitions: string[];
  read: BriefResult;
  invalid: BriefResult;
  closedTicket: BriefResult;
  pending: BriefResult;
  appliedWhilePending: number;
  listedPending: { tool: string; riskLevel: string; preview: Record<string, unknown> } | null;
  decision: { accepted: boolean; code?: string };
  final: BriefResult | null;
  again: BriefResult;
  backend: {
    appliedUpdates: number;
    updateRequests: number;
    credentialsAccepted: number;
    credentialsRefused: number;
  };
  ticket: Record<string, unknown>;
  audit: { code: string; riskLevel?: string; approvers: string[] }[];
}

describe('the packed package, installed into a new project outside the repository', () => {
  let workspace: string;
  let project: string;
  let installedPackage: string;
  let tarball: string | undefined;

  beforeAll(() => {
    workspace = mkdtempSync(join(tmpdir(), 'toolgate-packed-'));
    project = join(workspace, 'ticketing');
    installedPackage = join(project, 'node_modules', 'toolgate');
  });

  afterAll(() => {
    rmSync(workspace, { recursive: true, force: true });
    console.info(`packed-package durations: ${JSON.stringify(durations)}`);
  });

  it(
    'packs the repository into a tarball (prepack builds dist/ and the workflow bundle)',
    async () => {
      const destination = join(workspace, 'pack');
      mkdirSync(destination);
      await timed('pack', () =>
        run({
          command: 'npm',
          args: ['pack', '--pack-destination', destination],
          cwd: repositoryRoot,
          env: userEnvironment(),
          timeoutMs: 6 * minutes,
          background: true,
        }),
      );
      const packed = readdirSync(destination).filter((name) => name.endsWith('.tgz'));
      expect(packed).toHaveLength(1);
      tarball = join(destination, packed[0]!);
    },
    7 * minutes,
  );

  it(
    'installs from the tarball with npm, native dependencies built, into a project that names its own dependencies',
    async () => {
      expect(tarball, 'the pack step did not produce a tarball').toBeDefined();
      cpSync(fixtureSource, project, { recursive: true });
      // The fixture's package.json depends on "file:./toolgate.tgz".
      copyFileSync(tarball!, join(project, 'toolgate.tgz'));
      await timed('install', () =>
        run({
          command: 'npm',
          args: ['install', '--prefer-offline', '--no-audit', '--no-fund'],
          cwd: project,
          env: userEnvironment(),
          timeoutMs: 12 * minutes,
          background: true,
        }),
      );
      expect(existsSync(join(installedPackage, 'package.json'))).toBe(true);
    },
    13 * minutes,
  );

  it('ships dist/ with declarations, the prebuilt workflow bundle and the bin, and no sources or tests', () => {
    const files = filesUnder(installedPackage);
    expect(files).toEqual(
      expect.arrayContaining([
        'bin/toolgate.cjs',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/backend.js',
        'dist/backend.d.ts',
        'dist/testing.js',
        'dist/testing.d.ts',
        'dist/workflows.bundle.js',
      ]),
    );
    expect(files.filter((file) => /^(src|test|examples|bench|scripts)\//.test(file))).toEqual([]);
    expect(files.filter((file) => /\.test\.|\.tsbuildinfo$/.test(file))).toEqual([]);
    // Users never write workflow code, and a config has no place for it.
    expect(readFileSync(join(installedPackage, 'dist', 'config.d.ts'), 'utf8')).not.toMatch(/workflowsPath/);
    for (const file of readdirSync(fixtureSource).filter((name) => name.endsWith('.ts'))) {
      expect(readFileSync(join(fixtureSource, file), 'utf8'), file).not.toMatch(
        /workflowsPath|@temporalio\/workflow/,
      );
    }
  });

  it(
    "type-checks and compiles the user's ticketing domain with tsc against the installed declarations",
    async () => {
      const tsc = join(project, 'node_modules', 'typescript', 'bin', 'tsc');
      await timed('tsc', () =>
        run({
          command: process.execPath,
          args: [tsc, '-p', 'tsconfig.json'],
          cwd: project,
          env: userEnvironment(),
          timeoutMs: 3 * minutes,
        }),
      );
      expect(existsSync(join(project, 'run-scenario.js'))).toBe(true);
    },
    4 * minutes,
  );

  it('ships declarations that import only shipped files, its dependencies and Node built-ins', () => {
    // The user's tsconfig skips library checks, as most do: a declaration importing a file that was
    // not shipped would pass there as `any`. (A full `tsc --skipLibCheck false` takes longer than the
    // whole scenario and fails on @temporalio/common's own declarations, so this checks the imports.)
    const manifest = JSON.parse(readFileSync(join(installedPackage, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
    };
    const declared = new Set([
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]);
    const unresolved: string[] = [];
    const declarations = filesUnder(installedPackage).filter((file) => file.endsWith('.d.ts'));
    expect(declarations.length).toBeGreaterThan(10);
    for (const file of declarations) {
      const text = readFileSync(join(installedPackage, file), 'utf8');
      for (const [, specifier] of text.matchAll(
        /(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)['"]([^'"]+)['"]/gm,
      )) {
        if (specifier === undefined || specifier.startsWith('node:') || builtinModules.includes(specifier))
          continue;
        if (specifier.startsWith('.')) {
          const target = join(installedPackage, dirname(file), specifier).replace(/\.js$/, '');
          if (![`${target}.d.ts`, join(target, 'index.d.ts')].some((candidate) => existsSync(candidate))) {
            unresolved.push(`${file}: ${specifier}`);
          }
          continue;
        }
        const name = specifier
          .split('/')
          .slice(0, specifier.startsWith('@') ? 2 : 1)
          .join('/');
        if (!declared.has(name)) unresolved.push(`${file}: ${specifier} (not a dependency)`);
      }
    }
    expect(unresolved).toEqual([]);
  });

  it(
    'runs a governed read, rejected calls and an approved write against a real Temporal server, applied once',
    async () => {
      // A dev server of the scenario's own, through the installed toolgate/testing, when a Temporal CLI
      // is at hand; otherwise the run's shared server.
      const cli = findTemporalCli();
      const temporal: Record<string, string> =
        cli !== undefined ? { TEMPORAL_CLI: cli } : { TEMPORAL_ADDRESS: temporalAddress() };
      const ran = await timed('scenario', () =>
        run({
          command: process.execPath,
          args: ['run-scenario.js'],
          cwd: project,
          env: userEnvironment(temporal),
          timeoutMs: 4 * minutes,
        }),
      );
      const line = ran.stdout.split('\n').find((text) => text.startsWith('TICKETING_SUMMARY '));
      expect(line, `no summary line; stderr:\n${ran.stderr}`).toBeDefined();
      const summary = JSON.parse(line!.slice('TICKETING_SUMMARY '.length)) as ScenarioSummary;

      expect(summary.startedServer).toBe(cli !== undefined);
      expect(summary.definitions).toEqual(['get_ticket', 'update_ticket']);

      // 1. A governed read.
      expect(summary.read).toMatchObject({
        ok: true,
        code: 'OK',
        effect: 'none',
        data: { ticket_id: 'TCK-1001', status: 'open', priority: 'normal' },
      });

      // 2. Rejected: every broken field of the nested object and the array named, nothing sent anywhere.
      expect(summary.invalid).toMatchObject({ ok: false, code: 'INVALID_ARGUMENTS', effect: 'none' });
      expect(summary.invalid.message).toContain(
        'changes.priority: must be one of "low", "normal", "high", "urgent"',
      );
      expect(summary.invalid.message).toContain('changes.assignee: unknown field');
      expect(summary.invalid.message).toContain('tags.1: must match');
      expect((summary.invalid.data?.issues as { field: string }[]).map((issue) => issue.field)).toEqual([
        'changes.priority',
        'changes.assignee',
        'tags.1',
      ]);
      // ... and refused by the domain's business check, with the domain's own code.
      expect(summary.closedTicket).toMatchObject({ ok: false, code: 'TICKET_CLOSED', effect: 'none' });

      // 3. Closing a ticket waited for carol, then ran once, with a credential the backend verified.
      expect(summary.pending).toMatchObject({
        ok: false,
        code: 'APPROVAL_PENDING',
        effect: 'none',
        data: { riskLevel: 'irreversible', preview: { status: 'open -> closed', tags: ['billing', 'vat'] } },
      });
      expect(summary.appliedWhilePending).toBe(0);
      expect(summary.listedPending).toMatchObject({ tool: 'update_ticket', riskLevel: 'irreversible' });
      expect(summary.decision).toEqual({ accepted: true });
      expect(summary.final).toMatchObject({
        ok: true,
        code: 'OK',
        effect: 'applied',
        callId: summary.pending.callId,
        data: { ticket: { ticket_id: 'TCK-1001', status: 'closed', tags: ['billing', 'vat'] } },
      });
      // Proposed again: the recorded result, not a second update.
      expect(summary.again).toMatchObject({
        ok: true,
        code: 'OK',
        replayed: true,
        callId: summary.pending.callId,
      });
      expect(summary.backend).toEqual({
        appliedUpdates: 1,
        updateRequests: 1,
        credentialsAccepted: 1,
        credentialsRefused: 0,
      });
      expect(summary.ticket).toMatchObject({
        status: 'closed',
        priority: 'normal',
        tags: ['billing', 'vat'],
      });
      expect(summary.audit).toEqual([{ code: 'OK', riskLevel: 'irreversible', approvers: ['carol'] }]);
    },
    5 * minutes,
  );

  it("runs the installed toolgate command on the user's config and keys", async () => {
    // The policy names key files the scenario generated, so this runs after it.
    const bin = join(project, 'node_modules', '.bin', isWindows ? 'toolgate.cmd' : 'toolgate');
    const printed = await run({
      command: bin,
      args: ['--config', 'toolgate.config.js', 'definitions', '--caller', 'helpdesk-bot'],
      cwd: project,
      env: userEnvironment(),
      timeoutMs: minutes / 2,
    });
    const definitions = JSON.parse(printed.stdout) as { name: string; parameters: Record<string, unknown> }[];
    expect(definitions.map((definition) => definition.name)).toEqual(['get_ticket', 'update_ticket']);
    // The nested object reaches the model as strictly as the worker validates it.
    expect(definitions[1]?.parameters).toMatchObject({
      additionalProperties: false,
      properties: { changes: { type: 'object', additionalProperties: false }, tags: { type: 'array' } },
    });
  });
});
