// A process that creates or revokes MCP tokens in a loop, for the concurrent-writers test: both start
// their loops at START_AT (epoch ms), so two processes overlap. Prints, as JSON, the tokens it created
// ({token, hash}) or the hashes it revoked.
import { readFileSync } from 'node:fs';
import { createMcpToken, revokeMcpToken } from 'toolgate/mcp';

const [operation, path, input] = process.argv.slice(2) as [string, string, string];
const startAt = Number(process.env.START_AT);
while (Date.now() < startAt) {
  // spin, so both processes start their loops together
}
const done: unknown[] = [];
if (operation === 'create') {
  for (let index = 0; index < Number(input); index += 1) {
    const { token, record } = createMcpToken({ path, caller: 'support-bot', label: `new-${index}` });
    done.push({ token, hash: record.hash });
  }
} else {
  for (const hash of JSON.parse(readFileSync(input, 'utf8')) as string[]) {
    if (revokeMcpToken({ path, hashPrefix: hash }).ok) done.push(hash);
  }
}
process.stdout.write(JSON.stringify(done));
