// Where the browser tests' Chromium comes from: the system's, never a download. The test run's
// global setup calls `ensureChromium` once: it finds one, or (as root, where apt-get exists) installs
// Debian's chromium package, or says in one line what to install.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The binary names Chromium and Chrome go by on PATH, in the order they are preferred. */
const chromiumNames = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'] as const;

/** Where Chromium and Chrome install themselves on macOS and Windows. */
function usualLocations(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string[] {
  if (platform === 'darwin') {
    return [
      '/Applications/Chromium.app/Contents/MacOS/Chromium',
      '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
    ];
  }
  if (platform === 'win32') {
    return [env.PROGRAMFILES, env['PROGRAMFILES(X86)'], env.LOCALAPPDATA]
      .filter((folder): folder is string => folder !== undefined && folder !== '')
      .flatMap((folder) => [
        join(folder, 'Chromium', 'Application', 'chrome.exe'),
        join(folder, 'Google', 'Chrome', 'Application', 'chrome.exe'),
      ]);
  }
  return [];
}

/** What to do when there is no browser: one line. */
export const chromiumInstallHint =
  "install Debian's chromium package (`apt-get install -y --no-install-recommends chromium`; npm test " +
  'does it itself when run as root) or set CHROMIUM_PATH to a Chromium or Chrome binary';

/** Where the system's Chromium is, or why there is none. */
export type ChromiumLookup = { ok: true; executablePath: string } | { ok: false; reason: string };

/**
 * Finds the system's Chromium without starting it: CHROMIUM_PATH when set (which must then be an
 * executable file; it never falls back to anything else), else `chromium`, `chromium-browser`,
 * `google-chrome` or `google-chrome-stable` on PATH, as `which` would, else the usual macOS and
 * Windows install locations. Never downloads a browser.
 */
export function findChromium(
  input: { env?: NodeJS.ProcessEnv; platform?: NodeJS.Platform } = {},
): ChromiumLookup {
  const env = input.env ?? process.env;
  const configured = env.CHROMIUM_PATH;
  if (configured !== undefined && configured !== '') {
    return isExecutableFile(configured)
      ? { ok: true, executablePath: configured }
      : {
          ok: false,
          reason:
            `CHROMIUM_PATH is ${configured}, which is not an executable file; point it at a Chromium ` +
            'binary, or unset it to use chromium from PATH.',
        };
  }
  const directories = (env.PATH ?? '').split(delimiter).filter((directory) => directory !== '');
  for (const name of chromiumNames) {
    for (const directory of directories) {
      const candidate = join(directory, name);
      if (isExecutableFile(candidate)) return { ok: true, executablePath: candidate };
    }
  }
  const installed = usualLocations(env, input.platform ?? process.platform).find(isExecutableFile);
  if (installed !== undefined) return { ok: true, executablePath: installed };
  return { ok: false, reason: `No Chromium or Chrome found; ${chromiumInstallHint}.` };
}

/**
 * The browser the tests use: `findChromium`'s, else, on Linux as root with apt-get, Debian's
 * chromium package installed now (`apt-get update` first when the package lists lack it). Logs what
 * it does through `log`. Never throws: when there is still none, the lookup's reason says what to do.
 */
export function ensureChromium(input: { log: (line: string) => void }): ChromiumLookup {
  const found = findChromium();
  if (found.ok) return found;
  if (process.env.CHROMIUM_PATH || process.platform !== 'linux' || process.getuid?.() !== 0) return found;
  if (spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status !== 0) return found;
  input.log("No Chromium found: installing Debian's chromium package for the browser tests (apt-get).");
  const install = () =>
    spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
  let installed = install();
  if (installed.status !== 0) {
    // A fresh machine's package lists may not know chromium yet; a failed update may still leave some.
    spawnSync('apt-get', ['update'], { env: process.env, stdio: 'ignore' });
    installed = install();
  }
  const after = findChromium();
  if (!after.ok && installed.status !== 0) {
    const why = (installed.stderr ?? '').trim().split('\n').at(-1) ?? '';
    return { ok: false, reason: `apt-get could not install chromium (${why}); ${chromiumInstallHint}.` };
  }
  return after;
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
