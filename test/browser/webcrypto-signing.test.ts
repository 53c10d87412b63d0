import type { webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { signedText, verifySignature } from 'toolgate/protocol';
import type { DecisionEnvelope } from 'toolgate/protocol';
import { canonicalJson, digestOf } from 'toolgate/backend';

import { launchBrowser, saveScreenshot } from '../support/browser';

// What the approvals console (issue 12) relies on, proven in Debian's Chromium: WebCrypto Ed25519 keys
// that cannot leave the browser, kept in IndexedDB, signing bytes toolgate verifies.

/** The console's browser modules, as the test page puts them on `globalThis.toolgateSigning`. */
interface SigningPage {
  canonicalJson(value: unknown): string;
  sha256Hex(text: string): Promise<string>;
  decisionText(envelope: DecisionEnvelope): string;
  generateSigningKey(): Promise<webcrypto.CryptoKeyPair>;
  publicKeyHex(publicKey: webcrypto.CryptoKey): Promise<string>;
  signDecision(input: { privateKey: webcrypto.CryptoKey; envelope: DecisionEnvelope }): Promise<string>;
  saveSigningKey(input: { id: string; keyPair: webcrypto.CryptoKeyPair }): Promise<void>;
  loadSigningKey(input: { id: string }): Promise<webcrypto.CryptoKeyPair | undefined>;
}
type SigningWindow = { toolgateSigning: SigningPage };

// The page's entry is the test's own; the modules it loads are the ones the approvals console serves.
const pageFolder = join(__dirname, 'page');
const consoleAssets = join(__dirname, '..', '..', 'src', 'console', 'assets');
const modules = ['signing-page.mjs', 'canonical-json.mjs', 'signing-keys.mjs'];
const folderOf = (name: string): string => (name === 'signing-page.mjs' ? pageFolder : consoleAssets);
const indexHtml = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>toolgate signing</title>
    <script type="module" src="/signing-page.mjs"></script>
  </head>
  <body><h1>toolgate: WebCrypto signing in the browser</h1></body>
</html>`;

/**
 * Serves the page and its modules on 127.0.0.1 (a secure context, so WebCrypto is there) with a CSP
 * that allows scripts from this origin only: the page can load nothing from a CDN.
 */
async function startPageServer(): Promise<{ server: Server; origin: string }> {
  const files = new Map<string, { body: string; type: string }>([
    ['/', { body: indexHtml, type: 'text/html; charset=utf-8' }],
    ...modules.map((name): [string, { body: string; type: string }] => [
      `/${name}`,
      { body: readFileSync(join(folderOf(name), name), 'utf8'), type: 'text/javascript; charset=utf-8' },
    ]),
  ]);
  const server = createServer((request, response) => {
    const file = files.get(new URL(request.url ?? '/', 'http://page').pathname);
    response.setHeader('content-security-policy', "default-src 'self'");
    response.setHeader('cache-control', 'no-store');
    if (!file) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': file.type }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A decision as the console will build it, keys deliberately out of canonical order. */
const envelope: DecisionEnvelope = {
  reason: 'approve 2590, not 25900 — «ok» 日本 😀 "quoted"\n\tsecond line',
  decision: 'approve',
  callId: 'tc-865a5c898368ecdfe3f9055183bfaeeceb4bd0577ff1db498df68d624420b9a5',
  runId: '0193b8f2-7c1e-7a6b-9d3e-2f4c5a6b7c8d',
  nonce: 'a'.repeat(64),
  argsDigest: 'b'.repeat(64),
  previewDigest: 'c'.repeat(64),
  contractDigest: 'd'.repeat(64),
  approver: 'alice',
  issuedAt: '2025-12-01T15:30:00.000Z',
};

/**
 * JSON texts and the canonical text toolgate writes for each. Both sides `JSON.parse` the text, which
 * is how the console receives what it signs, and keeps `__proto__` an own key (Playwright's argument
 * passing would drop it).
 */
const jsonCases: { name: string; json: string; canonical: string }[] = [
  {
    name: 'nested keys out of order',
    json: '{"b":{"z":1,"a":[{"y":2,"x":1}]},"a":true}',
    canonical: '{"a":true,"b":{"a":[{"x":1,"y":2}],"z":1}}',
  },
  {
    name: 'array-index keys first, in numeric order',
    json: '{"b":1,"10":2,"2":3,"01":4,"4294967295":5,"4294967294":6,"-1":7,"a":8}',
    canonical: '{"2":3,"10":2,"4294967294":6,"-1":7,"01":4,"4294967295":5,"a":8,"b":1}',
  },
  {
    name: 'unicode keys sorted by UTF-16 code units (an astral key before U+FF61)',
    json: '{"\uff61":1,"\u{1f600}":2,"é":3,"z":4,"Z":5}',
    canonical: '{"Z":5,"z":4,"é":3,"\u{1f600}":2,"\uff61":1}',
  },
  {
    name: 'escapes: quotes, backslash, control characters, lone surrogates; U+2028 as is',
    json: String.raw`{"s":"\"\\\/\b\f\n\r\t\u0000\u001f\u007f\u2028\ud800x\udc00\ud83d\ude00"}`,
    canonical:
      String.raw`{"s":"\"\\/\b\f\n\r\t\u0000\u001f` +
      '\u007f\u2028' +
      String.raw`\ud800x\udc00` +
      '\u{1f600}"}',
  },
  {
    name: 'numbers as JSON.stringify writes them',
    json: '[1e21,1e-7,-0,0.1,0.30000000000000004,1e400,-1e400,12345678901234567890,5e-324,1.0,100]',
    canonical: '[1e+21,1e-7,0,0.1,0.30000000000000004,null,null,12345678901234567000,5e-324,1,100]',
  },
  {
    name: 'empty objects, arrays and strings',
    json: '{"o":{},"a":[],"s":"","n":null,"nested":[[],{},[{}]]}',
    canonical: '{"a":[],"n":null,"nested":[[],{},[{}]],"o":{},"s":""}',
  },
  {
    name: '__proto__ as an own key, and other Object.prototype names',
    json: '{"toString":1,"__proto__":{"polluted":true},"constructor":2,"hasOwnProperty":3}',
    canonical: '{"__proto__":{"polluted":true},"constructor":2,"hasOwnProperty":3,"toString":1}',
  },
  { name: 'a bare string', json: '"héllo\\u0001"', canonical: '"héllo\\u0001"' },
  { name: 'a bare number', json: '-0', canonical: '0' },
  { name: 'null', json: 'null', canonical: 'null' },
];

