// The chaos suite's verdict: what the agent was told, judged against the orders service's own
// records (the backend's truth), never against toolgate's view of itself. Pure: no I/O.
//
//   applied      intents with exactly one refund under their key that matches what was asked.
//   duplicates   intents with more than one refund under their key, plus refunds that belong to no
//                intent as asked (another key, or a refund under an intent's key with other
//                parameters): a second effect, whatever its key.
//   lost         intents with no matching refund (every planned refund fits its order, so every one
//                should apply), and intents the agent never got a final `OK` for (it gave up after
//                its retries, or its last answer was a rejection it must not retry).
//   misreported  intents for which some answer the agent received contradicts the backend:
//                - effect `applied` (or `ok: true`), but no matching refund exists;
//                - effect `none`, but a refund under the key was committed before that answer
//                  arrived (a later refund comes from a later proposal the agent made, which is fine);
//                - the agent's final answer says `none` while a refund exists at the end;
//                - `ok: true` with an effect other than `applied` (a write that succeeded changed the world).
//                `unknown` is never counted: it claims nothing. The run that answers it has failed, so
//                the agent's retry runs again and resolves it; an intent whose final answer is
//                `unknown` is unresolved, hence lost.
// One intent may count in several columns (told OK with no refund is both lost and misreported).

import type { ToolResult } from 'toolgate';
import type { Refund } from '../../examples/orders/orders-api-client';
import type { ChaosIntent } from './chaos-plan';

/** One thing the agent got back from one proposal: a result, or an exception from the client. */
export type AgentAnswer =
  | { kind: 'result'; receivedAtMs: number; result: ToolResult }
  | { kind: 'exception'; receivedAtMs: number; message: string };

/** An intent, its call id, and everything the agent was told about it, in order. */
export interface IntentOutcome {
  intent: ChaosIntent;
  callId: string;
  answers: AgentAnswer[];
}

/** The four counts of the final line, and one line per finding that explains them. */
export interface ChaosVerdict {
  intents: number;
  applied: number;
  duplicates: number;
  lost: number;
  misreported: number;
  findings: string[];
}

/** Judges a run; the suite passes only when `applied === intents` and the other three counts are 0. */
export function judgeChaosRun(input: {
  outcomes: readonly IntentOutcome[];
  refunds: readonly Refund[];
}): ChaosVerdict {
  const findings: string[] = [];
  const refundsByKey = new Map<string, Refund[]>();
  for (const refund of input.refunds) {
    refundsByKey.set(refund.idempotencyKey, [...(refundsByKey.get(refund.idempotencyKey) ?? []), refund]);
  }
  const intentKeys = new Set(input.outcomes.map((outcome) => outcome.callId));
  let duplicates = 0;
  for (const refund of input.refunds) {
    if (intentKeys.has(refund.idempotencyKey)) continue;
    duplicates++;
    findings.push(
      `duplicate: refund ${refund.refundId} (${refund.amountCents} ${refund.currency} cents on ${refund.orderId}, ` +
        `key ${refund.idempotencyKey}) belongs to no intent`,
    );
  }

  let applied = 0;
  let lost = 0;
  let misreported = 0;
  for (const outcome of input.outcomes) {
    const { intent, callId } = outcome;
    const name = `${intent.intentId} (${callId})`;
    const underKey = refundsByKey.get(callId) ?? [];
    const matching = underKey.filter((refund) => matchesIntent({ refund, intent }));
    for (const stray of underKey.filter((refund) => !matching.includes(refund))) {
      duplicates++;
      findings.push(
        `duplicate: refund ${stray.refundId} under ${name}'s key is ${stray.amountCents} ${stray.currency} cents on ` +
          `${stray.orderId}, not the ${intent.arguments.amount_cents} ${intent.arguments.currency} cents on ` +
          `${intent.arguments.order_id} asked`,
      );
    }
    if (matching.length === 1) applied++;
    if (matching.length > 1) {
      duplicates++;
      findings.push(`duplicate: ${name} has ${matching.length} refunds under its key`);
    }

    const results = outcome.answers.flatMap((answer) => (answer.kind === 'result' ? [answer] : []));
    const final = outcome.answers.at(-1);
    const finalResult = final?.kind === 'result' ? final.result : undefined;
    if (matching.length === 0) {
      lost++;
      findings.push(`lost: ${name} has no refund at the orders service; ${describeAnswers(outcome)}`);
    } else if (finalResult?.ok !== true) {
      lost++;
      findings.push(`lost: ${name} was never resolved for the agent; ${describeAnswers(outcome)}`);
    }

    const contradictions: string[] = [];
    for (const { receivedAtMs, result } of results) {
      const when = new Date(receivedAtMs).toISOString();
      if ((result.effect === 'applied' || result.ok) && matching.length === 0) {
        contradictions.push(`${result.code} (effect ${result.effect}) at ${when}, but no refund exists`);
      }
      if (result.ok && result.effect !== 'applied') {
        contradictions.push(`${result.code} with ok true and effect ${result.effect} at ${when}`);
      }
      const earlier = underKey.find((refund) => Date.parse(refund.createdAt) < receivedAtMs);
      if (result.effect === 'none' && earlier) {
        contradictions.push(
          `${result.code} (effect none) at ${when}, but refund ${earlier.refundId} was committed at ${earlier.createdAt}`,
        );
      }
    }
    if (finalResult?.effect === 'none' && underKey.length > 0) {
      contradictions.push(`the final answer ${finalResult.code} says effect none, but a refund exists`);
    }
    if (contradictions.length > 0) {
      misreported++;
      findings.push(`misreported: ${name}: ${[...new Set(contradictions)].join('; ')}`);
    }
  }
  return { intents: input.outcomes.length, applied, duplicates, lost, misreported, findings };
}

/** The final line of a chaos run. */
export function verdictLine(verdict: ChaosVerdict): string {
  return (
    `intents ${verdict.intents}, applied ${verdict.applied}, duplicates ${verdict.duplicates}, ` +
    `lost ${verdict.lost}, misreported ${verdict.misreported}`
  );
}

/** True when every intent applied exactly once and nothing was duplicated, lost or misreported. */
export function verdictPassed(verdict: ChaosVerdict): boolean {
  return (
    verdict.applied === verdict.intents &&
    verdict.duplicates === 0 &&
    verdict.lost === 0 &&
    verdict.misreported === 0
  );
}

function matchesIntent(input: { refund: Refund; intent: ChaosIntent }): boolean {
  const { refund, intent } = input;
  return (
    refund.orderId === intent.arguments.order_id &&
    refund.amountCents === intent.arguments.amount_cents &&
    refund.currency === intent.arguments.currency
  );
}

function describeAnswers(outcome: IntentOutcome): string {
  if (outcome.answers.length === 0) return 'the agent got no answer';
  const answers = outcome.answers.map((answer) =>
    answer.kind === 'result'
      ? `${answer.result.code}/${answer.result.effect}${answer.result.replayed ? '/replayed' : ''}`
      : `exception (${answer.message.slice(0, 120)})`,
  );
  return `answers: ${answers.join(', ')}; faults ${outcome.intent.faults}`;
}
