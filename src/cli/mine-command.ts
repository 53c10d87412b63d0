import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import type { AuditStore } from '../audit/audit-store';
import { missingAuditStore, openAuditStore } from '../audit/open-audit-store';
import { caseFileSkeleton } from '../mining/case-skeleton';
import type { MiningReport } from '../mining/mine-cases';
import { defaultMiningLimit, mineCases } from '../mining/mine-cases';
import type { MinedCandidate } from '../mining/mined-candidates';
import type { MiningUsageCode } from '../mining/mining-window';
import { instantForms, parseAuditWindow } from '../mining/mining-window';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { commandAction, configOf } from './cli-context';

type MineOptions = GlobalOptions & {
  since: string;
  until?: string;
  limit?: string;
  out?: string;
  force?: boolean;
};

const shownArgumentsLength = 300;

/**
 * Adds `mine`: candidate cases for the selection suite from recorded traffic, most valuable first,
 * each with why; `--out` writes a case file skeleton a person completes. It reads only and labels nothing.
 */
export function addMineCommand(program: Command, context: CliContext): void {
  program
    .command('mine')
    .description(
      'list candidate cases for the selection suite from the audit store and the sessions: hand-offs right ' +
        'after a tool call, denied approvals, loops, rejected arguments (most valuable first, each with why)',
    )
    .requiredOption('--since <date>', `the start of the window: ${instantForms}`)
    .option('--until <date>', 'the end of the window, exclusive (default: now)')
    .option('--limit <n>', `at most this many candidates (default ${defaultMiningLimit})`)
    .option('--out <file>', 'write a case file skeleton (the selection suite format) for a person to label')
    .option('--force', 'with --out, replace the file if it exists')
    .action(
      commandAction(context, async (_options: unknown, command: Command) =>
        mine({ options: command.optsWithGlobals<MineOptions>(), output: context.output }),
      ),
    );
}

async function mine(input: { options: MineOptions; output: CliOutput }): Promise<number> {
  const { options, output } = input;
  // Every argument is checked before anything is read or written.
  const refuse = (code: MiningUsageCode, message: string): number => {
    output.error(`${code}: ${message}`);
    return 2;
  };
  const window = parseAuditWindow({ since: options.since, until: options.until, now: new Date() });
  if (!window.ok) return refuse('INVALID_DATE', window.message);
  let limit = defaultMiningLimit;
  if (options.limit !== undefined) {
    limit = Number(options.limit);
    if (!/^\d+$/.test(options.limit) || !Number.isSafeInteger(limit) || limit < 1) {
      return refuse('INVALID_LIMIT', `--limit takes a whole number above 0 (got "${options.limit}")`);
    }
  }
  const out = options.out !== undefined ? resolve(options.out) : undefined;
  if (out !== undefined && existsSync(out) && !options.force) {
    return refuse(
      'OUTPUT_EXISTS',
      `${out} exists (perhaps half labelled); name another file, or pass --force`,
    );
  }
  if (out !== undefined) {
    // Mining may take a while: a file that cannot be written is said now, not after it.
    const folder = dirname(out);
    if (!existsSync(folder) || !statSync(folder).isDirectory()) {
      return refuse('OUTPUT_UNWRITABLE', `--out: no folder ${folder} to write ${out} in; create it first`);
    }
    if (existsSync(out) && statSync(out).isDirectory()) {
      return refuse('OUTPUT_UNWRITABLE', `--out: ${out} is a folder; name the case file to write`);
    }
  }
  const config = configOf(options);
  // Opening a missing SQLite store would create an empty one and report nothing found: say what is wrong instead.
  const audited = { ...config, env: process.env };
  const missing = missingAuditStore(audited);
  if (missing !== undefined) return refuse('AUDIT_STORE_MISSING', missing);
  let audit: AuditStore | undefined;
  let report: MiningReport;
  try {
    audit = await openAuditStore(audited);
    report = await mineCases({
      audit,
      sessions: true,
      since: window.since,
      until: window.until,
      limit,
    });
  } finally {
    await audit?.close();
  }
  let wrote = false;
  let notWritten: number | undefined;
  if (out !== undefined && report.candidates.length > 0) {
    try {
      // Never over a file that appeared meanwhile, unless --force.
      writeFileSync(out, `${JSON.stringify(caseFileSkeleton({ report }), null, 2)}\n`, {
        flag: options.force ? 'w' : 'wx',
      });
      wrote = true;
    } catch (error) {
      // The report is still shown below: the mining is not lost with the file.
      notWritten =
        (error as NodeJS.ErrnoException).code === 'EEXIST'
          ? refuse('OUTPUT_EXISTS', `${out} appeared while mining; name another file, or pass --force`)
          : refuse('OUTPUT_UNWRITABLE', `${out} could not be written (${(error as Error).message})`);
    }
  }
  if (options.json) {
    output.out(JSON.stringify({ ...report, ...(wrote ? { out } : {}) }));
    return notWritten ?? 0;
  }
  output.out(formatReport(report));
  if (notWritten !== undefined) return notWritten;
  if (out !== undefined) {
    output.out(
      wrote
        ? `\nwrote ${report.candidates.length} case(s) to label to ${out}`
        : `\nno candidates, so no case file was written to ${out}`,
    );
  }
  return 0;
}

/** The report for a person: the window, then each candidate with why, its user message and its arguments. */
function formatReport(report: MiningReport): string {
  const lines = [
    `${report.found} candidate(s) from ${report.since} to ${report.until}` +
      (report.found > report.candidates.length
        ? `, the ${report.candidates.length} most valuable shown`
        : '') +
      ` (${report.recordsRead} audit record(s) read` +
      (report.sessionEnds
        ? `, ${report.sessionEnds.read} ended session(s) with calls, ${report.sessionEnds.handoffs} hand-off(s))`
        : ')'),
  ];
  report.candidates.forEach((candidate, index) => lines.push('', ...candidateLines(candidate, index + 1)));
  return lines.join('\n');
}

function candidateLines(candidate: MinedCandidate, position: number): string[] {
  const shown =
    candidate.rawArguments.length > shownArgumentsLength
      ? `${candidate.rawArguments.slice(0, shownArgumentsLength)}… (${candidate.rawArguments.length} characters)`
      : candidate.rawArguments || '(none)';
  const seen = candidate.occurrences > 1 ? `, seen ${candidate.occurrences} times` : '';
  return [
    `${position}. [${candidate.kind}] ${candidate.tool} -> ${candidate.code} (${candidate.caller}${seen})  ${candidate.id}`,
    ...candidate.why.map((line) => `   why:       ${line}`),
    `   user:      ${candidate.userMessage !== undefined ? JSON.stringify(candidate.userMessage) : '(no user message attached)'}`,
    `   arguments: ${shown}`,
    `   session:   ${candidate.sessions.join(', ')}`,
    `   calls:     ${candidate.callIds.join(', ')}`,
  ];
}
