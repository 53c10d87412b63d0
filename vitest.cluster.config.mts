// `npm run test:cluster`: the production topology on one machine (test/cluster/), against a Temporal
// server built from source on PostgreSQL. No dev-server global setup: the test starts its own server.
// Its files end in `.cluster.ts`, so that `npm test` never runs them.
import { mergeConfig } from 'vitest/config';
import base from './vitest.config.mjs';

const merged = mergeConfig(base, {
  test: {
    testTimeout: 300_000,
    // A cold run builds the Temporal server in the setup: 3 to 5 minutes after the Temporal CLI's build
    // (which compiles most of the same packages), up to about 15 with an empty Go build cache on 2 CPUs.
    hookTimeout: 1_800_000,
    // One file whose steps run in order against one cluster.
    fileParallelism: false,
    maxWorkers: 1,
  },
});
// mergeConfig concatenates arrays: set these outright, so that the cluster run has no dev-server
// global setup, only its own files, and a report of its own (npm test's stays as it was).
merged.test!.globalSetup = [];
merged.test!.include = ['test/cluster/**/*.cluster.ts'];
merged.test!.reporters = ['default', ['json', { outputFile: 'test-results/vitest-cluster.json' }]];
export default merged;
