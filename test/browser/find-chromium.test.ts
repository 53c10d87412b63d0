import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { findChromium } from '../support/browser';

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

  it("says how to install Debian's chromium when there is none", () => {
    const lookup = findChromium({ env: { PATH: [empty, plain].join(delimiter) } });
    expect(lookup).toEqual({
      ok: false,
      reason: expect.stringContaining("install Debian's chromium package") as unknown,
    });
  });
});
