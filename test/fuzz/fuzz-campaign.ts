// The fuzz campaign: sessions of random and mutated proposals through the real client, against a
// real Temporal server, a real worker and the real orders process; then what the orders service,
// the Temporal histories and the reference model say about every answer. Used by `npm run fuzz`
// (run-fuzz.ts) and by the 300-payload run of `npm test` (fuzz.test.ts).
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import type { AnyToolContract, CallContext, PolicyFileInput, ToolGateClient, ToolResult } from 'toolgate';
import { errorCodes } from 'toolgate';
import { testCallers, testPolicy } from '../support/test-policy';
import { explodeSecret } from '../support/test-tool-implementations';
import { testContracts } from '../support/test-tools';
import type { FuzzCall, FuzzSession } from './fuzz-payloads';
import { fuzzOrderIds, sessionSource } from './fuzz-payloads';
import type { ModelOrder } from './fuzz-model';
import { SessionModel, expectedBackendRequests, modelContext } from './fuzz-model';
import type { TaskFailure, UnexpectedRun, WorkflowHealth } from './workflow-health';
import { inspectWorkflows } from './workflow-health';

/** What a campaign runs against: a client and worker on one task queue, and the orders service they use. */
export interface FuzzTarget {
  client: ToolGateClient;
  temporal: Client;
  taskQueue: string;
  orders: { api: OrdersApiClient };
}

/** Options of {@link runFuzzCampaign}. */
export interface FuzzCampaignInput {
  target: FuzzTarget;
  /** How many proposals to make. */
  payloads: number;
  /** Draws every session; the same seed proposes the same calls. */
  seed: number;
  /** Sessions in flight at once (each runs its calls one after another). Default 8. */
  concurrency?: number;
  /** A call with no answer after this long counts as a client exception. Default 120 s. */
  callTimeoutMs?: number;
  /** The policy the worker enforces (default: the tests' policy); the model reads it. */
  policy?: PolicyFileInput;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Stops starting new sessions (the report covers what ran). */
  signal?: AbortSignal;
}

/** One proposal, as printed in the report: enough to propose it again. */
export interface CallTrace {
  /** `seed/session/call`: the session's index in the campaign drawn from the seed, the call's in the session. */
  at: string;
  caller: string;
  tool: string;
  arguments: string;
  argumentsForm: 'text' | 'object';
  /** The context the harness attached, as JSON (abbreviated); absent for none. */
  context?: string;
  kind: string;
}

/** What a campaign saw; `violations` lists every broken invariant, empty when all held. */
export interface FuzzReport {
  seed: number;
  payloads: number;
  sessions: number;
  concurrency: number;
  /** Time spent proposing (all sessions), and the rate. */
  callPhaseMs: number;
  payloadsPerSecond: number;
  /** Time spent checking afterwards (counters, visibility, histories). */
  checkPhaseMs: number;
  answersByCode: Record<string, number>;
  /** Answers by the tool they were meant for (`other` for names that are no tool) and code. */
  answersByTool: Record<string, Record<string, number>>;
  /** Proposals by how their arguments were made (`valid`, `mutated`, `broken-json`…), and mutations by kind. */
  payloadKinds: {
    generators: Record<string, number>;
    mutations: Record<string, number>;
    repeats: number;
    intruders: number;
  };
  backend: {
    /** Business requests the orders service counted during the campaign. */
    seen: number;
    /** The sum of what each answer costs (fuzz-model.ts). */
    expected: number;
    /** `tool code` → answers and requests each. */
    byOutcome: Record<string, { answers: number; requestsEach: number | 'unknown' }>;
  };
  /** Refunds the orders service applied during the campaign; every caller here needs approval, so 0. */
  refundsApplied: number;
  /** Answers whose effect is not `none` (nothing may change the world here). */
  effectsNotNone: CallTrace[];
  /** Answers that differ from the reference model (fuzz-model.ts). */
  wrongAnswers: (CallTrace & { expected: string; got: string; message: string })[];
  /** Answers the model could not check (their session had a client exception before). */
  unchecked: number;
  /** Answers that break the ToolResult contract (ok/code, call id, tool, known code, a leaked secret). */
  malformedResults: (CallTrace & { problem: string })[];
  /** `client.call` threw (or gave no answer in time). */
  clientExceptions: (CallTrace & { error: string })[];
  /** Calls waiting for approval at the end (their runs stay open). */
  waitingForApproval: number;
  workflows: {
    runsByTypeAndStatus: Record<string, number>;
    callRunsSeen: number;
    /** Runs the answers account for: every admitted proposal that did not join a waiting run. */
    callRunsExpected: number | 'unknown';
    taskFailures: TaskFailure[];
    taskTimeouts: number;
    unexpectedRuns: UnexpectedRun[];
    settleMs: number;
  };
  /** Failures of the campaign's own bookkeeping (ending sessions, reading counters). */
  harnessErrors: string[];
  violations: string[];
}

