// The agent side of a chaos run: what a harness around an LLM does with toolgate's client. It
// proposes each intent's refund, and when the client throws or the answer is UPSTREAM_UNAVAILABLE
// ("do not retry now"), it waits and proposes the very same call again (same intent, same raw
// arguments), a bounded number of times. It never changes the proposal, so a retry can only join,
// replay or re-run the same call id.
import { setTimeout as delay } from 'node:timers/promises';
import type { CallInput, ToolGateClient, ToolResult } from 'toolgate';
import type { ChaosIntent, Random } from './chaos-plan';
import type { AgentAnswer, IntentOutcome } from './chaos-verdict';

/** How persistent the agent is. */
export interface AgentPatience {
  /** Proposals per intent, the first included. */
  maxProposals: number;
  /** No new proposal of an intent after this long since its first. */
  maxPursuitMs: number;
  /** A proposal that has not answered by then counts as an exception (the call goes on; a retry joins it). */
  proposalTimeoutMs: number;
  /** Backoff before retry n (1-based): `firstBackoffMs * 2^(n-1)`, at most `maxBackoffMs`, plus jitter. */
  firstBackoffMs: number;
  maxBackoffMs: number;
}

/**
 * The patience of the chaos suite's agent: enough to outlast a Temporal server restart, and a call
 * whose workflow task keeps landing on killed workers (the server refuses updates while that task
 * retries: "Workflow Task in failed state", which the client throws).
 */
export const defaultAgentPatience: AgentPatience = {
  maxProposals: 30,
  maxPursuitMs: 300_000,
  proposalTimeoutMs: 120_000,
  firstBackoffMs: 1_000,
  maxBackoffMs: 10_000,
};

/** The raw arguments as the model wrote them: one fixed text per intent, sent unchanged on every retry. */
export function rawArgumentsOf(intent: ChaosIntent): string {
  return JSON.stringify(intent.arguments);
}

/** The proposal of an intent in a session; its call id does not depend on the session (the intent id keys it). */
export function proposalOf(input: { intent: ChaosIntent; session: string }): CallInput {
  return {
    session: input.session,
    caller: input.intent.caller,
    tool: 'refund_order',
    arguments: rawArgumentsOf(input.intent),
    intentId: input.intent.intentId,
  };
}

/**
 * How many proposals the agent made in each session: a session's steps in the store can be no more
 * (a worker killed between the admission's commit and its task's completion must not charge twice).
 */
export const proposalsBySession = new Map<string, number>();
/** How many of them were answered with a result: each of those was a step. */
export const resultsBySession = new Map<string, number>();

/** One proposal of an intent, as the agent records it: a result, or the client's exception. */
export async function proposeOnce(input: {
  client: ToolGateClient;
  intent: ChaosIntent;
  session: string;
  timeoutMs: number;
}): Promise<AgentAnswer> {
  proposalsBySession.set(input.session, (proposalsBySession.get(input.session) ?? 0) + 1);
  const call = input.client.call(proposalOf(input));
  // A proposal abandoned at the timeout may still answer or fail later: nobody listens any more.
  call.catch(() => undefined);
  const timer = new AbortController();
  const timedOut = delay(input.timeoutMs, undefined, { signal: timer.signal }).then(
    () => {
      throw new Error(`no answer within ${input.timeoutMs / 1000} s`);
    },
    () => undefined as never,
  );
  try {
    const result: ToolResult = await Promise.race([call, timedOut]);
    resultsBySession.set(input.session, (resultsBySession.get(input.session) ?? 0) + 1);
    return { kind: 'result', receivedAtMs: Date.now(), result };
  } catch (error) {
    return { kind: 'exception', receivedAtMs: Date.now(), message: messageOf(error) };
  } finally {
    timer.abort();
  }
}

/**
 * Pursues one intent until it gets an answer the agent would not retry, its patience runs out, or
 * `shouldStop` says the run is over. Answers are appended to `outcome` when given (an intent pursued
 * again later), else to a new outcome.
 */
export async function pursueIntent(input: {
  client: ToolGateClient;
  intent: ChaosIntent;
  session: string;
  patience: AgentPatience;
  random: Random;
  outcome?: IntentOutcome;
  shouldStop?: () => boolean;
}): Promise<IntentOutcome> {
  const { client, intent, session, patience } = input;
  const outcome: IntentOutcome = input.outcome ?? {
    intent,
    callId: client.callIdOf(proposalOf({ intent, session })),
    answers: [],
  };
  const giveUpAt = performance.now() + patience.maxPursuitMs;
  for (let proposal = 1; proposal <= patience.maxProposals; proposal++) {
    if (proposal > 1) {
      const backoff = Math.min(patience.maxBackoffMs, patience.firstBackoffMs * 2 ** (proposal - 2));
      await delay(backoff + input.random() * 500);
      if (performance.now() > giveUpAt) break;
    }
    if (input.shouldStop?.()) break;
    const answer = await proposeOnce({ client, intent, session, timeoutMs: patience.proposalTimeoutMs });
    outcome.answers.push(answer);
    if (!shouldRetry(answer)) break;
  }
  return outcome;
}

/** An agent retries what toolgate says is worth retrying later, and a client that failed to answer. */
export function shouldRetry(answer: AgentAnswer): boolean {
  return answer.kind === 'exception' || answer.result.code === 'UPSTREAM_UNAVAILABLE';
}

/**
 * Runs intents with `lanes` conversations at a time (one session each, its intents one after the
 * other, as one agent would), calling `onSettled` as each intent settles.
 */
export async function runAgentLanes(input: {
  client: ToolGateClient;
  intents: readonly ChaosIntent[];
  lanes: number;
  sessionPrefix: string;
  patience: AgentPatience;
  random: Random;
  onSettled: (outcome: IntentOutcome) => void;
  /** Once true, no new proposal is made; intents not yet proposed settle with no answer. */
  shouldStop?: () => boolean;
}): Promise<IntentOutcome[]> {
  const queue = [...input.intents];
  const outcomes: IntentOutcome[] = [];
  const lane = async (number: number): Promise<void> => {
    const session = `${input.sessionPrefix}-${number}`;
    for (let intent = queue.shift(); intent !== undefined; intent = queue.shift()) {
      const outcome = await pursueIntent({ ...input, intent, session });
      outcomes.push(outcome);
      input.onSettled(outcome);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, input.lanes) }, (_unused, number) => lane(number + 1)));
  return outcomes.sort((a, b) => a.intent.index - b.intent.index);
}

/** A one-line description of an answer, for progress lines and findings. */
export function describeAnswer(answer: AgentAnswer): string {
  if (answer.kind === 'exception') return `exception (${answer.message.slice(0, 160)})`;
  const { result } = answer;
  return `${result.code}/${result.effect}${result.replayed ? '/replayed' : ''}`;
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return `${error.name}: ${error.message}${detail}`.split('\n')[0]!;
}
