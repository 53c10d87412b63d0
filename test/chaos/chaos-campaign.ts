// One chaos run, start to verdict:
//   1. plan the intents from the seed orders' balances, and arm the fault switches of some by key;
//   2. start the worker chaos (the worker SIGKILLed 1-5 s after each start, and started again);
//   3. propose the refunds that need approval (they wait, pending) while agents start on the
//      autonomous refunds;
//   4. once half the autonomous refunds have settled, SIGKILL the Temporal server and start it again
//      on the same port with the same database file; the agent proposes its pending refunds again
//      (each must join its waiting call);
//   5. approve the pending refunds (every round: a round reopens when the order's balance moved
//      meanwhile) and wait for their results, while the autonomous refunds go on;
//   6. stop everything and judge what the agents were told against the orders service's records.
import { setTimeout as delay } from 'node:timers/promises';
import type { Order } from '../../examples/orders/orders-api-client';
import type { ToolResult } from 'toolgate';
import { SEED_ORDERS } from '../../examples/orders/service/orders-database';
import type { AgentAnswer, ChaosVerdict, IntentOutcome } from './chaos-verdict';
import { judgeChaosRun } from './chaos-verdict';
import type { ChaosEnvironment } from './chaos-environment';
import { startChaosEnvironment } from './chaos-environment';
import type { AgentPatience } from './chaos-agent';
import {
  defaultAgentPatience,
  describeAnswer,
  proposalOf,
  proposalsBySession,
  resultsBySession,
  pursueIntent,
  runAgentLanes,
  shouldRetry,
} from './chaos-agent';
import type { ChaosIntent, FaultProfileName, Random } from './chaos-plan';
import { faultProfiles, planChaosIntents, seededRandom } from './chaos-plan';
import { chaosApprover, chaosCallers } from './chaos-policy';
import type { WorkerChaos } from './worker-chaos';
import { startWorkerChaos } from './worker-chaos';

/** What a run does; every field has a default in run-chaos.ts. */
export interface ChaosOptions {
  /** Intents in all, the approval ones included. */
  intents: number;
  /** How many of them need approval (and wait across the server restart). */
  approvals: number;
  /** Agent conversations at a time. */
  lanes: number;
  /** Share of intents (0..1) with fault switches armed. */
  faultShare: number;
  seed: number;
  /** No new proposal after this long; what is unresolved then is lost. */
  deadlineMs: number;
  patience?: AgentPatience;
  log: (line: string) => void;
}

/** The verdict and what the run went through. */
export interface ChaosReport {
  verdict: ChaosVerdict;
  /** Summary lines printed before the verdict. */
  summary: string[];
}

const progressIntervalMs = 10_000;
const approvalPollMs = 1_000;
const approvalTimeoutMs = 600_000;

/**
 * Runs the campaign. Everything it starts is stopped before it returns or throws; `exposeStop`
 * receives a function that stops it all at once (for an interrupt).
 */
