// `npm run bench [-- --quick]`: what a call costs through toolgate, against the bare Temporal
// baseline, on one dev server in one run. Scenarios run interleaved (round-robin batches) so that
// drift on a shared machine hits all of them alike. Prints a table, writes bench/results.json and
// bench/report.html. Progress goes to stderr; everything started is stopped on exit, error or Ctrl-C.
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import type { BenchHarness, WorkerChild } from './bench-harness';
import { projectRoot, startBenchHarness } from './bench-harness';
import { benchCallers } from './bench-policy';
import type { WorkerUsage } from './worker-protocol';
import { rssSampleIntervalMs } from './worker-protocol';
import type { HistoryCounts } from './history-counts';
import { countHistory } from './history-counts';
import { pureCases, timePurePipeline } from './pure-pipeline';
import type { BenchResults, LatencyResult, MemoryResult, PureResult, ThroughputResult } from './report';
import { formatTable, latencyRatios, renderHtml } from './report';
import type { DecisionTimings, SimulatedCaller } from './scenarios';
import {
  bareCaller,
  callsPerSession,
  decisionToEffect,
  governedReader,
  governedRejecter,
  governedWriter,
  shapedCaller,
  invalidRefundArguments,
  readOrderId,
  refundOrderId,
  writeCentsPerCall,
} from './scenarios';
import { summarize } from './stats';

interface Plan {
  /** Untimed calls of each scenario before measuring. */
  warmup: number;
  /** Round-robin rounds of the one-call-at-a-time scenarios. */
  rounds: number;
  /** Calls of each scenario per round. */
  batch: number;
  /** Approved refunds per round. */
  decisionBatch: number;
  /** Rounds over every (scenario, callers) throughput phase. */
  throughputRounds: number;
  /** Length of one throughput phase (calls in flight at its end finish and count). */
  phaseSeconds: number;
  throughputWarmupSeconds: number;
  levels: number[];
  /** Concurrent sessions of the memory phase (each caller holds one open session). */
  memorySessions: number;
  /** Pure-pipeline iterations of each case per round. */
  pureIterations: number;
}

const plans: Record<BenchResults['mode'], Plan> = {
  quick: {
    warmup: 2,
    rounds: 3,
    batch: 5,
    decisionBatch: 1,
    throughputRounds: 1,
    phaseSeconds: 1,
    throughputWarmupSeconds: 0.5,
    levels: [1, 10, 50],
    memorySessions: 100,
    pureIterations: 1000,
  },
  full: {
    warmup: 10,
    rounds: 10,
    batch: 25,
    decisionBatch: 5,
    throughputRounds: 3,
    phaseSeconds: 6,
    throughputWarmupSeconds: 2,
    levels: [1, 10, 50],
    memorySessions: 500,
    pureIterations: 5000,
  },
};

/** Each approved refund takes this much from ORD-1003 (an `irreversible` refund: one approval). */
const approvedRefundCents = 100;
const benchDirectory = __dirname;
const startedClock = performance.now();

function log(line: string): void {
  const seconds = ((performance.now() - startedClock) / 1000).toFixed(1);
  process.stderr.write(`[bench ${seconds.padStart(6)} s] ${line}\n`);
}

function errorCode(error: unknown): string {
  if (error instanceof Error) return error.name === 'Error' ? error.message.slice(0, 80) : error.name;
  return String(error);
}

/** Samples of one scenario, and what did not answer as expected. */
class Series {
  readonly samples: number[] = [];
  errors = 0;
  readonly errorCodes: Record<string, number> = {};

  constructor(
    readonly id: string,
    readonly label: string,
    readonly kind: LatencyResult['kind'],
  ) {}

  add(milliseconds: number): void {
    this.samples.push(milliseconds);
  }

  fail(code: string): void {
    this.errors++;
    this.errorCodes[code] = (this.errorCodes[code] ?? 0) + 1;
  }

  result(): LatencyResult {
    return {
      id: this.id,
      label: this.label,
      kind: this.kind,
      summary: summarize(this.samples),
      errors: this.errors,
      errorCodes: this.errorCodes,
      samples: this.samples.map((value) => Math.round(value * 1000) / 1000),
    };
  }
}

/** Times one call of a simulated caller into a series (the untimed `prepare` first). */
async function timeOne(caller: SimulatedCaller, series: Series | undefined): Promise<void> {
  try {
    await caller.prepare();
    const started = performance.now();
    const outcome = await caller.call();
    const elapsed = performance.now() - started;
    if (outcome.ok) series?.add(elapsed);
    else series?.fail(outcome.code);
  } catch (error) {
    series?.fail(errorCode(error));
  }
}

