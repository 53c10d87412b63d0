import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { readPublicKeyHex } from '../keys/key-files';
import type { RiskLevel } from '../tools/risk-levels';
import { riskRank } from '../tools/risk-levels';
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import { defaultApprovalWindowMs, durationMs } from '../shared/durations';
import { nameRecord, ownValue } from '../shared/own-records';
import { unwrap } from '../tools/define-tool';
import type { ToolRegistry } from '../tools/tool-registry';
import { defaultMaxApprovalWindow, maxApprovalWindowMs } from '../approvals/approval-window';
import { groupMembers } from '../approvals/approval-chain';
import type { ApplicableQuota } from '../quotas/protocol';
import type { CallerPolicy, PolicyFile, Quota } from './policy-schema';
import { policyFileSchema } from './policy-schema';

/** Something an operator configured is wrong; the message names the file, the field and the fix. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

/** An approver as the workflow checks decisions: the raw public key and the grants. */
export interface ApproverView {
  publicKeyHex: string;
  maxLevel: RiskLevel;
  operates: string[];
}

/** The slice of the policy one call needs, recorded in its history by a local activity. */
export interface CallerPolicySnapshot {
  version: string;
  callerPolicy: CallerPolicy | null;
  /** The caller's public key (raw hex); proposals must verify with it. */
  callerKeyHex: string | null;
  /** Every approver; the workflow decides who may approve this call. */
  approvers: Record<string, ApproverView>;
  /** Every operator's public key (raw hex) by name: enrolled keys' invites verify with them. */
  operators: Record<string, string>;
}

/** A policy as workers hold it: the file's content, its version label, its digest and the keys it names. */
export interface LoadedPolicy {
  readonly source: string;
  readonly version: string;
  readonly digest: string;
  readonly file: PolicyFile;
  /** Every operator's public key (raw hex) by name; a record without a prototype. */
  readonly operators: Readonly<Record<string, string>>;
  /** Every approver by name; a record without a prototype. */
  readonly approvers: Readonly<Record<string, ApproverView>>;
  callerPolicy(caller: string): CallerPolicy | null;
  /** The limits across sessions that count `caller`'s calls of `tool`: the deployment's, then the caller's. */
  quotasFor(input: { caller: string; tool: string }): ApplicableQuota[];
  /** The snapshot a call of this caller records. */
  snapshotFor(caller: string): CallerPolicySnapshot;
}

