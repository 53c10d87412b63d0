// The contract check's report for a person: changes grouped by verdict, each with its path, what it
// means and its value before → after. Pure: returns text.
import type { ContractChange, ContractDiff, ContractVerdict } from './contract-diff';

const headings: Record<ContractVerdict, string> = {
  breaking: 'breaking (the check fails)',
  compatible: 'compatible',
  behavioural: 'behavioural (the check passes; run the selection suite)',
};

/** The longest `before → after` kept on one line; longer values (descriptions) get a line each. */
const oneLineWidth = 100;

/** Renders a diff as lines of text: a summary, then each verdict's changes with path, sentence, before → after. */
export function renderContractDiff(diff: ContractDiff): string {
  if (diff.changes.length === 0) return 'no changes: the tools match the snapshot';
  const { counts } = diff;
  const lines = [
    `${diff.changes.length} ${diff.changes.length === 1 ? 'change' : 'changes'}: ` +
      `${counts.breaking} breaking, ${counts.compatible} compatible, ${counts.behavioural} behavioural`,
  ];
  for (const verdict of ['breaking', 'compatible', 'behavioural'] as const) {
    const changes = diff.changes.filter((change) => change.verdict === verdict);
    if (changes.length === 0) continue;
    lines.push('', `${headings[verdict]}:`);
    for (const change of changes) lines.push(...changeLines(change));
  }
  return lines.join('\n');
}

function changeLines(change: ContractChange): string[] {
  const where = change.path ? `${change.tool}.${change.path}` : change.tool;
  const lines = [
    `  ${where}${change.aspect ? ` (${change.aspect})` : ''}  ${change.kind}`,
    `    ${change.message}`,
  ];
  if (change.before === undefined && change.after === undefined) return lines;
  const before = valueText(change.before);
  const after = valueText(change.after);
  if (before.length + after.length + 3 <= oneLineWidth) lines.push(`    ${before} → ${after}`);
  else lines.push(`    before: ${before}`, `    after:  ${after}`);
  return lines;
}

function valueText(value: unknown): string {
  if (value === undefined) return '(absent)';
  return JSON.stringify(value);
}
