// What requiring the built package's main entry adds to a process that already holds the Temporal SDK's
// worker and client: resident memory and live heap after a full collection, and the packages it loads.
// Plain Node, no TypeScript loader. Run by hand after `npm run build`:
// `node --expose-gc bench/entry-memory.cjs`.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const entry = join(__dirname, '..', 'dist', 'index.js');
if (!existsSync(entry)) {
  process.stderr.write('dist/index.js is missing: run `npm run build` first\n');
  process.exit(2);
}
if (typeof globalThis.gc !== 'function') {
  process.stderr.write('run with node --expose-gc\n');
  process.exit(2);
}
require('@temporalio/worker');
require('@temporalio/client');
globalThis.gc();
const before = process.memoryUsage();
const loadedBefore = new Set(Object.keys(require.cache));
require(entry);
globalThis.gc();
const after = process.memoryUsage();
const packages = new Set();
for (const path of Object.keys(require.cache)) {
  if (loadedBefore.has(path)) continue;
  const name = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(path)?.[1];
  if (name) packages.add(name);
}
const megabytes = (bytes) => (bytes / 2 ** 20).toFixed(1);
process.stdout.write(
  `toolgate's main entry adds ${megabytes(after.rss - before.rss)} MB resident, ` +
    `${megabytes(after.heapUsed - before.heapUsed)} MB live heap; packages it loads: ${[...packages].sort().join(', ')}\n`,
);
