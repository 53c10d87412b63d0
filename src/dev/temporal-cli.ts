import { execFile, spawn } from 'node:child_process';
import { constants as fileModes } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** The Temporal CLI release toolgate builds when none is installed. */
const temporalCliVersion = 'v1.5.1';
const temporalCliModule = `github.com/temporalio/cli/cmd/temporal@${temporalCliVersion}`;
const executableSuffix = process.platform === 'win32' ? '.exe' : '';
const buildHeartbeatMilliseconds = 30_000;

/** Where a usable Temporal CLI came from, or that the SDK must download one itself. */
export type TemporalCliResolution =
  { kind: 'path'; path: string; source: 'env' | 'path' | 'built' } | { kind: 'sdk-download' };

/** Options of {@link resolveTemporalCli}. */
export interface ResolveTemporalCliOptions {
  /** The repository root; a built CLI lives in `<projectRoot>/.toolgate/bin`. */
  projectRoot: string;
  /** Build the CLI with Go when no binary is found (default true). */
  allowBuild?: boolean;
  /** Receives one progress line at a time. */
  log: (line: string) => void;
}

/**
 * Finds a runnable Temporal CLI (TEMPORAL_CLI, then PATH, then .toolgate/bin, then a Go build);
 * throws only when TEMPORAL_CLI is set but unusable or the Go build fails, and never downloads anything itself.
 */
export async function resolveTemporalCli({
  projectRoot,
  allowBuild = true,
  log,
}: ResolveTemporalCliOptions): Promise<TemporalCliResolution> {
  const fromEnvironment = process.env.TEMPORAL_CLI;
  if (fromEnvironment !== undefined && fromEnvironment !== '') {
    const cliPath = path.resolve(fromEnvironment);
    if (!(await isExecutableFile({ filePath: cliPath }))) {
      throw new Error(
        `TEMPORAL_CLI is set to "${fromEnvironment}", but that is not an executable file. ` +
          'Fix: point TEMPORAL_CLI at a Temporal CLI binary, or unset it so toolgate finds or builds one.',
      );
    }
    const version = await readVersion({ cliPath });
    if (version === undefined) {
      throw new Error(
        `TEMPORAL_CLI is set to "${fromEnvironment}", but "${cliPath} --version" does not run. ` +
          'Fix: point TEMPORAL_CLI at a working Temporal CLI binary, or unset it so toolgate finds or builds one.',
      );
    }
    log(`Temporal CLI from TEMPORAL_CLI: ${cliPath} (${version})`);
    return { kind: 'path', path: cliPath, source: 'env' };
  }

  const onPath = await findOnPath({ name: `temporal${executableSuffix}` });
  if (onPath !== undefined) {
    const version = await readVersion({ cliPath: onPath });
    if (version !== undefined) {
      log(`Temporal CLI from PATH: ${onPath} (${version})`);
      return { kind: 'path', path: onPath, source: 'path' };
    }
    log(`Ignoring ${onPath}: "--version" does not run.`);
  }

  const binDirectory = path.join(projectRoot, '.toolgate', 'bin');
  const builtPath = path.join(binDirectory, `temporal${executableSuffix}`);
  if (await isExecutableFile({ filePath: builtPath })) {
    const version = await readVersion({ cliPath: builtPath });
    if (version !== undefined) {
      log(`Temporal CLI from ${builtPath} (${version})`);
      return { kind: 'path', path: builtPath, source: 'built' };
    }
    log(`Ignoring ${builtPath}: "--version" does not run; building it again.`);
  }

  const goPath = await findOnPath({ name: `go${executableSuffix}` });
  if (goPath === undefined || !allowBuild) {
    log(
      goPath === undefined
        ? 'No Temporal CLI and no Go toolchain found; the Temporal SDK will download the CLI when a server starts.'
        : 'No Temporal CLI found and building is disabled; the Temporal SDK will download the CLI when a server starts.',
    );
    return { kind: 'sdk-download' };
  }

  await buildWithGo({ goPath, binDirectory, log });
  const version = await readVersion({ cliPath: builtPath });
  if (version === undefined) {
    throw new Error(
      `go install finished, but ${builtPath} does not run "--version". ` +
        `Fix: delete ${binDirectory} and run "npm run temporal:cli" again, or set TEMPORAL_CLI to a working binary.`,
    );
  }
  log(`Built Temporal CLI ${builtPath} (${version})`);
  return { kind: 'path', path: builtPath, source: 'built' };
}