export async function runChaosCampaign(input: {
  options: ChaosOptions;
  exposeStop?: (stop: () => Promise<void>) => void;
}): Promise<ChaosReport> {
  const { options } = input;
  const { log } = options;
  const patience = options.patience ?? defaultAgentPatience;
  const startedAt = performance.now();
  const deadline = startedAt + options.deadlineMs;
  let stopRequested = false;
  // Past the deadline, or stopped from outside: no new proposal, no new approval.
  const pastDeadline = (): boolean => stopRequested || performance.now() > deadline;
  let chaos: WorkerChaos | undefined;
  let environment: ChaosEnvironment | undefined;
  let stopEnvironment: (() => Promise<void>) | undefined;
  const stopAll = async (): Promise<void> => {
    stopRequested = true;
    await chaos?.stop();
    await stopEnvironment?.();
  };
  input.exposeStop?.(stopAll);
  let progress: NodeJS.Timeout | undefined;

  try {
    environment = await startChaosEnvironment({
      log,
      exposeStop: (stop) => {
        stopEnvironment = stop;
      },
    });
    const env = environment;

    // 1. The plan, from the balances the orders service reports now.
    const orders = await Promise.all(
      SEED_ORDERS.map((order) => env.orders.api.getOrder({ orderId: order.orderId })),
    );
    const random = seededRandom(options.seed);
    const intents = planChaosIntents({
      total: options.intents,
      approvals: options.approvals,
      faultShare: options.faultShare,
      orders,
      callers: chaosCallers,
      random,
    });
    // An intent keys its call: the session plays no part in the call id.
    const callIdOf = (intent: ChaosIntent): string =>
      env.client.callIdOf(proposalOf({ intent, session: 'any' }));
    for (const intent of intents) {
      if (intent.faults === 'none') continue;
      await env.orders.api.setFaults({ idempotencyKey: callIdOf(intent), ...faultProfiles[intent.faults] });
    }
    const autonomous = intents.filter((intent) => intent.kind === 'autonomous');
    const needingApproval = intents.filter((intent) => intent.kind === 'approval');
    log(
      `plan (seed ${options.seed}): ${autonomous.length} autonomous refunds by ${chaosCallers.autonomous}, ` +
        `${needingApproval.length} by ${chaosCallers.approvee} needing approval; faults: ${describeFaults(intents)}`,
    );
    log(`amounts: ${describeAmounts({ intents, orders })}`);

    // 2. The worker chaos; its first worker starts in the background.
    chaos = startWorkerChaos({
      config: env.workerConfig,
      random: seededRandom(options.seed ^ 0x5bd1e995),
      log: (line) => log(`worker: ${line}`),
    });

    const settled: IntentOutcome[] = [];
    let serverDownMs: number | undefined;
    let stage = 'approvals being proposed';
    progress = setInterval(() => {
      const counts = chaos!.counts();
      const retried = settled.filter((outcome) => outcome.answers.length > 1).length;
      const ok = settled.filter(finalOk).length;
      log(
        `progress: ${settled.length}/${autonomous.length} autonomous intents settled (${ok} OK, ${retried} retried); ` +
          `worker starts ${counts.starts}, kills ${counts.kills}, failed starts ${counts.failedStarts}; ${stage}`,
      );
    }, progressIntervalMs);

    // 3. The refunds that need approval, proposed alongside the first autonomous ones: they wait.
    const approvalRandom = seededRandom(options.seed ^ 0x27d4eb2d);
    // One conversation per refund that needs approval, as separate customers' requests would be.
    const approvalSession = (intent: ChaosIntent): string => `chaos-approval-${intent.index + 1}`;
    const proposing = Promise.all(
      needingApproval.map(async (intent) => {
        const outcome = await pursueIntent({
          client: env.client,
          intent,
          session: approvalSession(intent),
          patience,
          random: approvalRandom,
        });
        const last = outcome.answers.at(-1);
        log(`${intent.intentId}: ${last ? describeAnswer(last) : 'no answer'} (${outcome.callId})`);
        return outcome;
      }),
    );

    // 4-5. Once half the autonomous refunds have settled: kill the server and start it again, let the
    // agent propose its pending refunds again, and approve them while the other refunds go on.
    let restartAndApproval: Promise<IntentOutcome[]> | undefined;
    const restartThenApprove = (): Promise<IntentOutcome[]> =>
      (restartAndApproval ??= (async () => {
        const pending = await proposing;
        stage = 'server restarting';
        log(`killing the Temporal server with ${pending.length} refund(s) waiting for approval`);
        serverDownMs = (await env.restartServer()).downMs;
        log(
          `Temporal server back after ${(serverDownMs / 1000).toFixed(1)} s; proposing the pending refunds again`,
        );
        stage = 'server restarted, approvals under way';
        await Promise.all(
          pending.map((outcome) =>
            settlePendingApproval({
              env,
              outcome,
              session: approvalSession(outcome.intent),
              patience,
              random: approvalRandom,
              log,
              pastDeadline,
            }),
          ),
        );
        stage = 'server restarted, approvals done';
        return pending;
      })());
    const restartAfter = Math.ceil(autonomous.length / 2);
    if (restartAfter === 0)
      void restartThenApprove().catch(() => {
        stopRequested = true;
      });
    const phaseOne = await runAgentLanes({
      client: env.client,
      intents: autonomous,
      lanes: options.lanes,
      sessionPrefix: 'chaos-agent',
      patience,
      random: seededRandom(options.seed ^ 0x68e31da4),
      shouldStop: pastDeadline,
      onSettled: (outcome) => {
        settled.push(outcome);
        if (outcome.answers.length !== 1 || !finalOk(outcome)) {
          log(
            `${outcome.intent.intentId} (faults ${outcome.intent.faults}): ` +
              outcome.answers.map(describeAnswer).join(' -> '),
          );
        }
        // A failure surfaces where it is awaited below; meanwhile nobody proposes anything more.
        if (settled.length >= restartAfter)
          void restartThenApprove().catch(() => {
            stopRequested = true;
          });
      },
    });
    const pending = await restartThenApprove();

    // 6. The verdict, from the orders service's records.
    const counts = chaos.counts();
    await chaos.stop();
    const refunds = await env.orders.api.listRefunds();
    const ordersAfter = await Promise.all(
      orders.map((order) => env.orders.api.getOrder({ orderId: order.orderId })),
    );
    const fired = await faultsFired({ env, intents, callIdOf });
    const verdict = judgeChaosRun({ outcomes: [...phaseOne, ...pending], refunds });
    verdict.findings.push(...ledgerFindings({ before: orders, after: ordersAfter, refunds }));
    // Each session charged once per proposal, whatever was killed between an admission's commit and
    // the completion of its task: steps in the store never exceed the proposals the agent made, and
    // every proposal answered with a result was a step.
    let sessionsChecked = 0;
    for (const [session, proposals] of proposalsBySession) {
      const { steps } = await env.audit.sessions.stats({ session });
      sessionsChecked++;
      if (steps > proposals) {
        verdict.findings.push(
          `ledger: session ${session}: ${steps} steps charged for ${proposals} proposals`,
        );
      }
      const results = resultsBySession.get(session) ?? 0;
      if (steps < results) {
        verdict.findings.push(
          `session ${session}: ${steps} steps, fewer than its ${results} answered proposals`,
        );
      }
    }
    const answers = [...phaseOne, ...pending].flatMap((outcome) => outcome.answers);
    const summary = [
      `worker: ${counts.starts} starts, ${counts.kills} SIGKILLs, ${counts.failedStarts} failed starts, ` +
        `${counts.unexpectedExits} exits by itself; a start took ${(counts.startMs / Math.max(1, counts.starts) / 1000).toFixed(1)} s on average`,
      `server: killed once with SIGKILL, back after ${((serverDownMs ?? 0) / 1000).toFixed(1)} s`,
      `agent: ${answers.length} proposals for ${intents.length} intents; answers ${tally(answers)}`,
      `sessions: ${sessionsChecked} checked in the store, each charged at most once per proposal`,
      `faults fired: ${fired.lostResponses.fired} of ${fired.lostResponses.armed} lost responses, ` +
        `${fired.unavailable.fired} of ${fired.unavailable.armed} 503s armed`,
      `orders service: ${refunds.length} refunds, ${refunds.reduce((sum, refund) => sum + refund.amountCents, 0)} cents in all`,
      `server errors logged: ${[...env.serverErrors].map(([kind, count]) => `"${kind}" ${count}`).join(', ') || 'none'}`,
      `wall time ${((performance.now() - startedAt) / 1000).toFixed(1)} s`,
    ];
    return { verdict, summary };
  } finally {
    if (progress) clearInterval(progress);
    await stopAll();
  }
}