const traceTextLimit = 300;

function traceOf(input: { at: string; call: FuzzCall }): CallTrace {
  const { call } = input;
  const text = typeof call.arguments === 'string' ? call.arguments : safeStringify(call.arguments);
  return {
    at: input.at,
    caller: call.caller,
    tool: abbreviated(call.tool),
    arguments: abbreviated(text),
    argumentsForm: typeof call.arguments === 'string' ? 'text' : 'object',
    ...(call.context !== undefined ? { context: abbreviated(safeStringify(call.context)) } : {}),
    kind: call.kind,
  };
}

function abbreviated(text: string): string {
  return text.length <= traceTextLimit
    ? text
    : `${text.slice(0, traceTextLimit)}… (${text.length} characters)`;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch (error) {
    return `(unserialisable: ${describeError(error)})`;
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 500);
  return String(error).slice(0, 500);
}

/** Counts a generator kind such as `refund_order mutated(float-cents,unknown-field) again(reformatted)`. */
function countKind(kinds: FuzzReport['payloadKinds'], kind: string): void {
  const [, generator = ''] = kind.split(' ');
  const match = /^([\w-]+)(?:\(([^)]*)\))?/.exec(generator);
  increment(kinds.generators, match?.[1] ?? generator);
  for (const mutation of match?.[2]?.split(',') ?? []) increment(kinds.mutations, mutation);
  if (kind.includes(' again')) kinds.repeats++;
  if (kind.endsWith(' intruder')) kinds.intruders++;
}