/** True when `filePath` is a file this process may execute. */
export async function isExecutableFile({ filePath }: { filePath: string }): Promise<boolean> {
  try {
    const info = await stat(filePath);
    if (!info.isFile()) return false;
    await access(filePath, fileModes.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable named `name` in a folder of PATH. */
export async function findOnPath({ name }: { name: string }): Promise<string | undefined> {
  const directories = (process.env.PATH ?? '').split(path.delimiter).filter((directory) => directory !== '');
  for (const directory of directories) {
    const candidate = path.join(directory, name);
    if (await isExecutableFile({ filePath: candidate })) return candidate;
  }
  return undefined;
}

/** The first line of `<cli> --version`, or undefined when the binary does not run. */
function readVersion({ cliPath }: { cliPath: string }): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(cliPath, ['--version'], { timeout: 15_000 }, (error, stdout) => {
      if (error) {
        resolve(undefined);
        return;
      }
      resolve(stdout.split('\n')[0]?.trim() || 'version unknown');
    });
  });
}

async function buildWithGo({
  goPath,
  binDirectory,
  log,
}: {
  goPath: string;
  binDirectory: string;
  log: (line: string) => void;
}): Promise<void> {
  log(
    `Building the Temporal CLI ${temporalCliVersion} with ${goPath} into ${binDirectory}; ` +
      'the first build downloads modules and takes about 5 minutes.',
  );
  await goInstall({
    goPath,
    packages: [temporalCliModule],
    gobin: binDirectory,
    what: 'the Temporal CLI',
    fix: 'or install the Temporal CLI yourself and set TEMPORAL_CLI to its path',
    log,
  });
}

/**
 * Runs `go install <packages>` into `gobin` (CGO off; GOPROXY, GOFLAGS and the module cache from the
 * caller's environment), passing its output to `log` with a heartbeat every 30 s; throws with its last
 * lines and the fix when it fails. The Temporal CLI's and the Temporal server's builds both use it.
 */
export async function goInstall(input: {
  goPath: string;
  packages: readonly string[];
  gobin: string;
  /** What is built, for the heartbeat: "still building <what> (30 s so far)". */
  what: string;
  /** Appended to the failure's advice, after the Go toolchain and GOPROXY. */
  fix?: string;
  cwd?: string;
  log: (line: string) => void;
}): Promise<void> {
  const { goPath, packages, log } = input;
  const startedAt = Date.now();
  const child = spawn(goPath, ['install', ...packages], {
    env: { ...process.env, CGO_ENABLED: '0', GOBIN: input.gobin },
    ...(input.cwd !== undefined ? { cwd: input.cwd } : {}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const recentLines: string[] = [];
  const onLine = (line: string): void => {
    recentLines.push(line);
    if (recentLines.length > 30) recentLines.shift();
    log(`go: ${line.replace(/^go: /, '')}`);
  };
  createInterface({ input: child.stdout }).on('line', onLine);
  createInterface({ input: child.stderr }).on('line', onLine);
  const heartbeat = setInterval(() => {
    log(`still building ${input.what} (${Math.round((Date.now() - startedAt) / 1000)} s so far)`);
  }, buildHeartbeatMilliseconds);
  try {
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => resolve(code));
    });
    if (exitCode !== 0) {
      throw new Error(
        `go install ${packages.join(' ')} failed with exit code ${String(exitCode)}:\n${recentLines.join('\n')}\n` +
          'Fix: check the Go toolchain and its module proxy settings (GOPROXY)' +
          (input.fix ? `, ${input.fix}.` : '.'),
      );
    }
  } finally {
    clearInterval(heartbeat);
  }
}

async function main(): Promise<void> {
  const projectRoot = path.resolve(__dirname, '..', '..');
  const resolution = await resolveTemporalCli({
    projectRoot,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  switch (resolution.kind) {
    case 'path':
      process.stdout.write(`${resolution.path}\n`);
      return;
    case 'sdk-download':
      // Nothing on stdout: there is no path, and the SDK fetches the CLI when a server starts.
      return;
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(
      `Could not provide a Temporal CLI: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
