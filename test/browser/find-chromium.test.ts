import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { findChromium } from '../support/chromium';

// The lookup `launchBrowser` uses, against folders of stand-in binaries: no browser starts here.
const root = mkdtempSync(join(tmpdir(), 'find-chromium-'));

function folderWith(name: string, files: { [file: string]: 'executable' | 'plain' }): string {
  const folder = join(root, name);
  mkdirSync(folder);
  for (const [file, mode] of Object.entries(files)) {
    writeFileSync(join(folder, file), '#!/bin/sh\n');
    chmodSync(join(folder, file), mode === 'executable' ? 0o755 : 0o644);
  }
  return folder;
}

const empty = folderWith('empty', {});
const plain = folderWith('plain', { chromium: 'plain' });
const browserOnly = folderWith('browser-only', { 'chromium-browser': 'executable' });
const both = folderWith('both', { chromium: 'executable', 'chromium-browser': 'executable' });

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('findChromium', () => {
  it('takes the first executable chromium on PATH, skipping files that are not executable', () => {
    const PATH = [empty, plain, both].join(delimiter);
    expect(findChromium({ env: { PATH } })).toEqual({ ok: true, executablePath: join(both, 'chromium') });
  });

  it('prefers chromium anywhere on PATH to chromium-browser earlier on it', () => {
    const PATH = [browserOnly, both].join(delimiter);
    expect(findChromium({ env: { PATH } })).toEqual({ ok: true, executablePath: join(both, 'chromium') });
  });

  it('falls back to chromium-browser', () => {
    const PATH = [empty, browserOnly].join(delimiter);
    expect(findChromium({ env: { PATH } })).toEqual({
      ok: true,
      executablePath: join(browserOnly, 'chromium-browser'),
    });
  });

  it('uses CHROMIUM_PATH over PATH, and never falls back to PATH when it points at nothing', () => {
    const chosen = join(browserOnly, 'chromium-browser');
    expect(findChromium({ env: { PATH: both, CHROMIUM_PATH: chosen } })).toEqual({
      ok: true,
      executablePath: chosen,
    });
    const missing = findChromium({ env: { PATH: both, CHROMIUM_PATH: join(empty, 'chromium') } });
    expect(missing).toEqual({ ok: false, reason: expect.stringContaining('CHROMIUM_PATH is') as unknown });
  });

  it('falls back to Chrome on PATH', () => {
    const chrome = folderWith('chrome', { 'google-chrome': 'executable' });
    expect(findChromium({ env: { PATH: [empty, chrome].join(delimiter) } })).toEqual({
      ok: true,
      executablePath: join(chrome, 'google-chrome'),
    });
  });

  it('looks in the usual Windows install folders when PATH has none', () => {
    const programFiles = join(root, 'program-files');
    const application = join(programFiles, 'Google', 'Chrome', 'Application');
    mkdirSync(application, { recursive: true });
    writeFileSync(join(application, 'chrome.exe'), '#!/bin/sh\n');
    chmodSync(join(application, 'chrome.exe'), 0o755);
    expect(findChromium({ env: { PATH: empty, PROGRAMFILES: programFiles }, platform: 'win32' })).toEqual({
      ok: true,
      executablePath: join(application, 'chrome.exe'),
    });
  });

  it("says how to install Debian's chromium when there is none", () => {
    const lookup = findChromium({ env: { PATH: [empty, plain].join(delimiter) }, platform: 'linux' });
    expect(lookup).toEqual({
      ok: false,
      reason: expect.stringContaining("install Debian's chromium package") as unknown,
    });
  });
});
