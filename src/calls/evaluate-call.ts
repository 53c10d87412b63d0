import { verifyWithNode } from '../keys/key-files';
import type { CallerPolicySnapshot, LoadedPolicy } from '../policy/load-policy';
import { approvalWindowMs } from '../approvals/approval-window';
import { chainInWords, chainOfCall, chainQuorum } from '../approvals/approval-chain';
import { evaluatePolicy } from '../policy/evaluate-policy';
import type { CallEvaluation, EvaluationRefusal, SignedProposal, ToolCapabilities } from './call-evaluation';
import type { ApprovalNotificationPlan } from '../notifications/notices';
import { boundValues, checkContext, contextValue } from './call-context';
import {
  argumentsTooLargeMessage,
  argumentsUnreadableMessage,
  boundParameterEditedMessage,
  boundParameterSentMessage,
  resourceEditedMessage,
  contextInvalidMessage,
  contextRequiredMessage,
  untrustedTextReadMessage,
  callIdMismatchMessage,
  sessionRequiredMessage,
  toolDisabledMessage,
  toolNotAllowedMessage,
  unauthenticatedMessage,
  unknownToolMessage,
} from '../shared/model-messages';
import type { DisabledSwitch } from '../controls/protocol';
import type { ApplicableQuota } from '../quotas/protocol';
import type { CallContext } from './call-context';
import { callerPolicyIn } from '../policy/context-policy';
import type { CallerPolicy } from '../policy/policy-schema';
import type { UntrustedRead } from '../shared/untrusted-text';
import { describeUntrustedReads } from '../shared/untrusted-text';
import { disabledData } from '../controls/protocol';
import { ownValue } from '../shared/own-records';
import { deriveCallId, parseArguments } from './proposal';
import { canonicalJson } from '../shared/canonical-json';
import { contractDigestOf } from '../tools/contract-digest';
import type { AnyToolContract, ExecutionRetry } from '../tools/define-tool';
import type { ToolRegistry } from '../tools/tool-registry';
import { validateArguments } from '../tools/validate-arguments';
import { inputJsonSchema } from '../providers/json-schema';

/** What the evaluation reads: the deployment's contracts, its policy now, and what its implementations can do. */
export interface EvaluationContext {
  registry: ToolRegistry;
  policy: LoadedPolicy;
  capabilities: Readonly<Record<string, ToolCapabilities>>;
  retry: ExecutionRetry;
  /** The worker's approval notifications, recorded with a call's approval requirement. */
  notifications?: ApprovalNotificationPlan;
}

/**
 * Steps 1 to 5 of docs/design.md's pipeline for one proposal, in the worker: the signature, the tool and
 * the caller's allowlist, the call id, parsing, the schema, the risk level and the caller's policy.
 * Pure apart from reading the context; the call workflow records its answer and runs on it.
 */
