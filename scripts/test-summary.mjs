// Prints the one-line summary of the last vitest run, `N passed, N failed[, N skipped]`, from the JSON
// report vitest.config.ts writes. A test file that failed outside any test (an import error, a failing
// hook) counts as one failure, so a broken file never reads as "0 failed".
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const reportPath = process.argv[2] ?? new URL('../test-results/vitest.json', import.meta.url);

let report;
try {
  report = JSON.parse(readFileSync(reportPath, 'utf8'));
} catch (error) {
  console.error(`No vitest report to summarise at ${String(reportPath)}: ${error.message}`);
  process.exit(2);
}

let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
const firstLine = (messages) =>
  String(messages?.[0] ?? '')
    .split('\n')[0]
    .slice(0, 300);
for (const file of report.testResults) {
  let failedInFile = 0;
  for (const test of file.assertionResults) {
    if (test.status === 'passed') passed += 1;
    else if (test.status === 'failed') {
      failedInFile += 1;
      failures.push(
        `${relative(process.cwd(), file.name)}: ${test.fullName}: ${firstLine(test.failureMessages)}`,
      );
    } else skipped += 1;
  }
  if (file.status === 'failed' && failedInFile === 0) {
    failures.push(`${relative(process.cwd(), file.name)}: ${firstLine([file.message])}`);
  }
  failed += file.status === 'failed' && failedInFile === 0 ? 1 : failedInFile;
}
// The failures go to stderr, so a CI log's tail names them beside the counts.
for (const failure of failures) console.error(`failed: ${failure}`);

console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