function increment(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const knownCodes: ReadonlySet<string> = new Set([
  'OK',
  ...errorCodes,
  ...[...ordersContracts, ...testContracts].flatMap((contract) => Object.keys(contract.domainCodes ?? {})),
]);

/**
 * Runs the campaign and checks it. Never throws for what a proposal does: every surprise lands in
 * the report, and `violations` says which invariant it broke.
 */
export async function runFuzzCampaign(input: FuzzCampaignInput): Promise<FuzzReport> {
  const { target, seed } = input;
  const log = input.log ?? (() => undefined);
  const concurrency = input.concurrency ?? 8;
  const callTimeoutMs = input.callTimeoutMs ?? 120_000;
  const policy = input.policy ?? testPolicy;
  const api = target.orders.api;
  const harnessErrors: string[] = [];

  const nextSession = sessionSource({ seed, payloads: input.payloads });
  // The orders the model checks against, read before the baseline so these reads are not counted.
  const orders = new Map<string, ModelOrder>();
  for (const orderId of fuzzOrderIds) {
    try {
      const order = await api.getOrder({ orderId });
      orders.set(orderId, {
        currency: order.currency,
        refundableCents: order.refundableCents,
        customerId: order.customerId,
      });
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ORDER_NOT_FOUND') throw error;
    }
  }
  const contracts = new Map<string, AnyToolContract>(
    [...ordersContracts, ...testContracts].map((contract) => [contract.name, contract as AnyToolContract]),
  );
  const world = { policy, contracts, orders, signedCallers: new Set<string>(testCallers) };
  const backendBefore = await api.businessRequestCount();
  const refundsBefore = await api.refundCount();

  const answersByCode: Record<string, number> = {};
  const answersByTool: Record<string, Record<string, number>> = {};
  const payloadKinds: FuzzReport['payloadKinds'] = {
    generators: {},
    mutations: {},
    repeats: 0,
    intruders: 0,
  };
  const byOutcome: FuzzReport['backend']['byOutcome'] = {};
  const effectsNotNone: CallTrace[] = [];
  const wrongAnswers: FuzzReport['wrongAnswers'] = [];
  const malformedResults: FuzzReport['malformedResults'] = [];
  const clientExceptions: FuzzReport['clientExceptions'] = [];
  const waitingCallIds = new Set<string>();
  let backendExpected = 0;
  let unchecked = 0;
  let callRunsExpected = 0;
  let made = 0;

  // Session ids are new for every campaign, so two runs on one server never share a session or a call id.
  const campaignId = randomUUID().slice(0, 8);
  const sessionIds: string[] = [];
  const callPhaseStarted = Date.now();
  let lastProgress = callPhaseStarted;

  async function runSession(session: FuzzSession, index: number): Promise<void> {
    const sessionId = `fuzz-${campaignId}-${seed}-${index}`;
    sessionIds.push(sessionId);
    const model = new SessionModel(world);
    let checkable = true;
    for (const [position, call] of session.calls.entries()) {
      if (input.signal?.aborted) return;
      const trace = traceOf({ at: `${seed}/${index}/${position}`, call });
      const withoutContext = {
        session: sessionId,
        caller: call.caller,
        tool: call.tool,
        arguments: call.arguments,
      };
      const readable = modelContext(call.context);
      const callInput =
        call.context === undefined
          ? withoutContext
          : { ...withoutContext, context: call.context as CallContext };
      countKind(payloadKinds, call.kind);
      made++;
      let callId: string | undefined;
      let result: ToolResult;
      try {
        // A context the client cannot read is no part of the call it names in its refusal.
        callId = target.client.callIdOf(readable ? callInput : withoutContext);
        result = await withTimeout(target.client.call(callInput), callTimeoutMs);
      } catch (error) {
        clientExceptions.push({ ...trace, error: describeError(error) });
        // What the session counted for it is unknown now: the model stops checking this session.
        checkable = false;
        continue;
      }
      if (typeof result !== 'object' || result === null) {
        malformedResults.push({ ...trace, problem: `not a ToolResult: ${safeStringify(result)}` });
        checkable = false;
        continue;
      }
      const expectation =
        checkable && callId !== undefined ? model.expect({ ...callInput, callId }) : undefined;
      if (!expectation) unchecked++;
      const joined = expectation?.joined ?? (callId !== undefined && model.isWaiting(callId));
      const code = typeof result.code === 'string' ? result.code : '(no code)';
      const tool = contracts.has(call.tool) ? call.tool : 'other';
      increment(answersByCode, code);
      increment((answersByTool[tool] ??= {}), code);

      if (expectation && expectation.code !== code) {
        wrongAnswers.push({
          ...trace,
          expected: expectation.code,
          got: code,
          message: abbreviated(String(result.message)),
        });
      }
      malformedResults.push(
        ...problemsOf({ result, callId, call }).map((problem) => ({ ...trace, problem })),
      );
      if (result.effect !== 'none') effectsNotNone.push(trace);

      const requests = expectedBackendRequests({
        tool: call.tool,
        code,
        joined,
        actsForEndUser: readable?.onBehalfOf !== undefined,
      });
      const outcome = `${tool} ${code}${joined ? ' (joined a waiting run)' : ''}`;
      const entry = (byOutcome[outcome] ??= { answers: 0, requestsEach: requests ?? 'unknown' });
      entry.answers++;
      backendExpected += requests ?? 0;

      // Every proposal starts a run (its admission is the run's first step), unless it joined one still
      // waiting, or the client refused its harness's context before anything started.
      if (code !== 'CONTEXT_INVALID' && !joined) callRunsExpected++;
      if (code === 'APPROVAL_PENDING') waitingCallIds.add(result.callId);
      model.record({ tool: call.tool, code, ok: result.ok, callId: result.callId, joined });

      if (Date.now() - lastProgress > 5_000) {
        lastProgress = Date.now();
        const seconds = (lastProgress - callPhaseStarted) / 1000;
        log(`${made}/${input.payloads} payloads, ${(made / seconds).toFixed(1)}/s`);
      }
    }
  }

  // Sessions in flight at once; each one's calls in order. Drawn in index order, so a seed always
  // numbers the same sessions the same way.
  let sessionCount = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        if (input.signal?.aborted) return;
        const session = nextSession();
        if (!session) return;
        await runSession(session, sessionCount++);
      }
    }),
  );
  const callPhaseMs = Date.now() - callPhaseStarted;

  const checkStarted = Date.now();
  const backendSeen = (await api.businessRequestCount()) - backendBefore;
  const refundsApplied = (await api.refundCount()) - refundsBefore;
  // Ended sessions close their runs, so a run left open afterwards is one that should not be.
  let nextEnd = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (nextEnd < sessionIds.length) {
        const sessionId = sessionIds[nextEnd++]!;
        try {
          await target.client.endSession(sessionId, { reason: 'fuzz campaign over' });
        } catch (error) {
          harnessErrors.push(`ending session ${sessionId}: ${describeError(error)}`);
        }
      }
    }),
  );
  const health: WorkflowHealth = await inspectWorkflows({
    temporal: target.temporal,
    taskQueue: target.taskQueue,
    waitingCallIds,
  });
  const checkPhaseMs = Date.now() - checkStarted;

  const report: FuzzReport = {
    seed,
    payloads: made,
    sessions: sessionIds.length,
    concurrency,
    callPhaseMs,
    payloadsPerSecond: made / Math.max(callPhaseMs / 1000, 0.001),
    checkPhaseMs,
    answersByCode,
    answersByTool,
    payloadKinds,
    backend: { seen: backendSeen, expected: backendExpected, byOutcome },
    refundsApplied,
    effectsNotNone,
    wrongAnswers,
    unchecked,
    malformedResults,
    clientExceptions,
    waitingForApproval: waitingCallIds.size,
    workflows: {
      runsByTypeAndStatus: health.runsByTypeAndStatus,
      callRunsSeen: health.callRuns,
      callRunsExpected: clientExceptions.length === 0 ? callRunsExpected : 'unknown',
      taskFailures: health.taskFailures,
      taskTimeouts: health.taskTimeouts,
      unexpectedRuns: health.unexpectedRuns,
      settleMs: health.settleMs,
    },
    harnessErrors,
    violations: [],
  };
  report.violations = violationsOf(report);
  return report;
}