export function evaluateCall(input: {
  context: EvaluationContext;
  check: SignedProposal;
  /** Whether the proposal's session admitted it for this call (asked only for a signed proposal). */
  admitted: (check: SignedProposal) => boolean;
  /** The kill switch that stops this caller's calls of the tool now, if one is off. */
  disabled?: (input: { tool: string; caller: string }) => DisabledSwitch | undefined;
  /**
   * An approver's edit of the arguments (all fields, bound ones as the call has them): the proposal
   * is judged as before up to its parsing, then these arguments take the model's place. A bound
   * parameter edited is `BOUND_PARAMETER_EDITED`; another resource than the proposal's is
   * `RESOURCE_EDITED`; the schema, risk level and policy judge them as they would the model's.
   */
  edited?: Record<string, unknown>;
}): CallEvaluation {
  const { context, check } = input;
  const { proposal, callId } = check;
  const snapshot = context.policy.snapshotFor(proposal.caller);
  const authenticated = isSigned({ snapshot, check });
  const record = {
    policyVersion: snapshot.version,
    callerKeyHex: snapshot.callerKeyHex,
    authenticated,
    // Asked only for a signed proposal.
    admitted: authenticated && input.admitted(check),
    approvers: snapshot.approvers,
    operators: snapshot.operators,
  };
  const refuse = (refusal: EvaluationRefusal, extra: Partial<CallEvaluation> = {}): CallEvaluation => ({
    ...record,
    ...extra,
    ok: false,
    refusal,
  });
  if (!record.authenticated) {
    return refuse({ code: 'UNAUTHENTICATED_CALLER', message: unauthenticatedMessage(proposal) });
  }

  if (!record.admitted) {
    return refuse({ code: 'SESSION_REQUIRED', message: sessionRequiredMessage(proposal) });
  }
  // The client checks the context it attaches; a raw client's is checked here, before anything reads it.
  const actingFor = checkContext(proposal.context);
  if (!actingFor.ok) {
    return refuse({
      code: 'CONTEXT_INVALID',
      message: contextInvalidMessage({ problem: actingFor.problem }),
    });
  }

  // The caller's policy as it applies in this call's context (channel, tenant).
  const callerPolicy = snapshot.callerPolicy
    ? callerPolicyIn({ callerPolicy: snapshot.callerPolicy, context: actingFor.context })
    : { publicKey: '', tools: [], autonomy: 'read' as const };
  const available = callerPolicy.tools;
  const contract = proposal.toolNameTruncated ? undefined : context.registry.get(proposal.tool);
  if (!contract) {
    return refuse({
      code: 'UNKNOWN_TOOL',
      message: unknownToolMessage({ tool: proposal.tool, available }),
      data: { available },
    });
  }
  const off = input.disabled?.({ tool: contract.name, caller: proposal.caller });
  if (off) {
    return refuse({
      code: 'TOOL_DISABLED',
      message: toolDisabledMessage({ tool: contract.name, reason: off.reason, since: off.since }),
      data: disabledData(off),
    });
  }
  if (!available.includes(contract.name)) {
    return refuse({
      code: 'TOOL_NOT_ALLOWED',
      message: toolNotAllowedMessage({ tool: contract.name, available }),
      data: { available },
    });
  }
  // The workflow ID is the idempotency key: refuse a run started under an ID that is not this proposal's key.
  const callIdNow = deriveCallId({
    proposal,
    idempotencyFields: contract.idempotencyFields,
    boundParameters: contract.boundParameters,
  });
  if (callIdNow !== callId) {
    return refuse({ code: 'IDEMPOTENCY_CONFLICT', message: callIdMismatchMessage });
  }

  if (proposal.argumentsTooLarge) {
    const message = argumentsTooLargeMessage({
      bytes: proposal.argumentsTooLarge.bytes,
      tool: contract.name,
    });
    return refuse({ code: 'INVALID_JSON', message });
  }
  if (proposal.argumentsUnreadable !== undefined) {
    const message = argumentsUnreadableMessage({
      problem: proposal.argumentsUnreadable,
      tool: contract.name,
    });
    return refuse({ code: 'INVALID_JSON', message });
  }
  const parsed = parseArguments(proposal.rawArguments);
  if (!parsed.ok) return refuse({ code: 'INVALID_JSON', message: parsed.message });

  let bound = bindParameters({ contract, value: parsed.value, context: actingFor.context });
  if (!bound.ok) return refuse(bound.refusal);
  if (input.edited) {
    bound = editedParameters({ contract, proposed: bound.value, edited: input.edited });
    if (!bound.ok) return refuse(bound.refusal);
  }
  const validation = validateArguments({ contract, value: bound.value });
  if (!validation.ok) {
    return refuse({
      code: 'INVALID_ARGUMENTS',
      message: validation.message,
      data: { issues: validation.issues },
    });
  }
  const args = validation.args;
  const summary = summaryOf({ contract, args });

  const verdict = evaluatePolicy({ contract, args, caller: proposal.caller, callerPolicy });
  const judged = { args, summary, riskLevel: verdict.riskLevel };
  if (!verdict.ok) {
    return refuse({ code: verdict.code, message: verdict.message, data: verdict.data }, judged);
  }
  const level = verdict.riskLevel;
  // Taint: a write in a session that read untrusted text needs what the policy says.
  const untrusted = untrustedRuleFor({ callerPolicy, contract, reads: check.untrusted ?? [] });
  if (untrusted?.writes === 'refuse') {
    return refuse(
      {
        code: 'UNTRUSTED_TEXT_READ',
        message: untrustedTextReadMessage({ tool: contract.name, reason: untrusted.reason }),
        data: { untrusted: check.untrusted },
      },
      judged,
    );
  }
  const needsApproval = verdict.needsApproval || untrusted !== undefined;
  const quorum = Math.max(callerPolicy.approval?.quorum?.[level] ?? 1, untrusted?.quorum ?? 1);
  const rules = [
    ...(verdict.needsApproval
      ? [
          `${contract.name} at risk level "${level}" is above ${proposal.caller}'s autonomy ` +
            `("${callerPolicy.autonomy}")`,
        ]
      : []),
    ...(untrusted ? [untrusted.reason] : []),
  ];
  const levelWindowMs = approvalWindowMs({
    policy: context.policy.file,
    tool: contract.name,
    callerPolicy,
    level,
  });
  // A chain of groups in order, when the level has one: routed from the arguments and the context.
  const chain = needsApproval
    ? chainOfCall({
        contract,
        args,
        context: actingFor.context,
        approval: callerPolicy.approval,
        level,
        caller: proposal.caller,
        approvers: context.policy.file.approvers,
        levelWindowMs,
      })
    : undefined;
  if (chain && !chain.ok) {
    return refuse(
      {
        code: 'PERMISSION_DENIED',
        message: `nobody can approve this call: ${chain.reason}; ask an operator to fix the policy's approver groups`,
      },
      judged,
    );
  }
  const steps = chain?.steps;
  const windowMs = steps ? steps[0]!.windowMs : levelWindowMs;
  const required = steps ? chainQuorum(steps) : quorum;
  return {
    ...record,
    ...judged,
    ok: true,
    call: {
      tool: contract.name,
      effect: contract.effect,
      args,
      summary,
      riskLevel: level,
      contractDigest: contractDigestOf({ contract }),
      capabilities: ownValue(context.capabilities, contract.name) ?? {
        check: true,
        preview: true,
        verify: true,
      },
      retry: { ...context.retry, ...contract.retry },
      ...quotasOf({
        policy: context.policy,
        caller: proposal.caller,
        contract,
        args,
        needsApproval,
        context: actingFor.context,
      }),
      ...(contract.untrustedOutput
        ? { untrustedOutput: contract.untrustedOutput === true ? true : [...contract.untrustedOutput] }
        : {}),
      ...(needsApproval ? { inputSchema: inputJsonSchema(contract) } : {}),
      ...(needsApproval
        ? {
            approval: {
              quorum: required,
              windowMs,
              rule: steps
                ? `${rules.join('; ')}: approval in order by ${chainInWords(steps)}, granted "${level}"`
                : `${rules.join('; ')}: approval by ${quorum} approver(s) granted "${level}"`,
              ...(steps ? { chain: steps } : {}),
              ...(untrusted ? { untrustedText: true as const } : {}),
              ...(context.notifications ? { notifications: context.notifications } : {}),
            },
          }
        : {}),
    },
  };
}