describe('WebCrypto signing in a real Chromium', () => {
  let browser: Browser;
  let server: Server;
  let origin: string;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    ({ server, origin } = await startPageServer());
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  });

  beforeEach(async () => {
    // A context per test: its own IndexedDB, so no test finds another's key.
    context = await browser.newContext();
    page = await context.newPage();
    await page.goto(origin);
    await page.waitForFunction(() => 'toolgateSigning' in globalThis);
  });

  afterEach(async () => {
    await context.close();
  });

  it('makes an Ed25519 private key that even the page cannot export, and a 32-byte raw public key', async () => {
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.reload();
    await page.waitForFunction(() => 'toolgateSigning' in globalThis);

    const key = await page.evaluate(async () => {
      const { toolgateSigning: signing } = globalThis as unknown as SigningWindow;
      const { privateKey, publicKey } = await signing.generateSigningKey();
      const exports: Promise<unknown>[] = [
        crypto.subtle.exportKey('pkcs8', privateKey),
        crypto.subtle.exportKey('jwk', privateKey),
      ];
      const refusals = await Promise.all(
        exports.map((attempt) =>
          attempt.then(
            () => 'exported',
            (error: Error) => error.name,
          ),
        ),
      );
      const raw = new Uint8Array(await crypto.subtle.exportKey('raw', publicKey));
      return {
        algorithm: privateKey.algorithm.name,
        privateKey: { extractable: privateKey.extractable, usages: privateKey.usages },
        publicKey: { extractable: publicKey.extractable, usages: publicKey.usages },
        refusals,
        rawLength: raw.length,
        publicKeyHex: await signing.publicKeyHex(publicKey),
        secureContext: (globalThis as unknown as { isSecureContext: boolean }).isSecureContext,
      };
    });

    expect(key).toEqual({
      algorithm: 'Ed25519',
      privateKey: { extractable: false, usages: ['sign'] },
      publicKey: { extractable: true, usages: ['verify'] },
      refusals: ['InvalidAccessError', 'InvalidAccessError'],
      rawLength: 32,
      publicKeyHex: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown,
      secureContext: true,
    });
    // Everything the page loaded came from the test's own server.
    expect(requested.length).toBeGreaterThanOrEqual(modules.length + 1);
    expect(requested.filter((url) => !url.startsWith(`${origin}/`))).toEqual([]);

    const screenshot = await saveScreenshot({ page, name: 'webcrypto-signing-page' });
    expect(readFileSync(screenshot).subarray(1, 4).toString('latin1')).toBe('PNG');
  });

  it('keeps the key in IndexedDB across a reload and signs with it again', async () => {
    const stored = await page.evaluate(async () => {
      const { toolgateSigning: signing } = globalThis as unknown as SigningWindow;
      const keyPair = await signing.generateSigningKey();
      await signing.saveSigningKey({ id: 'alice-laptop', keyPair });
      return signing.publicKeyHex(keyPair.publicKey);
    });

    await page.reload();
    await page.waitForFunction(() => 'toolgateSigning' in globalThis);
    const reloaded = await page.evaluate(async (envelope) => {
      const { toolgateSigning: signing } = globalThis as unknown as SigningWindow;
      const keyPair = await signing.loadSigningKey({ id: 'alice-laptop' });
      if (!keyPair) return { found: false as const };
      const exported = await crypto.subtle.exportKey('pkcs8', keyPair.privateKey).then(
        () => 'exported',
        (error: Error) => error.name,
      );
      return {
        found: true as const,
        extractable: keyPair.privateKey.extractable,
        exported,
        publicKeyHex: await signing.publicKeyHex(keyPair.publicKey),
        signature: await signing.signDecision({ privateKey: keyPair.privateKey, envelope }),
      };
    }, envelope);

    expect(reloaded).toMatchObject({
      found: true,
      extractable: false,
      exported: 'InvalidAccessError',
      publicKeyHex: stored,
    });
    // The key read back is the key stored before the reload: its signature verifies under that public key.
    const signature = reloaded.found ? reloaded.signature : '';
    expect(verifySignature({ kind: 'decision', value: envelope, signature, publicKeyHex: stored })).toBe(
      true,
    );
  });

  it('writes the same canonical JSON bytes as toolgate for every tricky value', async () => {
    const fromBrowser = await page.evaluate(async (cases) => {
      const { toolgateSigning: signing } = globalThis as unknown as SigningWindow;
      return Promise.all(
        cases.map(async ({ name, json }) => {
          const canonical = signing.canonicalJson(JSON.parse(json));
          return { name, canonical, digest: await signing.sha256Hex(canonical) };
        }),
      );
    }, jsonCases);
    const fromToolgate = jsonCases.map(({ name, json }) => {
      const value: unknown = JSON.parse(json);
      return { name, canonical: canonicalJson(value), digest: digestOf(value) };
    });

    expect(fromBrowser).toEqual(fromToolgate);
    expect(fromToolgate.map(({ name, canonical }) => ({ name, canonical }))).toEqual(
      jsonCases.map(({ name, canonical }) => ({ name, canonical })),
    );
  });

  it('leaves out what JSON leaves out, as toolgate does, for values JSON text cannot carry', async () => {
    // Playwright carries undefined, NaN, the infinities and -0 into the page as they are.
    const value = {
      z: undefined,
      list: [undefined, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0],
      a: { inner: undefined, kept: 1 },
    };
    const fromBrowser = await page.evaluate((value) => {
      const { toolgateSigning: signing } = globalThis as unknown as SigningWindow;
      return signing.canonicalJson(value);
    }, value);

    expect(fromBrowser).toBe(canonicalJson(value));
    expect(fromBrowser).toBe('{"a":{"kept":1},"list":[null,null,null,null,0]}');
  });

  it("signs a decision that toolgate's verifySignature accepts, and no tampered envelope passes", async () => {
    const signed = await page.evaluate(async (envelope) => {
      const { toolgateSigning: signing } = globalThis as unknown as SigningWindow;
      const { privateKey, publicKey } = await signing.generateSigningKey();
      return {
        text: signing.decisionText(envelope),
        signature: await signing.signDecision({ privateKey, envelope }),
        publicKeyHex: await signing.publicKeyHex(publicKey),
      };
    }, envelope);
    const check = { signature: signed.signature, publicKeyHex: signed.publicKeyHex };

    expect(signed.text).toBe(signedText({ kind: 'decision', value: envelope }));
    expect(signed.signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(verifySignature({ kind: 'decision', value: envelope, ...check })).toBe(true);

    const tampered: [string, unknown][] = [
      ['decision flipped', { ...envelope, decision: 'deny' }],
      ['reason changed', { ...envelope, reason: 'approve 25900' }],
      ['another approver', { ...envelope, approver: 'mallory' }],
      ['arguments digest changed', { ...envelope, argsDigest: 'd'.repeat(64) }],
      ['a field added', { ...envelope, quorum: 1 }],
    ];
    for (const [change, value] of tampered) {
      expect(verifySignature({ kind: 'decision', value, ...check }), change).toBe(false);
    }
    // The kind is part of the signed bytes: a decision signature does not pass for a proposal.
    expect(verifySignature({ kind: 'proposal', value: envelope, ...check })).toBe(false);
  });
});