/**
 * `callers` simulated callers, each calling back to back until `seconds` have passed; the calls in
 * flight then finish and count too, so the rate is every call over the whole time, drain included.
 */
async function closedLoop(input: { callers: number; seconds: number; make: () => SimulatedCaller }): Promise<{
  calls: number;
  elapsedSeconds: number;
  samples: number[];
  errors: number;
  errorCodes: Record<string, number>;
}> {
  const series = new Series('load', 'load', 'governed');
  const started = performance.now();
  const deadline = started + input.seconds * 1000;
  await Promise.all(
    Array.from({ length: input.callers }, async () => {
      const caller = input.make();
      while (performance.now() < deadline) await timeOne(caller, series);
      await caller.close().catch((error: unknown) => series.fail(`close: ${errorCode(error)}`));
    }),
  );
  return {
    calls: series.samples.length,
    elapsedSeconds: (performance.now() - started) / 1000,
    samples: series.samples,
    errors: series.errors,
    errorCodes: series.errorCodes,
  };
}

function gitInfo(): { commit: string; workingTree: BenchResults['workingTree'] } {
  const git = (args: string[]): string =>
    execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  try {
    const commit = git(['rev-parse', 'HEAD']).trim();
    const changedFiles = git(['status', '--porcelain'])
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => line.slice(3));
    const diff = git(['diff', 'HEAD']);
    return {
      commit,
      workingTree: {
        dirty: changedFiles.length > 0,
        changedFiles,
        diffSha256: diff === '' ? null : createHash('sha256').update(diff).digest('hex'),
      },
    };
  } catch {
    return { commit: 'unknown', workingTree: { dirty: false, changedFiles: [], diffSha256: null } };
  }
}

function parseArguments(argv: readonly string[]): { mode: BenchResults['mode']; profile: boolean } | 'help' {
  let mode: BenchResults['mode'] = 'full';
  let profile = false;
  for (const argument of argv) {
    if (argument === '--quick') mode = 'quick';
    else if (argument === '--profile') profile = true;
    else if (argument === '--help' || argument === '-h') return 'help';
    else throw new Error(`unknown argument ${argument}; use --quick, --profile or nothing (see --help)`);
  }
  return { mode, profile };
}

const usage = `npm run bench [-- --quick] [-- --profile]

Measures toolgate against a bare Temporal baseline on a local dev server (loopback only):
latency one call at a time, closed-loop throughput at 1, 10 and 50 callers, the pure pipeline,
round trips read from histories and the worker's peak memory. Prints a table and writes
bench/results.json and bench/report.html. --quick finishes in under a minute. --profile also writes
a V8 CPU profile of each worker process (every thread) into a temp folder, named at the end.`;

let interrupted = false;

