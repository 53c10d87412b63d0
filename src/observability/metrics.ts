// toolgate's Prometheus metrics: counted in the worker process where each outcome is audited (never
// in workflow code), so a record counts once: when the audit store writes it, not when it is sent again.
import type { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { Counter, Histogram, Registry } from 'prom-client';
import type { AuditRecord, AuditStore } from '../audit/audit-store';
import { approvalOutcomeOf } from '../reporting/approval-outcome';

/** The label every tool name the worker does not know is counted under, so the model cannot grow the series. */
export const unknownToolLabel = '_unknown';

/** The channel label of a call whose context names no channel. */
export const noChannelLabel = '_none';
/** The channel label of a call in a channel the worker was not told of, so a harness cannot grow the series. */
export const otherChannelLabel = '_other';
/** The channels every deployment labels by: the ones toolgate's docs and examples use. */
export const standardChannels: readonly string[] = ['end-user-chat', 'internal-console'];

/** Buckets of the time to an approval's decision, in seconds: from a minute to three days. */
const decisionBuckets = [5, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 72 * 3600];

/** toolgate's metrics in one prom-client registry (its own, never the global one). */
export interface ToolGateMetrics {
  readonly registry: Registry;
  /** Counts one final audit record, written for the first time (a call's run, or a session refusal). */
  recorded(record: AuditRecord): void;
  /** A session opened its circuit breaker for a tool. */
  circuitOpened(input: { tool: string }): void;
  /** A write whose response was lost was found applied by the backend's record (no second effect). */
  recoveredAfterLostResponse(input: { tool: string }): void;
  /** A proposal was answered with a call's recorded result (`replayed: true`): nothing ran again. */
  replayed(input: { tool: string }): void;
}

/**
 * Creates toolgate's metrics (see docs/audit-and-observability.md, "Metrics" for names and labels). `knownTools`:
 * the tool names to label by; any other name (the model invents some) is counted as `_unknown`.
 * `knownChannels`: the context channels to label by, besides `standardChannels`; any other is counted
 * as `_other`, none as `_none`. End users and tenants are never labels (unbounded).
 */
export function createToolGateMetrics(
  input: { knownTools?: Iterable<string>; knownChannels?: Iterable<string> } = {},
): ToolGateMetrics {
  const registry = new Registry();
  const known = input.knownTools ? new Set(input.knownTools) : undefined;
  const toolLabel = (tool: string): string => (!known || known.has(tool) ? tool : unknownToolLabel);
  const channels = new Set([...standardChannels, ...(input.knownChannels ?? [])]);
  const channelLabel = (channel: unknown): string =>
    typeof channel !== 'string' ? noChannelLabel : channels.has(channel) ? channel : otherChannelLabel;
  const calls = new Counter({
    name: 'toolgate_calls_total',
    help: 'Calls that finished (one per run of a call, with its audit record), by tool, code and effect.',
    labelNames: ['tool', 'code', 'effect'] as const,
    registers: [registry],
  });
  const byChannel = new Counter({
    name: 'toolgate_calls_by_channel_total',
    help: 'Calls that finished, by the channel of the context they acted in (_none: no channel) and code.',
    labelNames: ['channel', 'code'] as const,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'toolgate_session_refusals_total',
    help: 'Proposals refused at session admission (step 0), by code; nothing ran for them.',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const replays = new Counter({
    name: 'toolgate_replays_total',
    help: "Proposals answered with a call's recorded result (replayed: true), by tool; nothing ran again.",
    labelNames: ['tool'] as const,
    registers: [registry],
  });
  const recovered = new Counter({
    name: 'toolgate_recovered_after_lost_response_total',
    help: "Writes whose response was lost and that the backend's record showed applied, by tool.",
    labelNames: ['tool'] as const,
    registers: [registry],
  });
  const approvals = new Counter({
    name: 'toolgate_approval_outcomes_total',
    help: 'Approvals that ended, by tool and outcome (approved, denied, expired).',
    labelNames: ['tool', 'outcome'] as const,
    registers: [registry],
  });
  const timeToDecision = new Histogram({
    name: 'toolgate_approval_decision_seconds',
    help: "Seconds from a call's start to the decision that ended its approval (or its expiry), by tool and outcome.",
    labelNames: ['tool', 'outcome'] as const,
    buckets: decisionBuckets,
    registers: [registry],
  });
  const circuits = new Counter({
    name: 'toolgate_circuit_openings_total',
    help: 'Circuit breakers a session opened for a tool (consecutive failures of one code).',
    labelNames: ['tool'] as const,
    registers: [registry],
  });
  return {
    registry,
    recorded: (record) => {
      if (isAdmissionRefusal(record)) {
        refusals.inc({ code: record.code });
        return;
      }
      // A call run refused at its own first step (the session's admission) is a call and a refusal.
      if (admissionCodes.has(record.code)) refusals.inc({ code: record.code });
      const tool = toolLabel(record.tool);
      calls.inc({ tool, code: record.code, effect: record.effect });
      byChannel.inc({ channel: channelLabel(record.context?.channel), code: record.code });
      const approval = approvalOutcomeOf(record);
      if (approval) {
        approvals.inc({ tool, outcome: approval.outcome });
        // Time to a human's decision: a standing grant asked nobody.
        if (approval.outcome !== 'granted') {
          timeToDecision.observe({ tool, outcome: approval.outcome }, approval.seconds);
        }
      }
    },
    circuitOpened: ({ tool }) => circuits.inc({ tool: toolLabel(tool) }),
    recoveredAfterLostResponse: ({ tool }) => recovered.inc({ tool: toolLabel(tool) }),
    replayed: ({ tool }) => replays.inc({ tool: toolLabel(tool) }),
  };
}

/** The codes only a session's admission answers (step 0). */
const admissionCodes: ReadonlySet<string> = new Set([
  'UNAUTHENTICATED_CALLER',
  'CONTEXT_INVALID',
  'CONTEXT_MISMATCH',
  'SESSION_CLOSED',
  'STEP_LIMIT',
  'LOOP_DETECTED',
  'CIRCUIT_OPEN',
]);

/** A refusal's record with no run of its call (a replay's admission: see `admissionRefusalRecord`). */
function isAdmissionRefusal(record: AuditRecord): boolean {
  return record.runId.startsWith('admission:');
}

/**
 * The audit store with every first write of a record counted: the store keys records by call and run
 * (a refusal by proposal), so an activity retried, a sink called again or another worker writing the
 * same record counts once. Works whether the store answers at once or with a promise.
 */
export function countingAuditStore(store: AuditStore, metrics: ToolGateMetrics): AuditStore {
  const append = (record: AuditRecord): unknown => {
    const appended: unknown = store.append(record);
    const count = (isNew: unknown): unknown => {
      if (isNew === true) metrics.recorded(record);
      return isNew;
    };
    return appended instanceof Promise ? appended.then(count) : count(appended);
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') return append;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Counts what only an activity's answer shows: a lost write's effect found applied by the backend
 * (`findAppliedEffect` answering `applied`). Counted when the answer is returned, once per completed
 * attempt.
 */
export function metricsActivityInterceptor(metrics: ToolGateMetrics): ActivityInterceptorsFactory {
  return (context: Context) => ({
    inbound: {
      async execute(input, next) {
        const output = await next(input);
        if (context.info.activityType === 'findAppliedEffect' && isApplied(output)) {
          const tool = (input.args[0] as { tool?: unknown } | undefined)?.tool;
          if (typeof tool === 'string') metrics.recoveredAfterLostResponse({ tool });
        }
        return output;
      },
    },
  });
}

function isApplied(output: unknown): boolean {
  return (
    typeof output === 'object' && output !== null && (output as { status?: unknown }).status === 'applied'
  );
}
