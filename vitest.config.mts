import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const fromRepository = fileURLToPath(new URL('./vitest.config.mts', import.meta.url));

export default defineConfig({
  // `toolgate`, `toolgate/backend`, ... resolve to src/ (package.json `exports`), so tests need no build.
  // Vite adds this to its server conditions; vitest also passes it to its workers as --conditions.
  ssr: { resolve: { conditions: ['toolgate-source'] } },
  plugins: [
    {
      // The ticketing fixture (test/package/ticketing) is a project of its own that imports `toolgate` as
      // an installed package; a test here that imports its contracts gets toolgate's source, as we do.
      name: 'ticketing-fixture-imports-toolgate',
      enforce: 'pre',
      resolveId(source, importer) {
        if (!importer?.includes('/test/package/ticketing/') || !/^toolgate(\/|$)/.test(source)) return null;
        return this.resolve(source, fromRepository, { skipSelf: true });
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
