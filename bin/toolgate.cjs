#!/usr/bin/env node
// The toolgate CLI, built: it runs dist/ (`npm run build`). In this repository `npm run toolgate` runs src/.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const mainPath = join(__dirname, '..', 'dist', 'cli', 'main.js');
if (!existsSync(mainPath)) {
  process.stderr.write('toolgate: dist/ is missing or incomplete; run `npm run build` first.\n');
  process.exit(2);
}
require(mainPath)
  .main(process.argv.slice(2))
  .then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
      process.exitCode = 1;
    },
  );