/** Reads and checks a policy file; a bad file throws a `ConfigurationError` that says what to fix. */
export function loadPolicyFile(input: {
  path: string;
  registry: ToolRegistry;
  /** Where relative key files are (default: the policy file's folder). */
  keysDirectory?: string;
}): LoadedPolicy {
  let text: string;
  try {
    text = readFileSync(input.path, 'utf8');
  } catch (error) {
    throw new ConfigurationError(
      `policy file ${input.path}: cannot be read (${(error as Error).message}); check the path you configured`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigurationError(`policy file ${input.path}: not valid JSON (${(error as Error).message})`);
  }
  return checkPolicy({
    source: input.path,
    value: json,
    registry: input.registry,
    keysDirectory: input.keysDirectory ?? dirname(resolve(input.path)),
  });
}

/** Checks a policy value against the schema and the registry; the source names it in errors. */
export function checkPolicy(input: {
  source: string;
  value: unknown;
  registry: ToolRegistry;
  keysDirectory?: string;
}): LoadedPolicy {
  const parsed = policyFileSchema.safeParse(input.value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(top level)'}: ${issue.message}`,
    );
    throw new ConfigurationError(`policy file ${input.source}: ${problems.join('; ')}`);
  }
  const file = parsed.data;
  const problems: string[] = [];
  const known = input.registry.names;
  for (const [caller, policy] of Object.entries(file.callers)) {
    policy.tools.forEach((tool, index) => {
      if (!input.registry.get(tool)) {
        problems.push(
          `callers.${caller}.tools.${index}: unknown tool "${tool}"; known tools: ${known.join(', ')}`,
        );
      }
    });
    for (const [tool, fields] of Object.entries(policy.limits ?? {})) {
      const contract = input.registry.get(tool);
      if (!contract) {
        problems.push(`callers.${caller}.limits.${tool}: unknown tool; known tools: ${known.join(', ')}`);
        continue;
      }
      const shape = contract.input.shape as Record<string, z.ZodType>;
      for (const field of Object.keys(fields)) {
        const schema = shape[field];
        if (!schema || !(unwrap(schema) instanceof z.ZodNumber)) {
          const numeric = Object.keys(shape).filter(
            (key) => unwrap(shape[key] as z.ZodType) instanceof z.ZodNumber,
          );
          problems.push(
            `callers.${caller}.limits.${tool}.${field}: not a numeric input field of ${tool}; ` +
              `numeric fields: ${numeric.join(', ') || 'none'}`,
          );
        }
      }
    }
  }
  for (const tool of Object.keys(file.tools ?? {})) {
    if (!input.registry.get(tool))
      problems.push(`tools.${tool}: unknown tool; known tools: ${known.join(', ')}`);
  }
  problems.push(...windowsBeyondMaximum(file), ...chainProblems(file));
  const quotaProblems = (field: string, quotas: readonly Quota[] | undefined, tools?: readonly string[]) => {
    // One counter per scope, tool and window length: two limits on it would share one count.
    const counters = new Map<string, number>();
    (quotas ?? []).forEach((quota, index) => {
      const contract = input.registry.get(quota.tool);
      const at = `${field}.${index}`;
      const counter = `${quota.tool}\u0000${durationMs(quota.window)}`;
      const earlier = counters.get(counter);
      if (earlier !== undefined) {
        problems.push(
          `${at}: ${quota.tool} has a limit over the same window at ${field}.${earlier}; ` +
            'give one entry both maxCalls and maxAmount',
        );
      }
      counters.set(counter, index);
      if (!contract) {
        problems.push(`${at}.tool: unknown tool "${quota.tool}"; known tools: ${known.join(', ')}`);
        return;
      }
      if (tools && !tools.includes(quota.tool)) {
        problems.push(`${at}.tool: "${quota.tool}" is not among this caller's tools`);
      }
      if (quota.maxAmount !== undefined && typeof (contract as { amount?: unknown }).amount !== 'function') {
        problems.push(
          `${at}.maxAmount: ${quota.tool} declares no amount function in its contract, so nothing can be counted; ` +
            'declare `amount: (args) => ...` in the tool, or limit maxCalls only',
        );
      }
    });
  };
  quotaProblems('quotas', file.quotas);
  for (const [caller, policy] of Object.entries(file.callers)) {
    quotaProblems(`callers.${caller}.quotas`, policy.quotas, policy.tools);
  }
  const keyOf = (field: string, reference: string, fix: string): string => {
    const inline = /^ed25519:([0-9a-f]{64})$/i.exec(reference);
    if (inline?.[1]) return inline[1].toLowerCase();
    const path = isAbsolute(reference) ? reference : resolve(input.keysDirectory ?? '.', reference);
    try {
      return readPublicKeyHex(path);
    } catch (error) {
      problems.push(
        `${field}: cannot read an Ed25519 public key from ${path} (${(error as Error).message}); ${fix}`,
      );
      return '';
    }
  };
  // Keyed by names from outside (a harness names the caller, a decision its approver): no prototype.
  const callerKeys = nameRecord<string>();
  for (const [caller, policy] of Object.entries(file.callers)) {
    callerKeys[caller] = keyOf(
      `callers.${caller}.publicKey`,
      policy.publicKey,
      `run "toolgate keys generate --caller ${caller}"`,
    );
  }
  const approvers = nameRecord<ApproverView>();
  for (const [name, approver] of Object.entries(file.approvers)) {
    approvers[name] = {
      publicKeyHex: keyOf(
        `approvers.${name}.publicKey`,
        approver.publicKey,
        `run "toolgate keys generate --approver ${name}"`,
      ),
      maxLevel: approver.maxLevel,
      operates: approver.operates,
    };
    approver.operates.forEach((caller, index) => {
      if (!ownValue(file.callers, caller))
        problems.push(`approvers.${name}.operates.${index}: unknown caller "${caller}"`);
    });
  }
  const operators = nameRecord<string>();
  for (const [name, operator] of Object.entries(file.operators)) {
    operators[name] = keyOf(
      `operators.${name}.publicKey`,
      operator.publicKey,
      `run "toolgate keys generate --operator ${name}"`,
    );
  }
  if (problems.length) throw new ConfigurationError(`policy file ${input.source}: ${problems.join('; ')}`);
  // The digest covers the keys too: rotating a key is a new policy version.
  const digest = sha256Hex(canonicalJson({ file, callerKeys, approvers, operators }));
  const version = `${file.version ?? 'unversioned'}@${digest.slice(0, 12)}`;
  return {
    source: input.source,
    version,
    digest,
    file,
    operators,
    approvers,
    callerPolicy: (caller) => ownValue(file.callers, caller) ?? null,
    quotasFor: ({ caller, tool }) => {
      const applicable = (scope: ApplicableQuota['scope'], quotas: readonly Quota[] | undefined) =>
        (quotas ?? [])
          .filter((quota) => quota.tool === tool)
          .map((quota): ApplicableQuota => ({
            scope,
            ...(scope === 'caller' ? { caller } : {}),
            tool,
            window: String(quota.window),
            windowMs: durationMs(quota.window),
            ...(quota.maxCalls !== undefined ? { maxCalls: quota.maxCalls } : {}),
            ...(quota.maxAmount !== undefined ? { maxAmount: quota.maxAmount } : {}),
            ...(quota.perEndUser ? { perEndUser: true as const } : {}),
          }));
      return [
        ...applicable('deployment', file.quotas),
        ...applicable('caller', ownValue(file.callers, caller)?.quotas),
      ];
    },
    snapshotFor: (caller) => ({
      version,
      callerPolicy: ownValue(file.callers, caller) ?? null,
      callerKeyHex: ownValue(callerKeys, caller) ?? null,
      approvers,
      operators,
    }),
  };
}

