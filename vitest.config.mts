import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** package.json's `exports`: each entry's `toolgate-source` file is what `toolgate/<entry>` means in tests. */
const entries = (
  JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as {
    exports: Record<string, { 'toolgate-source'?: string } | string>;
  }
).exports;

export default defineConfig({
  // `toolgate`, `toolgate/backend`, ... resolve to src/ (package.json `exports`), so tests need no build.
  // Vite adds this to its server conditions; vitest also passes it to its workers as --conditions.
  ssr: { resolve: { conditions: ['toolgate-source'] } },
  plugins: [
    {
      // `toolgate` and its entries resolve to src/ everywhere vitest loads code: the tests, the global
      // setup (which vite loads without the conditions above), and the ticketing fixture, a project of
      // its own that imports toolgate as an installed package. Never to a stale dist/.
      name: 'toolgate-entries-from-source',
      enforce: 'pre',
      resolveId(source) {
        const match = /^toolgate(\/[\w-]+)?$/.exec(source);
        if (!match) return null;
        const entry = entries[match[1] ? `.${match[1]}` : '.'];
        const file = typeof entry === 'object' ? entry['toolgate-source'] : undefined;
        return file ? fileURLToPath(new URL(file, import.meta.url)) : null;
      },
    },
  ],
  test: {
    // Unit tests sit next to their module in src/; test/ holds the tests that use toolgate from outside.
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // One Temporal dev server for the whole run; tests reach it through test/support/temporal.ts.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    fileParallelism: true,
    // Each test file may run its own worker against the shared server; more than two crowd it.
    maxWorkers: 2,
    reporters: ['default', ['json', { outputFile: 'test-results/vitest.json' }]],
  },
});