/** What in one answer breaks the ToolResult contract (docs/design.md, "The pipeline and its codes"). */
function problemsOf(input: { result: ToolResult; callId: string | undefined; call: FuzzCall }): string[] {
  const { result, callId, call } = input;
  const problems: string[] = [];
  if (!knownCodes.has(result.code)) problems.push(`unknown code ${JSON.stringify(result.code)}`);
  if (result.ok !== (result.code === 'OK'))
    problems.push(`ok is ${String(result.ok)} with code ${result.code}`);
  if (typeof result.message !== 'string' || result.message === '') problems.push('no message for the model');
  if (!['none', 'applied', 'unknown'].includes(result.effect))
    problems.push(`effect ${String(result.effect)}`);
  if (callId !== undefined && result.callId !== callId) {
    problems.push(`call id ${result.callId} is not the proposal's ${callId}`);
  }
  if (result.tool !== call.tool.slice(0, 200))
    problems.push(`tool ${JSON.stringify(abbreviated(result.tool))} is not the proposal's`);
  if (safeStringify(result).includes(explodeSecret))
    problems.push('an internal error message reached the model');
  return problems;
}

/** Every invariant the campaign holds toolgate to; an empty list when all held. */
export function violationsOf(report: FuzzReport): string[] {
  const violations: string[] = [];
  if (report.clientExceptions.length > 0) {
    violations.push(
      `client.call threw (or never answered) for ${report.clientExceptions.length} proposals (expected 0)`,
    );
  }
  if (report.workflows.taskFailures.length > 0) {
    violations.push(`${report.workflows.taskFailures.length} workflow task failures (expected 0)`);
  }
  if (report.refundsApplied !== 0) violations.push(`${report.refundsApplied} refunds applied (expected 0)`);
  if (report.backend.seen !== report.backend.expected) {
    violations.push(
      `the orders service saw ${report.backend.seen} business requests, the answers account for ${report.backend.expected}`,
    );
  }
  const unknownCost = Object.entries(report.backend.byOutcome).filter(
    ([, entry]) => entry.requestsEach === 'unknown',
  );
  if (unknownCost.length > 0) {
    violations.push(
      `answers whose backend cost is not fixed: ${unknownCost.map(([outcome]) => outcome).join(', ')}`,
    );
  }
  if (report.effectsNotNone.length > 0) {
    violations.push(`${report.effectsNotNone.length} answers with an effect other than none (expected 0)`);
  }
  if (report.wrongAnswers.length > 0) {
    violations.push(`${report.wrongAnswers.length} answers differ from the reference model`);
  }
  if (report.malformedResults.length > 0) {
    violations.push(`${report.malformedResults.length} answers break the ToolResult contract`);
  }
  if (report.workflows.unexpectedRuns.length > 0) {
    violations.push(
      `${report.workflows.unexpectedRuns.length} workflow runs ended (or stayed open) unexpectedly`,
    );
  }
  if (
    report.workflows.callRunsExpected !== 'unknown' &&
    report.workflows.callRunsExpected !== report.workflows.callRunsSeen
  ) {
    violations.push(
      `${report.workflows.callRunsSeen} call runs on the server, the answers account for ${report.workflows.callRunsExpected}`,
    );
  }
  if (report.harnessErrors.length > 0)
    violations.push(`${report.harnessErrors.length} errors of the campaign itself`);
  return violations;
}

