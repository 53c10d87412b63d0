import type { Command } from 'commander';
import type { AuditRecord, AuditStore } from '../audit/audit-store';
import { missingAuditStore, openAuditStore } from '../audit/open-audit-store';
import { instantForms, parseAuditWindow } from '../mining/mining-window';
import { approvalOutcomes } from '../reporting/approval-outcome';
import type { AuditReport, DecisionTimes } from '../reporting/audit-report';
import { buildAuditReport, sessionsToFollow } from '../reporting/audit-report';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { commandAction, configOf } from './cli-context';

type ReportOptions = GlobalOptions & { since: string; until?: string };

/**
 * Adds `report`: what the audit store says about a window (rejection rate per tool and code, recovery
 * after INVALID_ARGUMENTS, approval outcomes, repeats). It reads only.
 */
export function addReportCommand(program: Command, context: CliContext): void {
  program
    .command('report')
    .description(
      'summarise the audit store over a window: rejection rate per tool and code, how often the model ' +
        'recovers after INVALID_ARGUMENTS, approval outcomes and time to decision, loop guards and repeats',
    )
    .requiredOption('--since <date>', `the start of the window: ${instantForms}`)
    .option('--until <date>', 'the end of the window, exclusive (default: now)')
    .action(
      commandAction(context, async (_options: unknown, command: Command) =>
        report({ options: command.optsWithGlobals<ReportOptions>(), output: context.output }),
      ),
    );
}

async function report(input: { options: ReportOptions; output: CliOutput }): Promise<number> {
  const { options, output } = input;
  const refuse = (code: string, message: string): number => {
    output.error(`${code}: ${message}`);
    return 2;
  };
  const window = parseAuditWindow({ since: options.since, until: options.until, now: new Date() });
  if (!window.ok) return refuse('INVALID_DATE', window.message);
  const config = configOf(options);
  const audited = { ...config, env: process.env };
  // Opening a missing SQLite store would create an empty one and report nothing: say what is wrong instead.
  const missing = missingAuditStore(audited);
  if (missing !== undefined) return refuse('AUDIT_STORE_MISSING', missing);
  const audit = await openAuditStore(audited);
  let built: AuditReport;
  try {
    built = await readReport({ audit, since: window.since, until: window.until });
  } finally {
    await audit.close();
  }
  output.out(options.json ? JSON.stringify(built) : formatReport(built));
  return 0;
}

/** Reads a window of the audit store (and the sessions the recovery rate follows) and builds the report. */
export async function readReport(input: {
  audit: AuditStore;
  since: Date;
  until: Date;
}): Promise<AuditReport> {
  const { audit } = input;
  const since = input.since.toISOString();
  const until = input.until.toISOString();
  // Awaited whether the store answers at once or with a promise.
  const records: AuditRecord[] = await audit.recordsBetween({ since, until });
  const sessionRecords = new Map<string, readonly AuditRecord[]>();
  for (const session of sessionsToFollow(records)) {
    sessionRecords.set(session, await audit.recordsOfSession(session));
  }
  return buildAuditReport({ since, until, records, sessionRecords });
}

/** The report for a person. */
export function formatReport(report: AuditReport): string {
  const percent = (rate: number | undefined) => (rate === undefined ? 'n/a' : `${(rate * 100).toFixed(1)}%`);
  const lines = [
    `audit report from ${report.since} to ${report.until} (${report.recordsRead} record(s))`,
    '',
    `rejections: ${report.totals.rejected} of ${report.totals.calls} (${percent(report.totals.rejectionRate)})`,
  ];
  for (const tool of report.tools) {
    lines.push(`  ${tool.tool}: ${tool.rejected} of ${tool.calls} rejected (${percent(tool.rejectionRate)})`);
    for (const code of tool.codes) lines.push(`    ${code.code}: ${code.count} (${percent(code.rate)})`);
  }
  const { recovery } = report;
  lines.push(
    '',
    `recovery after INVALID_ARGUMENTS: ${percent(recovery.rate)} ` +
      `(${recovery.recovered} next call(s) succeeded, ${recovery.notRecovered} rejected again, ` +
      `${recovery.noNextCall} with no next call, of ${recovery.invalidArguments})`,
    '',
    'approvals:',
  );
  for (const outcome of approvalOutcomes) {
    lines.push(`  ${outcome}: ${decisionLine(report.approvals[outcome])}`);
  }
  lines.push(
    '',
    `loop guards (LOOP_DETECTED): ${report.repeats.loopDetected}; calls run more than once: ${report.repeats.callsRunMoreThanOnce}`,
    'replays run nothing and write no audit record: see the toolgate_replays_total metric',
  );
  return lines.join('\n');
}

function decisionLine(times: DecisionTimes): string {
  if (times.count === 0) return '0';
  return (
    `${times.count}, time to decision median ${duration(times.medianSeconds!)}, ` +
    `p90 ${duration(times.p90Seconds!)}, max ${duration(times.maxSeconds!)}`
  );
}

function duration(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)}s`;
  if (seconds < 7_200) return `${Math.round(seconds / 60)}m`;
  return `${(seconds / 3_600).toFixed(1)}h`;
}