async function main(): Promise<void> {
  const parsed = parseArguments(process.argv.slice(2));
  if (parsed === 'help') {
    process.stdout.write(`${usage}\n`);
    return;
  }
  const { mode } = parsed;
  const profileDirectory = parsed.profile
    ? mkdtempSync(join(tmpdir(), 'toolgate-bench-profiles-'))
    : undefined;
  const plan = plans[mode];
  const startedAt = new Date().toISOString();
  const git = gitInfo();
  log(
    `${mode} mode; commit ${git.commit.slice(0, 12)}${git.workingTree.dirty ? ' + uncommitted changes' : ''}`,
  );

  let stopHarness: (() => Promise<void>) | undefined;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (interrupted) {
        log('second interrupt: exiting now (the processes started are killed on exit)');
        process.exit(130);
      }
      interrupted = true;
      log(`${signal}: stopping everything the bench started`);
      void (stopHarness?.() ?? Promise.resolve()).finally(() => process.exit(130));
    });
  }

  const harness = await startBenchHarness({
    log,
    profileDirectory,
    onWorkerExit: (message) => {
      if (interrupted) return;
      interrupted = true;
      log(`${message}: stopping everything the bench started`);
      void (stopHarness?.() ?? Promise.resolve()).finally(() => process.exit(1));
    },
    exposeStop: (stop) => {
      stopHarness = stop;
    },
  });
  try {
    const setupSeconds = (performance.now() - startedClock) / 1000;
    const measured = await measure({ harness, plan });
    const durationSeconds = (performance.now() - startedClock) / 1000;
    const results: BenchResults = {
      mode,
      startedAt,
      durationSeconds,
      setupSeconds,
      commit: git.commit,
      workingTree: git.workingTree,
      machine: {
        cores: cpus().length,
        cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
        totalMemoryMb: Math.round(totalmem() / 2 ** 20),
        platform: `${process.platform} ${process.arch}`,
        node: process.version,
      },
      plan: { ...plan, callsPerSession, approvedRefundCents, rssSampleIntervalMs },
      latency: measured.latency,
      ratios: latencyRatios(measured.latency),
      throughput: measured.throughput,
      pure: measured.pure,
      roundTrips: measured.roundTrips,
      memory: measured.memory,
      notes: notesFor(
        git.workingTree.dirty,
        measured.memory.some((memory) => Object.keys(memory.warnings).length > 0),
      ),
    };
    const table = formatTable(results);
    process.stdout.write(`\n${table}\n\n`);
    const resultsPath = join(benchDirectory, 'results.json');
    writeFileSync(resultsPath, `${JSON.stringify(results, null, 2)}\n`);
    const reportPath = join(benchDirectory, 'report.html');
    const html = renderHtml({ results, table, loadSamples: measured.loadSamples });
    const prettierOptions = (await resolveConfig(reportPath)) ?? {};
    writeFileSync(reportPath, await format(html, { ...prettierOptions, parser: 'html' }));
    log(`wrote bench/results.json and bench/report.html; ${mode} run took ${durationSeconds.toFixed(1)} s`);
  } finally {
    log('stopping the workers, the orders service and the Temporal server');
    await harness.stop();
    if (profileDirectory !== undefined) log(`CPU profiles of the workers: ${profileDirectory}`);
  }
}

function notesFor(dirty: boolean, warned: boolean): string[] {
  const notes = [
    `Governed calls go through ToolGateClient.call (one update-with-start of the call, whose first local activity admits it in the session store) in conversations of ${callsPerSession} calls; ` +
      'the full session is then ended (one short session-operation workflow; untimed one call at a time, inside the window under load).',
    'Bare calls: client.workflow.execute (start + result) of a workflow whose one activity (or local activity) reads ' +
      `GET /orders/${readOrderId} through createOrdersApiClient; its worker has its own process and task queue.`,
    "Bare shaped like a governed read: a governed read's Temporal operations without toolgate in them: an admission " +
      'update-with-start on a session workflow whose update runs one local activity (and one more on its first, as ' +
      "toolgate's loads the caller's policy), an idle timer per session, the call as its own workflow by update-with-start " +
      "with the same start options (summary, memo, 4 search attributes; a conversation's reads share a call id, each a " +
      'new run), messages of about the same size, three local activities (a no-op for the evaluation, the read, a ' +
      'signal of the outcome to the session), one search-attribute upsert; sessions ended by update-with-start. The ' +
      "histories' counts may still differ by whether an outcome's signal and the next admission share a workflow task. " +
      "It runs on a worker process of its own, with the bare worker's code.",
    'The shape, 50 callers: two what-ifs of the shaped baseline: the outcome not signalled (the session then runs ' +
      "one task per call; carrying the outcome with the next admission would add to that admission's own step, not " +
      'measured), and no session at all (the call alone). They count toward no memory figure.',
    'Approval rows: a refund of 100 cents on ORD-1003 by a caller whose autonomy is below it; "visible" polls the ' +
      'orders service by key every ~1 ms; "committed" compares the refund createdAt (ms) with the bench clock when ' +
      'decide() returned (negative: committed before the approver saw the acceptance).',
    'Pure pipeline: capProposal + parseArguments + validateArguments + deriveCallId + evaluatePolicy in this process ' +
      '(plain Node, not the workflow sandbox).',
    'Workers use default worker options; resident memory is each worker process alone, sampled every ' +
      `${rssSampleIntervalMs} ms: idle after the warm-up, then the peak during the 50-caller read phases, then ` +
      'during the crowd. A process rarely gives resident memory back, so a peak includes what earlier phases on ' +
      "the same worker left (the bare worker's refunds, for its reads). The shaped baseline has a worker process of " +
      "its own (the bare worker's code); the what-ifs run on it after every counted phase.",
  ];
  notes.push(
    'Throughput: every caller calls back to back for the phase; the calls in flight at its end finish and count, ' +
      'so calls/s is all calls over the whole time. Worker CPU is the worker process (all threads) per call; ' +
      'server CPU is the Temporal server process (from /proc) and client CPU this bench process, over the same phase.',
    'Round trips: counted in the histories of one conversation of governed reads and one of shaped reads (each ' +
      'session run divided by its calls, read before the session ends, so its end is not counted), one rejection, one ' +
      'governed write without approval (a cent) and one bare run of each kind (the bare refund a cent too), taken after the load phases; the timings are those runs only.',
  );
  if (warned) {
    notes.push(
      'SDK warnings are counted, not printed after the first: TMPRL1104 means a workflow task ran over 5 s ' +
        '(a task stays open while its local activities run).',
    );
  }
  if (dirty)
    notes.push('The working tree had uncommitted changes: results.json lists them and a digest of the diff.');
  return notes;
}