/**
 * The untrusted-text rule that applies to this call, if any: the caller's policy has one, the tool is
 * a write it covers, and the session read untrusted text; with the reason approvers read.
 */
function untrustedRuleFor(input: {
  callerPolicy: CallerPolicy;
  contract: AnyToolContract;
  reads: readonly UntrustedRead[];
}): { writes: 'approval' | 'refuse'; quorum?: number; reason: string } | undefined {
  const rule = input.callerPolicy.untrustedText;
  if (!rule || input.contract.effect !== 'write' || input.reads.length === 0) return undefined;
  if (rule.tools !== undefined && !rule.tools.includes(input.contract.name)) return undefined;
  return {
    writes: rule.writes,
    ...(rule.quorum !== undefined ? { quorum: rule.quorum } : {}),
    reason: describeUntrustedReads(input.reads),
  };
}

/**
 * Fills the tool's bound parameters from the context: refused when the model sent one itself
 * (`BOUND_PARAMETER_SENT`), or when a required one has no value in the context (`CONTEXT_REQUIRED`);
 * an optional one without a value stays absent. The model's fields are left as they came.
 */
function bindParameters(input: {
  contract: AnyToolContract;
  value: Record<string, unknown>;
  context: CallContext;
}): { ok: true; value: Record<string, unknown> } | { ok: false; refusal: EvaluationRefusal } {
  const { contract, value, context } = input;
  const boundParameters = contract.boundParameters;
  if (!boundParameters) return { ok: true, value };
  const fields = Object.keys(boundParameters);
  const refused = (code: 'BOUND_PARAMETER_SENT' | 'CONTEXT_REQUIRED', named: string[]) => ({
    ok: false as const,
    refusal: {
      code,
      message:
        code === 'BOUND_PARAMETER_SENT'
          ? boundParameterSentMessage({ tool: contract.name, fields: named })
          : contextRequiredMessage({ tool: contract.name, fields: named }),
      data: { fields: named },
    },
  });
  const sent = fields.filter((field) => Object.hasOwn(value, field));
  if (sent.length > 0) return refused('BOUND_PARAMETER_SENT', sent);
  const missing = fields.filter((field) => {
    if (contextValue(context, boundParameters[field]!) !== undefined) return false;
    const schema = contract.input.shape[field] as { safeParse(value: unknown): { success: boolean } };
    return !schema.safeParse(undefined).success;
  });
  if (missing.length > 0) return refused('CONTEXT_REQUIRED', missing);
  return { ok: true, value: { ...value, ...boundValues({ boundParameters, context }) } };
}