/**
 * Every approval window longer than the policy's `maxApprovalWindow`, as problems naming the field.
 * The maximum stays within the namespace retention because a `patched()` branch goes once no run
 * older than the retention can exist: a call waiting longer could outlive the code that replays it.
 */
function windowsBeyondMaximum(file: PolicyFile): string[] {
  const maximumMs = maxApprovalWindowMs({ policy: file });
  const maximum = written(file.maxApprovalWindow ?? defaultMaxApprovalWindow);
  const windows: [field: string, value: number | string][] = [];
  for (const [caller, policy] of Object.entries(file.callers)) {
    for (const [level, value] of Object.entries(policy.approval?.windows ?? {}))
      windows.push([`callers.${caller}.approval.windows.${level}`, value]);
  }
  for (const [tool, policy] of Object.entries(file.tools ?? {})) {
    for (const [level, value] of Object.entries(policy.approvalWindows ?? {}))
      windows.push([`tools.${tool}.approvalWindows.${level}`, value]);
  }
  return windows
    .filter(([, value]) => durationMs(value) > maximumMs)
    .map(
      ([field, value]) =>
        `${field}: ${written(value)} is longer than maxApprovalWindow (${maximum}); ` +
        'shorten it, or raise maxApprovalWindow within the namespace retention',
    );
}

/**
 * Every approval chain that could never complete, as problems naming the field: a step naming a
 * group (not routed) with fewer approvers granted its level than its quorum, and a chain whose steps'
 * windows together are longer than `maxApprovalWindow`. A routed group is checked per call.
 */
function chainProblems(file: PolicyFile): string[] {
  const problems: string[] = [];
  const maximumMs = maxApprovalWindowMs({ policy: file });
  const approvals: [field: string, approval: PolicyFile['callers'][string]['approval'], caller: string][] =
    [];
  for (const [caller, policy] of Object.entries(file.callers)) {
    approvals.push([`callers.${caller}.approval`, policy.approval, caller]);
    (policy.contexts ?? []).forEach((entry, index) =>
      approvals.push([`callers.${caller}.contexts.${index}.approval`, entry.approval, caller]),
    );
  }
  for (const [field, approval, caller] of approvals) {
    for (const [level, steps] of Object.entries(approval?.chains ?? {})) {
      const rank = riskRank(level as RiskLevel);
      if (approval && riskRank(approval.ceiling) < rank) {
        problems.push(
          `${field}.chains.${level}: above the ceiling "${approval.ceiling}", so no call of this level is approved; remove the chain or raise the ceiling`,
        );
      }
      let totalMs = 0;
      steps.forEach((step, index) => {
        totalMs += durationMs(
          step.window ?? approval?.windows?.[level as RiskLevel] ?? defaultApprovalWindowMs,
        );
        if (step.group.includes('{')) return;
        const members = groupMembers({
          approvers: file.approvers,
          group: step.group,
          level: level as RiskLevel,
          caller,
        });
        if (members.length < (step.quorum ?? 1)) {
          problems.push(
            `${field}.chains.${level}.${index}.group: group "${step.group}" has ${members.length} approver(s) ` +
              `granted "${level}" who do not operate ${caller}, ${step.quorum ?? 1} needed; ` +
              `add "${step.group}" to approvers' groups`,
          );
        }
      });
      const untrustedQuorum = file.callers[caller]?.untrustedText?.quorum;
      const chainQuorum = steps.reduce((sum, step) => sum + (step.quorum ?? 1), 0);
      if (untrustedQuorum !== undefined && untrustedQuorum > chainQuorum) {
        problems.push(
          `${field}.chains.${level}: asks ${chainQuorum} approval(s), fewer than untrustedText.quorum (${untrustedQuorum}); ` +
            "raise a step's quorum: a chain decides its level, whatever text the session read",
        );
      }
      if (totalMs > maximumMs) {
        problems.push(
          `${field}.chains.${level}: its steps may wait ${Math.round(totalMs / 60_000)} min together, longer than ` +
            "maxApprovalWindow; shorten the steps' windows, or raise maxApprovalWindow within the namespace retention",
        );
      }
    }
  }
  return problems;
}

/** A duration as the policy wrote it; milliseconds get their unit. */
function written(value: number | string): string {
  return typeof value === 'number' ? `${value}ms` : value;
}