/** One throughput phase's figures, summed over rounds. */
interface LoadTotal {
  calls: number;
  seconds: number;
  perRound: number[];
  samples: number[];
  errors: number;
  errorCodes: Record<string, number>;
  cpuMicros: number;
  serverCpuMicros: number;
  clientCpuMicros: number;
  loopDelayMaxMs: number;
}

/** CPU time (user + system) of a process, from /proc; undefined where it cannot be read. */
function processCpuMicros(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields 14 and 15 of /proc/<pid>/stat, after the parenthesised command name, in clock ticks (100 Hz).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10_000 : undefined;
  } catch {
    return undefined;
  }
}

interface Measured {
  latency: LatencyResult[];
  throughput: ThroughputResult[];
  loadSamples: {
    scenario: ThroughputResult['scenario'];
    label: string;
    callers: number;
    samples: number[];
  }[];
  pure: PureResult[];
  roundTrips: HistoryCounts[];
  memory: MemoryResult[];
}

/** The bench's worker processes: toolgate's, the bare baseline's, the shaped baseline's. */
const workerKeys = ['toolgate', 'bare', 'shaped'] as const;
type WorkerKey = (typeof workerKeys)[number];

async function measure(input: { harness: BenchHarness; plan: Plan }): Promise<Measured> {
  const { harness, plan } = input;
  const series = {
    bareActivity: new Series('bare-activity', 'bare workflow, 1 activity', 'bare'),
    bareLocal: new Series('bare-local', 'bare workflow, 1 local activity', 'bare'),
    governedRead: new Series('governed-read', 'governed read (get_order)', 'governed'),
    shapedRead: new Series('shaped-read', 'bare, shaped like a governed read', 'bare'),
    governedReject: new Series('governed-reject', 'governed rejection (INVALID_ARGUMENTS)', 'governed'),
    bareRefund: new Series('bare-refund', 'bare workflow, refund in 1 activity', 'bare'),
    governedWrite: new Series('governed-write', 'governed write, no approval (refund_order)', 'governed'),
    pending: new Series('approval-pending', 'refund proposed -> APPROVAL_PENDING', 'approval'),
    decide: new Series('approval-decide', 'ApprovalAdmin.decide -> accepted', 'approval'),
    visible: new Series('approval-visible', 'decision -> refund visible (polled)', 'approval'),
    committed: new Series('approval-committed', 'decision -> refund committed (createdAt)', 'approval'),
    result: new Series('approval-result', 'decision -> final result OK', 'approval'),
  };
  const callers = {
    bareActivity: bareCaller({ harness, workflow: 'bareRead' }),
    bareLocal: bareCaller({ harness, workflow: 'bareLocalRead' }),
    governedRead: governedReader(harness),
    shapedRead: shapedCaller(harness),
    governedReject: governedRejecter(harness),
    bareRefund: bareCaller({ harness, workflow: 'bareRefund' }),
    governedWrite: governedWriter(harness),
  };
  /** Resets the orders service when ORD-1003 has less left than `neededCents` (between phases only). */
  const ensureRefundable = async (neededCents: number): Promise<void> => {
    const order = await harness.orders.api.getOrder({ orderId: refundOrderId });
    if (order.refundableCents >= neededCents) return;
    log('resetting the orders service (ORD-1003 is nearly fully refunded)');
    await harness.orders.api.reset();
  };
  const approvals = async (count: number, record: boolean): Promise<void> => {
    // The writes take from ORD-1003 too: what is left is read from the service.
    await ensureRefundable(count * approvedRefundCents);
    for (let index = 0; index < count; index++) {
      let timings: DecisionTimings;
      try {
        timings = await decisionToEffect({ harness, amountCents: approvedRefundCents });
      } catch (error) {
        if (record) series.result.fail(errorCode(error));
        continue;
      }
      if (!record) continue;
      series.pending.add(timings.pendingMs);
      series.decide.add(timings.decideMs);
      series.visible.add(timings.visibleMs);
      series.committed.add(timings.committedMs);
      series.result.add(timings.resultMs);
    }
  };
  const sequential: { name: string; run: (record: boolean, count: number) => Promise<void> }[] = [
    ...(
      [
        'bareActivity',
        'bareLocal',
        'governedRead',
        'shapedRead',
        'governedReject',
        'bareRefund',
        'governedWrite',
      ] as const
    ).map((key) => ({
      name: series[key].label,
      run: async (record: boolean, count: number) => {
        if (key === 'bareRefund' || key === 'governedWrite')
          await ensureRefundable(count * writeCentsPerCall);
        for (let index = 0; index < count; index++)
          await timeOne(callers[key], record ? series[key] : undefined);
      },
    })),
    { name: 'approved refunds', run: (record: boolean, count: number) => approvals(count, record) },
  ];

  log(`warm-up: ${plan.warmup} untimed calls of each scenario`);
  for (const scenario of sequential)
    await scenario.run(false, scenario.name === 'approved refunds' ? 1 : plan.warmup);
  const pureTimings = new Map<string, number[]>(pureCases.map((pureCase) => [pureCase.id, []]));
  for (const pureCase of pureCases) {
    timePurePipeline({
      pureCase,
      registry: harness.registry,
      policy: harness.policy,
      iterations: 2000,
      sessionPrefix: 'warm',
    });
  }

  for (let round = 0; round < plan.rounds; round++) {
    // Each round starts with the next scenario, so no scenario always follows the same one.
    const order = sequential.map((_, index) => sequential[(index + round) % sequential.length]!);
    for (const scenario of order) {
      await scenario.run(true, scenario.name === 'approved refunds' ? plan.decisionBatch : plan.batch);
    }
    for (const pureCase of pureCases) {
      pureTimings.get(pureCase.id)!.push(
        ...timePurePipeline({
          pureCase,
          registry: harness.registry,
          policy: harness.policy,
          iterations: plan.pureIterations,
          sessionPrefix: `round-${round}`,
        }),
      );
    }
    const p50 = (s: Series) => summarize(s.samples).p50.toFixed(1);
    log(
      `latency round ${round + 1}/${plan.rounds}: p50 so far bare ${p50(series.bareActivity)} / local ${p50(series.bareLocal)} / ` +
        `governed read ${p50(series.governedRead)} / rejection ${p50(series.governedReject)} / decision->effect ${p50(series.visible)} ms`,
    );
  }
  await Promise.all(Object.values(callers).map((caller) => caller.close().catch(() => undefined)));

  // Throughput, interleaved: every round visits every (callers, scenario) phase, alternating the order.
  const throughputScenarios: {
    scenario: ThroughputResult['scenario'];
    label: string;
    /** The worker process that runs it. */
    worker: WorkerKey;
    writes: boolean;
    /** Its phases at the highest level, and its crowd, give its worker's memory figures. */
    countsMemory?: true;
    /** Only at the highest level (the shape's what-ifs). */
    topOnly?: boolean;
    make: () => SimulatedCaller;
  }[] = [
    {
      scenario: 'governed-read',
      label: 'governed read',
      worker: 'toolgate',
      writes: false,
      countsMemory: true,
      make: () => governedReader(harness),
    },
    {
      scenario: 'bare-activity',
      label: 'bare workflow, 1 activity',
      worker: 'bare',
      writes: false,
      countsMemory: true,
      make: () => bareCaller({ harness, workflow: 'bareRead' }),
    },
    {
      scenario: 'shaped-read',
      label: 'bare, shaped like a governed read',
      worker: 'shaped',
      writes: false,
      countsMemory: true,
      make: () => shapedCaller(harness),
    },
    {
      scenario: 'shaped-no-report',
      label: 'bare shaped, outcome not signalled',
      worker: 'shaped',
      writes: false,
      topOnly: true,
      make: () => shapedCaller(harness, 'no-report'),
    },
    {
      scenario: 'shaped-no-session',
      label: 'bare shaped, no session',
      worker: 'shaped',
      writes: false,
      topOnly: true,
      make: () => shapedCaller(harness, 'no-session'),
    },
    {
      scenario: 'governed-write',
      label: 'governed write, no approval',
      worker: 'toolgate',
      writes: true,
      make: () => governedWriter(harness),
    },
    {
      scenario: 'bare-refund',
      label: 'bare workflow, refund in 1 activity',
      worker: 'bare',
      writes: true,
      make: () => bareCaller({ harness, workflow: 'bareRefund' }),
    },
  ];
  /** What one write phase may take from ORD-1003 at most (a generous bound: 100 calls/s). */
  const writePhaseCents = Math.ceil(plan.phaseSeconds * 100 * writeCentsPerCall);
  log(`throughput warm-up: ${plan.throughputWarmupSeconds} s of each scenario at 10 callers`);
  for (const entry of throughputScenarios) {
    if (entry.writes) await ensureRefundable(writePhaseCents);
    await closedLoop({ callers: 10, seconds: plan.throughputWarmupSeconds, make: entry.make });
  }
  const workers: Record<WorkerKey, WorkerChild> = {
    toolgate: harness.toolgateWorker,
    bare: harness.bareWorker,
    shaped: harness.shapedWorker,
  };
  const idle = new Map<WorkerKey, WorkerUsage>();
  for (const key of workerKeys) idle.set(key, await workers[key].mark());
  const maxLevel = Math.max(...plan.levels);
  /** Each worker's peak during its memory-counted phases at the highest level. */
  const peaks = new Map<WorkerKey, { peakBytes: number; samples: number }>();
  const load = new Map<string, LoadTotal>();
  // The what-ifs run after every counted phase, so what they leave in their worker's memory is in no
  // peak figure (a process rarely gives resident memory back).
  const counted = throughputScenarios.filter((entry) => !entry.topOnly);
  const whatIfs = throughputScenarios.filter((entry) => entry.topOnly);
  const phases: { round: number; callers: number; entry: (typeof throughputScenarios)[number] }[] = [];
  for (let round = 0; round < plan.throughputRounds; round++) {
    for (const callers of plan.levels) {
      const ordered = round % 2 === 0 ? counted : [...counted].reverse();
      for (const entry of ordered) phases.push({ round, callers, entry });
    }
  }
  for (let round = 0; round < plan.throughputRounds; round++) {
    const ordered = round % 2 === 0 ? whatIfs : [...whatIfs].reverse();
    for (const entry of ordered) phases.push({ round, callers: maxLevel, entry });
  }
  for (const { round, callers, entry } of phases) {
    if (entry.writes) await ensureRefundable(writePhaseCents);
    const worker = workers[entry.worker];
    await worker.mark();
    const serverBefore = processCpuMicros(harness.serverPid);
    const clientBefore = process.cpuUsage();
    const outcome = await closedLoop({ callers, seconds: plan.phaseSeconds, make: entry.make });
    const clientUsage = process.cpuUsage(clientBefore);
    const serverAfter = processCpuMicros(harness.serverPid);
    const usage = await worker.read();
    if (callers === maxLevel && entry.countsMemory) {
      const seen = peaks.get(entry.worker);
      peaks.set(entry.worker, {
        peakBytes: Math.max(seen?.peakBytes ?? 0, usage.peakBytes),
        samples: (seen?.samples ?? 0) + usage.samples,
      });
    }
    const key = `${entry.scenario}@${callers}`;
    const total: LoadTotal = load.get(key) ?? {
      calls: 0,
      seconds: 0,
      perRound: [],
      samples: [],
      errors: 0,
      errorCodes: {},
      cpuMicros: 0,
      serverCpuMicros: 0,
      clientCpuMicros: 0,
      loopDelayMaxMs: 0,
    };
    const rate = outcome.calls / outcome.elapsedSeconds;
    total.calls += outcome.calls;
    total.seconds += outcome.elapsedSeconds;
    total.perRound.push(rate);
    total.samples.push(...outcome.samples);
    total.errors += outcome.errors;
    total.cpuMicros += usage.cpuMicros;
    total.serverCpuMicros +=
      serverBefore === undefined || serverAfter === undefined ? Number.NaN : serverAfter - serverBefore;
    total.clientCpuMicros += clientUsage.user + clientUsage.system;
    total.loopDelayMaxMs = Math.max(total.loopDelayMaxMs, usage.loopDelayMaxMs);
    for (const [code, count] of Object.entries(outcome.errorCodes))
      total.errorCodes[code] = (total.errorCodes[code] ?? 0) + count;
    load.set(key, total);
    log(
      `throughput round ${round + 1}/${plan.throughputRounds}: ${entry.label}, ${callers} callers: ` +
        `${rate.toFixed(1)} calls/s, p50 ${summarize(outcome.samples).p50.toFixed(0)} ms, worker CPU ` +
        `${(usage.cpuMicros / 1000 / Math.max(1, outcome.calls)).toFixed(1)} ms/call` +
        (outcome.errors > 0
          ? `, ${outcome.errors} errors (${Object.keys(outcome.errorCodes).join(', ')})`
          : ''),
    );
  }
  const throughput: ThroughputResult[] = [];
  const loadSamples: Measured['loadSamples'] = [];
  for (const callers of plan.levels) {
    for (const entry of throughputScenarios) {
      const total = load.get(`${entry.scenario}@${callers}`);
      if (!total) continue;
      throughput.push({
        scenario: entry.scenario,
        label: entry.label,
        callers,
        seconds: Math.round(total.seconds * 100) / 100,
        calls: total.calls,
        callsPerSecond: total.calls / total.seconds,
        perRound: total.perRound.map((rate) => Math.round(rate * 10) / 10),
        latency: summarize(total.samples),
        errors: total.errors,
        errorCodes: total.errorCodes,
        workerCpuMsPerCall: total.cpuMicros / 1000 / Math.max(1, total.calls),
        serverCpuMsPerCall: total.serverCpuMicros / 1000 / Math.max(1, total.calls),
        clientCpuMsPerCall: total.clientCpuMicros / 1000 / Math.max(1, total.calls),
        workerLoopDelayMaxMs: total.loopDelayMaxMs,
      });
      loadSamples.push({ scenario: entry.scenario, label: entry.label, callers, samples: total.samples });
    }
  }

  // Memory under many open sessions at once: every caller holds its own session while its first
  // calls are in flight, governed reads against bare reads, one phase each.
  const crowd = plan.memorySessions;
  log(`memory: ${crowd} concurrent callers on each worker: governed sessions, bare callers, shaped sessions`);
  const crowdPeaks = new Map<WorkerKey, { peakBytes: number; samples: number }>();
  for (const entry of throughputScenarios.filter((scenario) => scenario.countsMemory)) {
    const worker = workers[entry.worker];
    await worker.mark();
    const outcome = await closedLoop({ callers: crowd, seconds: plan.phaseSeconds, make: entry.make });
    const usage = await worker.read();
    crowdPeaks.set(entry.worker, { peakBytes: usage.peakBytes, samples: usage.samples });
    log(
      `memory: ${entry.label}, ${crowd} callers: ${outcome.calls} calls in ${outcome.elapsedSeconds.toFixed(1)} s, ` +
        `peak ${(usage.peakBytes / 2 ** 20).toFixed(0)} MB, ${outcome.errors} errors`,
    );
  }

  log('reading round trips from the histories of representative calls');
  const roundTrips = await recordHistories(harness);

  const megabytes = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
  return {
    latency: Object.values(series).map((entry) => entry.result()),
    throughput,
    loadSamples,
    pure: pureCases.map((pureCase) => ({
      id: pureCase.id,
      label: pureCase.label,
      microseconds: summarize(pureTimings.get(pureCase.id)!),
    })),
    roundTrips,
    memory: [
      { level: maxLevel, measured: peaks, withWarnings: true },
      { level: crowd, measured: crowdPeaks, withWarnings: false },
    ].flatMap(({ level, measured, withWarnings }) =>
      workerKeys.map((key) => ({
        label: `${key} worker, ${level} concurrent ${key === 'bare' ? 'callers' : 'sessions'}`,
        idleMb: megabytes(idle.get(key)?.currentBytes ?? Number.NaN),
        peakMb: megabytes(measured.get(key)?.peakBytes ?? 0),
        samples: measured.get(key)?.samples ?? 0,
        warnings: withWarnings ? Object.fromEntries(workers[key].warnings) : {},
      })),
    ),
  };
}