/**
 * An approver's edited arguments in place of the proposed ones (bound parameters filled): refused
 * when a bound parameter differs from the proposal's (`BOUND_PARAMETER_EDITED`) or, once both
 * validate, when they act on another resource (`RESOURCE_EDITED`; the edited ones are validated by
 * the caller next).
 */
function editedParameters(input: {
  contract: AnyToolContract;
  proposed: Record<string, unknown>;
  edited: Record<string, unknown>;
}): { ok: true; value: Record<string, unknown> } | { ok: false; refusal: EvaluationRefusal } {
  const { contract, proposed, edited } = input;
  const changed = Object.keys(contract.boundParameters ?? {}).filter(
    (field) => canonicalJson(proposed[field] ?? null) !== canonicalJson(edited[field] ?? null),
  );
  if (changed.length > 0) {
    return {
      ok: false,
      refusal: {
        code: 'BOUND_PARAMETER_EDITED',
        message: boundParameterEditedMessage({ tool: contract.name, fields: changed }),
        data: { fields: changed },
      },
    };
  }
  const before = validateArguments({ contract, value: proposed });
  const after = validateArguments({ contract, value: edited });
  if (after.ok) {
    // A resource that cannot be read (the proposal no longer validates, the function throws) is
    // never the same one: the edit is refused rather than trusted.
    const was = before.ok ? resourceOf(contract, before.args) : undefined;
    const now = resourceOf(contract, after.args);
    if (was === undefined || now === undefined || was !== now) {
      return {
        ok: false,
        refusal: {
          code: 'RESOURCE_EDITED',
          message: resourceEditedMessage({
            tool: contract.name,
            was: was ?? '(unreadable)',
            now: now ?? '(unreadable)',
          }),
          data: { resource: was ?? null, edited: now ?? null },
        },
      };
    }
  }
  return { ok: true, value: edited };
}

function resourceOf(contract: AnyToolContract, args: Record<string, unknown>): string | undefined {
  try {
    const resource = contract.resource(args);
    return typeof resource === 'string' ? resource : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The limits across sessions a call counts toward, and its amount when the tool declares one and the
 * call counts toward a limit or needs approval (a standing grant caps amounts); nothing when neither.
 */
function quotasOf(input: {
  policy: LoadedPolicy;
  caller: string;
  contract: AnyToolContract;
  args: Record<string, unknown>;
  needsApproval: boolean;
  context: CallContext;
}): { quotas?: ApplicableQuota[]; amount?: number } {
  // A limit per end user counts the call under whom it acts for (a call for nobody: under no one).
  const found = input.policy
    .quotasFor({ caller: input.caller, tool: input.contract.name })
    .map((quota) => (quota.perEndUser ? { ...quota, endUser: input.context.onBehalfOf ?? '' } : quota));
  const quotas = found.length > 0 ? { quotas: found } : {};
  if (found.length === 0 && !input.needsApproval) return {};
  const amountOf = input.contract.amount;
  if (!amountOf) return quotas;
  const amount = amountOf(input.args);
  // A broken amount function must not count as zero: the evaluation fails (INTERNAL_ERROR), nothing runs.
  if (!Number.isSafeInteger(amount) || amount < 0) {
    throw new Error(
      `${input.contract.name}: its amount function gave ${String(amount)}, not a whole number ≥ 0`,
    );
  }
  return { ...quotas, amount };
}

function summaryOf(input: { contract: AnyToolContract; args: Record<string, unknown> }): string {
  try {
    return input.contract.summarize(input.args);
  } catch {
    return input.contract.name;
  }
}

/** Whether the proposal is signed with the caller's key; checked natively. */
export function isSigned(input: { snapshot: CallerPolicySnapshot; check: SignedProposal }): boolean {
  const { snapshot, check } = input;
  if (!snapshot.callerKeyHex || check.signature === undefined) return false;
  return verifyWithNode({
    kind: 'proposal',
    value: { callId: check.callId, proposal: check.proposal },
    signature: check.signature,
    publicKeyHex: snapshot.callerKeyHex,
  });
}
