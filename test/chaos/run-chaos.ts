// `npm run chaos -- --intents N`: refunds under chaos. The worker is SIGKILLed 1-5 s after each
// start and started again, fault switches (a lost response after the commit, 503s) are armed on a
// share of the refunds, and the Temporal server is SIGKILLed and started again while refunds wait
// for approval. Progress goes to stderr; the run ends with one line on stdout,
//   intents N, applied N, duplicates 0, lost 0, misreported 0
// and exits 0 only when every refund applied exactly once and the agent was told so. Everything it
// started is stopped on exit, error or Ctrl-C.
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { runChaosCampaign } from './chaos-campaign';
import { verdictLine, verdictPassed } from './chaos-verdict';

const usage = `usage: npm run chaos -- [--intents N] [--approvals K] [--lanes L] [--fault-share F] [--seed S] [--deadline-minutes M]
  --intents N           refunds in all, each with its own intent id (default 20)
  --approvals K         how many of them need approval and wait across the server restart (default min(3, N/4))
  --lanes L             agent conversations at a time (default 16)
  --fault-share F       share of refunds with fault switches armed, 0 to 1 (default 0.4)
  --seed S              the plan's seed (default: random, printed), to run the same plan again
  --deadline-minutes M  no new proposal after this long; unresolved refunds count as lost (default 5 + N/10)`;

const startedClock = performance.now();
let interrupted = false;

function log(line: string): void {
  const seconds = ((performance.now() - startedClock) / 1000).toFixed(1);
  process.stderr.write(`[chaos ${seconds.padStart(6)} s] ${line}\n`);
}

function fail(message: string): never {
  process.stderr.write(`${message}\n${usage}\n`);
  process.exit(2);
}

function wholeNumber(text: string | undefined, name: string, fallback: number, minimum: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < minimum)
    fail(`--${name} must be a whole number from ${minimum}, got "${text}"`);
  return Number(text);
}

function readOptions() {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      options: {
        intents: { type: 'string' },
        approvals: { type: 'string' },
        lanes: { type: 'string' },
        'fault-share': { type: 'string' },
        seed: { type: 'string' },
        'deadline-minutes': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const intents = wholeNumber(text('intents'), 'intents', 20, 1);
  const approvals = wholeNumber(text('approvals'), 'approvals', Math.min(3, Math.floor(intents / 4)), 0);
  if (approvals > intents) fail(`--approvals (${approvals}) cannot exceed --intents (${intents})`);
  const faultShareText = text('fault-share');
  const faultShare = faultShareText === undefined ? 0.4 : Number(faultShareText);
  if (!Number.isFinite(faultShare) || faultShare < 0 || faultShare > 1)
    fail(`--fault-share must be a number from 0 to 1, got "${faultShareText}"`);
  const deadlineMinutes = Number(text('deadline-minutes') ?? 5 + intents / 10);
  if (!Number.isFinite(deadlineMinutes) || deadlineMinutes <= 0)
    fail(`--deadline-minutes must be a positive number, got "${text('deadline-minutes')}"`);
  return {
    intents,
    approvals,
    lanes: wholeNumber(text('lanes'), 'lanes', 16, 1),
    faultShare,
    seed: wholeNumber(text('seed'), 'seed', randomInt(2 ** 31), 0),
    deadlineMs: deadlineMinutes * 60_000,
  };
}

async function main(): Promise<number> {
  const options = readOptions();
  let stop: (() => Promise<void>) | undefined;
  const stopThenExit = (code: number): void => {
    void (stop?.() ?? Promise.resolve()).finally(() => process.exit(code));
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    // A second signal means "now": the exit hooks still kill the processes this run started.
    if (interrupted) process.exit(130);
    interrupted = true;
    log(`${signal} received: stopping everything this run started`);
    stopThenExit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A proposal the agent abandoned at its timeout may still be polling when the run closes its
  // connection, and the client's retry timer then throws "Channel has been shut down" outside any
  // promise. That, and whatever calls in flight throw once interrupted, must not end the process
  // before the cleanup has; anything else is a crash of the suite: stop everything, exit 2.
  const onStray = (error: unknown): void => {
    const message = error instanceof Error ? error.message : String(error);
    if (interrupted || message === 'Channel has been shut down') {
      log(`a call in flight ended as its connection closed: ${message.split('\n')[0]}`);
      return;
    }
    process.stderr.write(
      `chaos run failed: ${error instanceof Error ? (error.stack ?? message) : message}\n`,
    );
    interrupted = true;
    stopThenExit(2);
  };
  process.on('uncaughtException', onStray);
  process.on('unhandledRejection', onStray);

  log(
    `${options.intents} intents (${options.approvals} needing approval), ${options.lanes} lanes, ` +
      `fault share ${options.faultShare}, seed ${options.seed}`,
  );
  const report = await runChaosCampaign({
    options: { ...options, log },
    exposeStop: (stopAll) => {
      stop = stopAll;
    },
  });
  for (const line of report.summary) log(line);
  for (const finding of report.verdict.findings) log(finding);
  const ledgerBroken = report.verdict.findings.some((finding) => finding.startsWith('ledger:'));
  process.stdout.write(`${verdictLine(report.verdict)}\n`);
  return verdictPassed(report.verdict) && !ledgerBroken ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Interrupted: the signal handler exits once everything is stopped; the campaign's failure is its echo.
    if (interrupted) return;
    process.stderr.write(
      `chaos run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(2);
  },
);