/** One conversation of governed reads, one rejection, one write and one bare run of each kind, on a quiet system. */
async function recordHistories(harness: BenchHarness): Promise<HistoryCounts[]> {
  const { client } = harness;
  const session = `bench-history-${randomUUID()}`;
  const rejectSession = `bench-history-${randomUUID()}`;
  const writeSession = `bench-history-${randomUUID()}`;
  const shaped = shapedCaller(harness);
  const opened = new Set<string>();
  try {
    return await recordedHistories({ harness, session, rejectSession, writeSession, shaped, opened });
  } finally {
    // Every session the recording opened is ended, whatever failed (and none it never opened).
    await Promise.all([...opened].map((id) => client.endSession(id).catch(() => undefined)));
    await shaped.close().catch(() => undefined);
  }
}

async function recordedHistories(input: {
  harness: BenchHarness;
  session: string;
  rejectSession: string;
  writeSession: string;
  shaped: ReturnType<typeof shapedCaller>;
  /** The governed sessions proposed to so far, to be ended. */
  opened: Set<string>;
}): Promise<HistoryCounts[]> {
  const { harness, session, rejectSession, writeSession, shaped, opened } = input;
  const { client, temporal } = harness;
  let callId = '';
  for (let index = 0; index < callsPerSession; index++) {
    opened.add(session);
    const result = await client.call({
      session,
      caller: benchCallers.reader,
      tool: 'get_order',
      arguments: JSON.stringify({ order_id: readOrderId }),
    });
    if (result.code !== 'OK') throw new Error(`the history conversation's read answered ${result.code}`);
    callId = result.callId;
  }
  opened.add(rejectSession);
  const rejected = await client.call({
    session: rejectSession,
    caller: benchCallers.refunder,
    tool: 'refund_order',
    arguments: invalidRefundArguments,
  });
  // One governed write without approval and one bare refund, a cent each, after the load phases.
  if ((await harness.orders.api.getOrder({ orderId: refundOrderId })).refundableCents < 2) {
    await harness.orders.api.reset();
  }
  opened.add(writeSession);
  const written = await client.call({
    session: writeSession,
    caller: benchCallers.refunder,
    tool: 'refund_order',
    arguments: JSON.stringify({
      order_id: refundOrderId,
      amount_cents: 1,
      currency: 'BRL',
      reason: 'damaged',
    }),
  });
  if (written.code !== 'OK') throw new Error(`the history write answered ${written.code}`);
  const bareIds = {
    bareRead: `bench-history-bare-${randomUUID()}`,
    bareLocalRead: `bench-history-local-${randomUUID()}`,
  };
  for (const [workflow, workflowId] of Object.entries(bareIds)) {
    await temporal.workflow.execute(workflow, {
      taskQueue: harness.bareTaskQueue,
      workflowId,
      args: [{ orderId: readOrderId }],
    });
  }
  const bareRefundId = `bench-history-refund-${randomUUID()}`;
  await temporal.workflow.execute('bareRefund', {
    taskQueue: harness.bareTaskQueue,
    workflowId: bareRefundId,
    args: [{ orderId: refundOrderId, amountCents: 1 }],
  });
  // One conversation of the bare baseline shaped like governed reads.
  for (let index = 0; index < callsPerSession; index++) {
    await shaped.prepare();
    const outcome = await shaped.call();
    if (!outcome.ok) throw new Error(`the shaped conversation's read answered ${outcome.code}`);
  }
  const shapedIds = shaped.lastIds();
  const histories = [
    await countHistory({
      temporal,
      id: 'gov-call',
      label: 'governed read: its call run',
      workflowId: callId,
    }),
    await countHistory({
      temporal,
      id: 'reject-call',
      label: 'governed rejection: its call run',
      workflowId: rejected.callId,
    }),
    await countHistory({
      temporal,
      id: 'gov-write',
      label: 'governed write, no approval: its call run',
      workflowId: written.callId,
    }),
    await countHistory({ temporal, id: 'bare-act', label: 'bare, 1 activity', workflowId: bareIds.bareRead }),
    await countHistory({
      temporal,
      id: 'bare-local',
      label: 'bare, 1 local activity',
      workflowId: bareIds.bareLocalRead,
    }),
    await countHistory({
      temporal,
      id: 'bare-refund',
      label: 'bare refund, 1 activity',
      workflowId: bareRefundId,
    }),
    await countHistory({
      temporal,
      id: 'shaped-call',
      label: 'bare shaped like a read: its call',
      workflowId: shapedIds.call,
    }),
    await countHistory({
      temporal,
      id: 'shaped-session',
      label: `its session, per call (${callsPerSession} calls)`,
      workflowId: shapedIds.session,
      calls: callsPerSession,
    }),
  ];

  return histories;
}

main().catch((error: unknown) => {
  if (interrupted) return;
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
