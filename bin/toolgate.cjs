#!/usr/bin/env node
// The toolgate CLI. TypeScript sources and configs load through tsx, so no build step is needed.
require('tsx/cjs');
require('../src/cli/main.ts')
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  });
