// A container healthcheck without curl (the Node image has none): `node deploy/healthcheck.cjs URL`
// exits 0 when URL answers over HTTP with a status below 500, 1 otherwise. A 401 or 404 counts as up:
// the process listens and serves (the MCP endpoint, for one, answers 401 without a token).
const http = require('node:http');

const url = process.argv[2];
if (!url) {
  process.stderr.write('usage: node deploy/healthcheck.cjs URL\n');
  process.exit(2);
}
const request = http.get(url, { timeout: 4000 }, (response) => {
  response.resume();
  process.exit(response.statusCode !== undefined && response.statusCode < 500 ? 0 : 1);
});
request.on('timeout', () => request.destroy(new Error('timed out')));
request.on('error', (error) => {
  process.stderr.write(`${url}: ${error.message}\n`);
  process.exit(1);
});