/**
 * What the agent and the approver do with a refund left pending across the server restart: the
 * agent, unsure after the outage, proposes it again (it must join the waiting call); the approver
 * approves it until it is final. Told UPSTREAM_UNAVAILABLE ("not now"), the agent proposes it again
 * later, which opens a new run that needs approval again.
 */
async function settlePendingApproval(input: {
  env: ChaosEnvironment;
  outcome: IntentOutcome;
  session: string;
  patience: AgentPatience;
  random: Random;
  log: (line: string) => void;
  pastDeadline: () => boolean;
}): Promise<void> {
  const { env, outcome, log } = input;
  const proposeAgain = async (): Promise<string> => {
    const before = outcome.answers.length;
    await pursueIntent({
      ...input,
      client: env.client,
      intent: outcome.intent,
      shouldStop: input.pastDeadline,
    });
    return outcome.answers.slice(before).map(describeAnswer).join(', ') || 'no answer';
  };
  log(`${outcome.intent.intentId} proposed again: ${await proposeAgain()}; approving it as ${chaosApprover}`);
  for (let run = 1; run <= input.patience.maxProposals; run++) {
    await approveUntilFinal(input);
    const last = outcome.answers.at(-1);
    if (last?.kind !== 'result' || !shouldRetry(last) || input.pastDeadline()) return;
    await delay(input.patience.firstBackoffMs);
    log(`${outcome.intent.intentId} proposed again after ${describeAnswer(last)}: ${await proposeAgain()}`);
  }
}

/**
 * Approves each open round of a pending call (a round reopens when the order's balance moved
 * meanwhile) until the call is final, and records its final result as the agent's last answer.
 */