function table(rows: [string, string | number][], indent = '  '): string {
  const width = Math.max(0, ...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${indent}${label.padEnd(width)}  ${value}`).join('\n');
}

function sortedCounts(counts: Record<string, number>): [string, number][] {
  return Object.entries(counts).sort(([a, countA], [b, countB]) => countB - countA || a.localeCompare(b));
}

function traceLines<T extends CallTrace>(traces: T[], describe: (trace: T) => string, limit = 10): string[] {
  const lines = traces
    .slice(0, limit)
    .map(
      (trace) =>
        `    [${trace.at}] ${describe(trace)}\n      ${trace.caller} → ${JSON.stringify(trace.tool)} (${trace.kind}), ${trace.argumentsForm} ${JSON.stringify(trace.arguments)}${trace.context !== undefined ? `, context ${trace.context}` : ''}`,
    );
  if (traces.length > limit) lines.push(`    … and ${traces.length - limit} more`);
  return lines;
}

/** The report as a person reads it: counts first, then every broken invariant with reproducers. */
export function formatFuzzReport(report: FuzzReport): string {
  const lines: string[] = [];
  const held = (ok: boolean): string => (ok ? 'ok' : 'BROKEN');
  lines.push(
    `fuzz: ${report.payloads} payloads in ${report.sessions} sessions, seed ${report.seed}, ${report.concurrency} sessions at a time`,
    `  ${(report.callPhaseMs / 1000).toFixed(1)} s proposing (${report.payloadsPerSecond.toFixed(1)} payloads/s), ${(report.checkPhaseMs / 1000).toFixed(1)} s checking`,
    `  payloads: ${sortedCounts(report.payloadKinds.generators)
      .map(([kind, count]) => `${kind} ${count}`)
      .join(
        ', ',
      )}; ${report.payloadKinds.repeats} repeats, ${report.payloadKinds.intruders} from another caller`,
    `  mutations: ${sortedCounts(report.payloadKinds.mutations)
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', ')}`,
    '',
    'answers by code:',
    table(sortedCounts(report.answersByCode)),
    '',
    'answers by tool:',
    table(
      Object.entries(report.answersByTool)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([tool, codes]) => [
          tool,
          sortedCounts(codes)
            .map(([code, count]) => `${code} ${count}`)
            .join(', '),
        ]),
    ),
    '',
    'backend requests (orders service business requests):',
    table(
      Object.entries(report.backend.byOutcome)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([outcome, entry]) => [
          outcome,
          `${entry.answers} × ${entry.requestsEach} = ${entry.requestsEach === 'unknown' ? '?' : entry.answers * entry.requestsEach}`,
        ]),
      '    ',
    ),
    table([
      ['seen', report.backend.seen],
      [
        'expected from the answers',
        `${report.backend.expected}  ${held(report.backend.seen === report.backend.expected)}`,
      ],
    ]),
    '',
    'invariants:',
    table([
      ['refunds applied', `${report.refundsApplied}  ${held(report.refundsApplied === 0)}`],
      [
        'effects other than none',
        `${report.effectsNotNone.length}  ${held(report.effectsNotNone.length === 0)}`,
      ],
      [
        'workflow task failures',
        `${report.workflows.taskFailures.length}  ${held(report.workflows.taskFailures.length === 0)}`,
      ],
      [
        'client exceptions',
        `${report.clientExceptions.length}  ${held(report.clientExceptions.length === 0)}`,
      ],
      [
        'answers unlike the model',
        `${report.wrongAnswers.length} of ${report.payloads - report.unchecked} checked  ${held(report.wrongAnswers.length === 0)}`,
      ],
      [
        'malformed results',
        `${report.malformedResults.length}  ${held(report.malformedResults.length === 0)}`,
      ],
      [
        'runs ended or open unexpectedly',
        `${report.workflows.unexpectedRuns.length}  ${held(report.workflows.unexpectedRuns.length === 0)}`,
      ],
      [
        'call runs on the server',
        `${report.workflows.callRunsSeen} (answers account for ${report.workflows.callRunsExpected})  ${held(report.workflows.callRunsExpected === 'unknown' || report.workflows.callRunsExpected === report.workflows.callRunsSeen)}`,
      ],
    ]),
    '',
    'workflow runs on the task queue:',
    table(sortedCounts(report.workflows.runsByTypeAndStatus)),
    `  waiting for approval at the end: ${report.waitingForApproval}; workflow task timeouts (load, not failures): ${report.workflows.taskTimeouts}; visibility settled in ${(report.workflows.settleMs / 1000).toFixed(1)} s`,
  );
  if (report.clientExceptions.length > 0) {
    lines.push('', 'client exceptions:', ...traceLines(report.clientExceptions, (trace) => trace.error));
  }
  if (report.workflows.taskFailures.length > 0) {
    lines.push(
      '',
      'workflow task failures:',
      ...report.workflows.taskFailures
        .slice(0, 10)
        .map(
          (failure) =>
            `    ${failure.workflowType} ${failure.workflowId} (${failure.cause}): ${failure.message.slice(0, 300)}`,
        ),
    );
  }
  if (report.wrongAnswers.length > 0) {
    lines.push(
      '',
      'answers unlike the model:',
      ...traceLines(
        report.wrongAnswers,
        (trace) => `expected ${String(trace.expected)}, got ${String(trace.got)}: ${String(trace.message)}`,
      ),
    );
  }
  if (report.malformedResults.length > 0) {
    lines.push('', 'malformed results:', ...traceLines(report.malformedResults, (trace) => trace.problem));
  }
  if (report.effectsNotNone.length > 0) {
    lines.push('', 'effects other than none:', ...traceLines(report.effectsNotNone, () => 'effect not none'));
  }
  if (report.workflows.unexpectedRuns.length > 0) {
    lines.push(
      '',
      'runs ended or open unexpectedly:',
      ...report.workflows.unexpectedRuns
        .slice(0, 10)
        .map((run) => `    ${run.workflowType} ${run.workflowId} ${run.status}: ${run.problem}`),
    );
  }
  if (report.harnessErrors.length > 0)
    lines.push('', 'campaign errors:', ...report.harnessErrors.slice(0, 10).map((error) => `    ${error}`));
  lines.push(
    '',
    report.violations.length === 0
      ? `all invariants held (seed ${report.seed})`
      : `BROKEN (rerun with --seed ${report.seed}):\n${report.violations.map((violation) => `  - ${violation}`).join('\n')}`,
  );
  return lines.join('\n');
}
