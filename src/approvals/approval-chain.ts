/**
 * Approval chains (docs/design.md, Approval: "a chain of groups in order"): which groups must approve a
 * call, in which order, with which quorum and window, chosen by a pure function of the policy, the
 * validated arguments and the call's context. The worker's evaluation resolves a call's chain once
 * and records it; the credential minter resolves it again from its own policy and checks the
 * decisions against it. Pure and sandbox-safe (the workflow applies the recorded chain).
 */
import { durationMs } from '../shared/durations';
import { ownValue } from '../shared/own-records';
import { riskRank } from '../tools/risk-levels';
import type { RiskLevel } from '../tools/risk-levels';
import type { CallContext } from '../calls/call-context';
import type { ApprovalPolicy, ApproverPolicy } from '../policy/policy-schema';
import type { AnyToolContract } from '../tools/define-tool';

/** One resolved step of a call's chain: the group whose turn it is, its quorum, window and approvers. */
export interface ChainStepRequirement {
  /** The group, routed (`finance-eu`). */
  group: string;
  quorum: number;
  windowMs: number;
  /** The group's approvers who may decide this call: granted its level, not operating its caller. */
  members: string[];
}

/** What a call's chain resolves to: its steps, or why nobody could complete it. */
export type ChainResolution =
  { ok: true; steps: ChainStepRequirement[] } | { ok: false; reason: string } | undefined;

/** What a chain step's group and condition are resolved from: the call, as validated, and its context. */
export interface ChainInput {
  approval: ApprovalPolicy | undefined;
  level: RiskLevel;
  caller: string;
  approvers: Readonly<Record<string, Pick<ApproverPolicy, 'maxLevel' | 'operates' | 'groups'>>>;
  context: CallContext;
  /** The tool's amount of these arguments (`amount`), when it declares one. */
  amount: number | undefined;
  /** The tool's `approvalRoute` of these arguments, when it declares one. */
  route: Readonly<Record<string, string>> | undefined;
  /** The level's window: a step that names none waits this long. */
  levelWindowMs: number;
}

/**
 * The chain a call of `level` must pass, or undefined when its level has none (a quorum of any
 * approvers applies). A step whose `when` does not hold is left out; a group is routed from the
 * context and the route; a step is refused (`ok: false`) when its group cannot be routed (the context
 * lacks the field) or has fewer eligible approvers than its quorum, so no call waits for a turn
 * nobody can take.
 */
export function resolveChain(input: ChainInput): ChainResolution {
  const written = input.approval?.chains?.[input.level];
  if (!written) return undefined;
  const steps: ChainStepRequirement[] = [];
  for (const [index, step] of written.entries()) {
    const when = step.when;
    if (when) {
      // A tool that declares no amount cannot show it is at or below the bar: the step applies.
      if (when.amountAbove !== undefined && input.amount !== undefined && input.amount <= when.amountAbove)
        continue;
      if (when.tenant !== undefined && input.context.tenant !== when.tenant) continue;
      if (when.channel !== undefined && input.context.channel !== when.channel) continue;
    }
    const routed = routeGroup({ group: step.group, context: input.context, route: input.route });
    if (!routed.ok) return { ok: false, reason: `step ${index + 1} of the chain: ${routed.reason}` };
    const quorum = step.quorum ?? 1;
    const members = groupMembers({ ...input, group: routed.group });
    if (members.length < quorum) {
      return {
        ok: false,
        reason:
          `step ${index + 1} of the chain needs ${quorum} approver(s) of group "${routed.group}" granted ` +
          `"${input.level}" who do not operate ${input.caller}; the policy has ${members.length}`,
      };
    }
    steps.push({
      group: routed.group,
      quorum,
      windowMs: step.window !== undefined ? durationMs(step.window) : input.levelWindowMs,
      members,
    });
  }
  // Every step's condition left it out: the level's quorum of any approvers applies.
  return steps.length ? { ok: true, steps } : undefined;
}

/** The approvers of `group` who may decide a call of `level`: granted it, not operating `caller`; sorted. */
export function groupMembers(input: {
  approvers: ChainInput['approvers'];
  group: string;
  level: RiskLevel;
  caller: string;
}): string[] {
  return Object.keys(input.approvers)
    .filter((name) => {
      const approver = input.approvers[name]!;
      return (
        (approver.groups ?? []).includes(input.group) &&
        riskRank(approver.maxLevel) >= riskRank(input.level) &&
        !approver.operates.includes(input.caller)
      );
    })
    .sort();
}

const placeholder = /\{([^{}]+)\}/g;