async function approveUntilFinal(input: {
  env: ChaosEnvironment;
  outcome: IntentOutcome;
  log: (line: string) => void;
  pastDeadline: () => boolean;
}): Promise<void> {
  const { env, outcome, log } = input;
  const { callId } = outcome;
  const giveUpAt = performance.now() + approvalTimeoutMs;
  const over = (): boolean => performance.now() > giveUpAt || input.pastDeadline();
  let final: ToolResult | undefined;
  let lastError = '';
  // The result by long poll, which needs no worker; asked again if the connection fails meanwhile.
  const waiting = (async () => {
    while (!over()) {
      try {
        final = (await env.client.result(callId, { wait: true })) ?? undefined;
        return;
      } catch (error) {
        lastError = firstLine(error);
        await delay(approvalPollMs);
      }
    }
  })();
  let rounds = 0;
  while (final === undefined && !over()) {
    try {
      const decision = await env.admin.decide({
        callId,
        approver: chaosApprover,
        privateKey: env.approverKey,
        decision: 'approve',
        reason: 'chaos suite: approved after the server restart',
      });
      // Refused with ALREADY_DECIDED while an approved round runs its checks again or executes.
      if (decision.accepted) rounds++;
    } catch (error) {
      // No worker answers the query for a moment, or the update met a failing workflow task: ask again.
      lastError = firstLine(error);
    }
    if (final === undefined) await Promise.race([delay(approvalPollMs), waiting]);
  }
  await waiting;
  if (final) {
    outcome.answers.push({ kind: 'result', receivedAtMs: Date.now(), result: final });
    log(`${outcome.intent.intentId}: ${final.code}/${final.effect} after ${rounds} approved round(s)`);
    return;
  }
  outcome.answers.push({
    kind: 'exception',
    receivedAtMs: Date.now(),
    message: `no final result after ${rounds} approved round(s)${lastError ? `; last error: ${lastError}` : ''}`,
  });
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 300);
}

/** How many of the armed fault switches the run consumed: the chaos bit only where they fired. */
async function faultsFired(input: {
  env: ChaosEnvironment;
  intents: readonly ChaosIntent[];
  callIdOf: (intent: ChaosIntent) => string;
}): Promise<Record<'lostResponses' | 'unavailable', { armed: number; fired: number }>> {
  const totals = { lostResponses: { armed: 0, fired: 0 }, unavailable: { armed: 0, fired: 0 } };
  for (const intent of input.intents) {
    if (intent.faults === 'none') continue;
    const armed = faultProfiles[intent.faults];
    // Arming nothing answers the switches as they are now.
    const left = await input.env.orders.api.setFaults({ idempotencyKey: input.callIdOf(intent) });
    totals.lostResponses.armed += armed.loseResponseAfterCommit;
    totals.lostResponses.fired += armed.loseResponseAfterCommit - left.loseResponseAfterCommit;
    totals.unavailable.armed += armed.unavailable;
    totals.unavailable.fired += armed.unavailable - left.unavailable;
  }
  return totals;
}

/** Each order's refunded total moved by exactly the refunds recorded on it. */
function ledgerFindings(input: {
  before: Order[];
  after: Order[];
  refunds: { orderId: string; amountCents: number }[];
}): string[] {
  return input.after.flatMap((order) => {
    const before = input.before.find((candidate) => candidate.orderId === order.orderId);
    const moved = order.refundedCents - (before?.refundedCents ?? 0);
    const recorded = input.refunds
      .filter((refund) => refund.orderId === order.orderId)
      .reduce((sum, refund) => sum + refund.amountCents, 0);
    return moved === recorded
      ? []
      : [
          `ledger: ${order.orderId} refunded ${moved} cents during the run, but its refunds add up to ${recorded}`,
        ];
  });
}

function finalOk(outcome: IntentOutcome): boolean {
  const last = outcome.answers.at(-1);
  return last?.kind === 'result' && last.result.ok;
}

function describeFaults(intents: readonly ChaosIntent[]): string {
  const counts = new Map<FaultProfileName, number>();
  for (const intent of intents) counts.set(intent.faults, (counts.get(intent.faults) ?? 0) + 1);
  return [...counts.entries()].map(([name, count]) => `${name} ${count}`).join(', ');
}

function describeAmounts(input: { intents: readonly ChaosIntent[]; orders: readonly Order[] }): string {
  return input.orders
    .map((order) => {
      const onOrder = input.intents.filter((intent) => intent.arguments.order_id === order.orderId);
      const cents = onOrder.reduce((sum, intent) => sum + intent.arguments.amount_cents, 0);
      return `${order.orderId} ${onOrder.length} refunds, ${cents} of ${order.refundableCents} ${order.currency} cents`;
    })
    .join('; ');
}

function tally(answers: readonly AgentAnswer[]): string {
  const counts = new Map<string, number>();
  for (const answer of answers) {
    const key = answer.kind === 'exception' ? 'exception' : `${answer.result.code}/${answer.result.effect}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([key, count]) => `${key} ${count}`)
    .join(', ');
}