/** A step's group with its placeholders filled from the context and the route, or what is missing. */
export function routeGroup(input: {
  group: string;
  context: CallContext;
  route: Readonly<Record<string, string>> | undefined;
}): { ok: true; group: string } | { ok: false; reason: string } {
  let missing: string | undefined;
  const group = input.group.replace(placeholder, (_whole, name: string) => {
    const value = placeholderValue({ name, context: input.context, route: input.route });
    // Letters, digits and "_" only: a routed value never picks a longer group (`eu-juniors`).
    if (value === undefined || !/^[a-zA-Z0-9_]+$/.test(value)) {
      missing ??= name;
      return '';
    }
    return value;
  });
  if (missing !== undefined) {
    return {
      ok: false,
      reason:
        `group "${input.group}" is routed by {${missing}}, which this call does not give as a group name ` +
        '(letters, digits, "_"): the harness must attach it to the context, or the tool route it',
    };
  }
  return { ok: true, group };
}

function placeholderValue(input: {
  name: string;
  context: CallContext;
  route: Readonly<Record<string, string>> | undefined;
}): string | undefined {
  const { name, context, route } = input;
  if (name === 'tenant' || name === 'channel' || name === 'onBehalfOf') return context[name];
  if (name.startsWith('claims.')) return ownValue(context.claims, name.slice('claims.'.length));
  if (name.startsWith('route.')) return ownValue(route, name.slice('route.'.length));
  return undefined;
}

/** The chain in words, for approvers: `support-lead (1), then finance (2)`. */
export function chainInWords(steps: readonly ChainStepRequirement[]): string {
  return steps.map((step) => `${step.group} (${step.quorum})`).join(', then ');
}

/** How many approvals `steps` ask in all: a chain's quorum is the sum of its steps'. */
export function chainQuorum(steps: readonly Pick<ChainStepRequirement, 'quorum'>[]): number {
  return steps.reduce((sum, step) => sum + step.quorum, 0);
}

/** The step (from 0) the `index`-th approval of a round counts for, or undefined past the chain's end. */
export function stepOfApproval(input: {
  steps: readonly Pick<ChainStepRequirement, 'quorum'>[];
  index: number;
}): number | undefined {
  let before = 0;
  for (const [step, { quorum }] of input.steps.entries()) {
    if (input.index < before + quorum) return step;
    before += quorum;
  }
  return undefined;
}

/**
 * Which step each of a round's approvals counts for, in the order they were accepted: the first
 * `quorum` approvals for step 1, the next for step 2, and so on. Each must come from a member of its
 * step's group; undefined when they all do, otherwise the first that does not, and why.
 */
export function chainMismatch(input: {
  steps: readonly ChainStepRequirement[];
  approvers: readonly string[];
}): string | undefined {
  let step = 0;
  let counted = 0;
  for (const approver of input.approvers) {
    const current = input.steps[step];
    if (!current) return `${approver} approved after the chain was complete`;
    if (!current.members.includes(approver)) {
      return `${approver} approved for step ${step + 1}, which is group "${current.group}"'s turn`;
    }
    counted++;
    if (counted === current.quorum) {
      step++;
      counted = 0;
    }
  }
  if (step < input.steps.length) {
    const current = input.steps[step]!;
    return `step ${step + 1} (group "${current.group}") has ${counted} of ${current.quorum} approval(s)`;
  }
  return undefined;
}

/**
 * The chain of one evaluated call: its level's chain in the caller's policy (as it applies in the
 * call's context), routed by the context and the tool's `approvalRoute`. What the evaluation records
 * and what the minter recomputes; a route function that throws routes nothing (`ok: false`).
 */
export function chainOfCall(input: {
  contract: Pick<AnyToolContract, 'amount' | 'approvalRoute'>;
  args: Record<string, unknown>;
  context: CallContext;
  approval: ApprovalPolicy | undefined;
  level: RiskLevel;
  caller: string;
  approvers: ChainInput['approvers'];
  levelWindowMs: number;
}): ChainResolution {
  const { contract, args, context } = input;
  if (!input.approval?.chains?.[input.level]) return undefined;
  let route: Record<string, string> | undefined;
  try {
    route = contract.approvalRoute?.(args, context);
  } catch (error) {
    return {
      ok: false,
      reason: `the tool's approvalRoute failed: ${(error as Error)?.message ?? String(error)}`,
    };
  }
  return resolveChain({
    approval: input.approval,
    level: input.level,
    caller: input.caller,
    approvers: input.approvers,
    context,
    amount: contract.amount?.(args),
    route,
    levelWindowMs: input.levelWindowMs,
  });
}
