import { z } from 'zod';
import { riskLevels } from '../tools/risk-levels';

const fieldLimitSchema = z
  .strictObject({
    max: z.number().optional().describe('the largest value this caller may send'),
    min: z.number().optional().describe('the smallest value this caller may send'),
  })
  .refine((limit) => limit.max !== undefined || limit.min !== undefined, 'give "max", "min" or both');

const riskLevel = z.enum(riskLevels);

/** A duration: milliseconds, or a number with a unit (`500ms`, `30s`, `15m`, `4h`, `2d`). */
const durationSchema = z.union([
  z.int().positive(),
  z.string().regex(/^\d+(ms|s|m|h|d)$/, 'a duration such as "30s", "15m" or "4h"'),
]);

/** Where a public key comes from: a PEM file (relative to the keys folder) or `ed25519:<64 hex>` inline. */
const publicKeySchema = z
  .string()
  .min(1)
  .describe('a public key file (PEM), relative to the keys folder, or "ed25519:<hex>"');

/**
 * A limit across sessions: how many calls of one tool, and how much they move in total (the tool's
 * declared `amount`), within a rolling window. Counted durably and race-free across every session.
 */
export const quotaSchema = z
  .strictObject({
    tool: z.string().min(1).describe('the tool whose calls count'),
    window: durationSchema.describe('the rolling window, e.g. "24h"'),
    maxCalls: z.int().min(1).optional().describe('at most this many calls within the window'),
    maxAmount: z
      .int()
      .min(1)
      .optional()
      .describe("at most this much in total within the window (the tool's amount, e.g. cents)"),
    perEndUser: z
      .boolean()
      .optional()
      .describe(
        "count each end user apart (the context's onBehalfOf), e.g. at most 3 refunds per customer per day",
      ),
  })
  .refine(
    (quota) => quota.maxCalls !== undefined || quota.maxAmount !== undefined,
    'give "maxCalls", "maxAmount" or both',
  );

/**
 * One step of an approval chain: a quorum of one approver group, within its own window. The group may
 * be routed: `{tenant}`, `{channel}`, `{onBehalfOf}`, `{claims.<name>}` (the call's context) and
 * `{route.<name>}` (the tool's `approvalRoute` of the validated arguments) are filled in, so
 * `finance-{claims.region}` asks `finance-eu` for a call whose context says `region: "eu"`.
 */
export const chainStepSchema = z.strictObject({
  group: z
    .string()
    .regex(
      /^(?:[a-zA-Z0-9_.-]|\{(?:tenant|channel|onBehalfOf|claims\.[a-zA-Z][a-zA-Z0-9_.-]*|route\.[a-zA-Z][a-zA-Z0-9_.-]*)\})+$/,
      'a group name (letters, digits, ".", "_", "-"), with {tenant}, {channel}, {onBehalfOf}, {claims.<name>} or {route.<name>} where it is routed',
    )
    .describe('the approver group whose turn this step is (approvers list their groups)'),
  quorum: z.int().min(1).max(10).optional().describe('how many distinct approvers of the group (default 1)'),
  window: durationSchema
    .optional()
    .describe("how long this step may wait once it is the group's turn (default: the level's window)"),
  when: z
    .strictObject({
      amountAbove: z
        .int()
        .min(0)
        .optional()
        .describe("only when the tool's amount (e.g. cents) is above this, e.g. finance above 50000"),
      tenant: z.string().min(1).optional().describe("only for calls of this tenant (the context's)"),
      channel: z.string().min(1).optional().describe("only for calls from this channel (the context's)"),
    })
    .optional()
    .describe('the calls this step applies to (absent: every call of the level)'),
});

/** How approvals work for one caller. */
export const approvalPolicySchema = z.strictObject({
  ceiling: riskLevel.describe(
    'the highest level an approver may approve for this caller; above it PERMISSION_DENIED',
  ),
  windows: z
    .partialRecord(riskLevel, durationSchema)
    .optional()
    .describe('how long an approval may wait, per level (default 4h)'),
  quorum: z
    .partialRecord(riskLevel, z.int().min(1).max(10))
    .optional()
    .describe('how many distinct approvers a level needs (default 1)'),
  chains: z
    .partialRecord(riskLevel, z.array(chainStepSchema).min(1).max(8))
    .optional()
    .describe(
      'per level, approvals in order from named groups (each with its own quorum and window), instead of a quorum of any approvers',
    ),
  rememberDenials: z
    .strictObject({
      acrossSessions: durationSchema.describe(
        "how long a denial is remembered for the same end user (the context's onBehalfOf and tenant) in any session",
      ),
    })
    .optional()
    .describe('a denied call is remembered in its session; with acrossSessions, for its end user too'),
});

/**
 * What a write needs once untrusted text (a tool output marked so: a customer note, an email) entered
 * its session: `approval` (whatever the caller's autonomy, with the reason shown to the approver) or
 * `refuse` (`UNTRUSTED_TEXT_READ`); for every write tool, or the ones named.
 */
export const untrustedTextPolicySchema = z.strictObject({
  writes: z.enum(['approval', 'refuse']).describe('what a write in a session that read untrusted text needs'),
  tools: z.array(z.string().min(1)).optional().describe('only these write tools (default: every write)'),
  quorum: z.int().min(1).max(10).optional().describe('at least this many approvers for such a write'),
});

/** The guards of one caller's sessions (defaults: 25 steps, 3 identical calls, 3 same rejections, 30 min idle). */
export const sessionPolicySchema = z.strictObject({
  stepBudget: z
    .int()
    .min(1)
    .optional()
    .describe('proposals one session may make, replays and rejections included'),
  loopLimit: z.int().min(1).optional().describe('how often one call id may be proposed in a session'),
  circuitThreshold: z
    .int()
    .min(1)
    .optional()
    .describe('consecutive rejections with one code for one tool that open its circuit'),
  idleTimeout: durationSchema.optional().describe('a session with no proposal for this long ends'),
});

/** One caller's rules: what it may call, what it may do alone, and its per-tool limits. */
export const callerPolicySchema = z.strictObject({
  description: z.string().optional(),
  publicKey: publicKeySchema.describe("the caller key's public half: proposals must be signed with it"),
  approval: approvalPolicySchema.optional().describe('absent: nothing above autonomy can run'),
  session: sessionPolicySchema.optional().describe("the guards of this caller's sessions"),
  tools: z.array(z.string().min(1)).describe('the tools this caller may call'),
  autonomy: z.enum(riskLevels).describe('the highest risk level this caller may run without approval'),
  limits: z
    .record(z.string(), z.record(z.string(), fieldLimitSchema))
    .optional()
    .describe('per tool, per numeric argument: the bounds this caller must stay within'),
  quotas: z
    .array(quotaSchema)
    .optional()
    .describe("limits across this caller's sessions: calls and amount per tool in a rolling window"),
  untrustedText: untrustedTextPolicySchema
    .optional()
    .describe('what writes need once untrusted text entered the session (absent: nothing more)'),
  contexts: z
    .array(
      z.strictObject({
        when: z
          .strictObject({
            channel: z.string().min(1).optional(),
            tenant: z.string().min(1).optional(),
          })
          .describe("the calls this applies to: the context's channel and tenant, each when given"),
        tools: z.array(z.string().min(1)).optional().describe('replaces the tools for these calls'),
        autonomy: z.enum(riskLevels).optional().describe('replaces the autonomy for these calls'),
        approval: approvalPolicySchema.optional().describe('replaces how approvals work for these calls'),
        limits: z
          .record(z.string(), z.record(z.string(), fieldLimitSchema))
          .optional()
          .describe('replaces the per-tool limits for these calls'),
        untrustedText: untrustedTextPolicySchema.optional().describe('replaces the untrusted-text rule'),
      }),
    )
    .optional()
    .describe(
      'per context: the first entry whose channel and tenant match the call replaces these fields of the caller policy',
    ),
});

/** A person who may approve calls: up to a level, never for a caller they operate. */
export const approverPolicySchema = z.strictObject({
  publicKey: publicKeySchema.describe("the approver's own key: decisions must be signed with it"),
  maxLevel: riskLevel.describe('the highest risk level this approver may approve'),
  operates: z
    .array(z.string())
    .default([])
    .describe('the callers this approver operates (and so may not approve)'),
  groups: z
    .array(z.string().regex(/^[a-zA-Z0-9_.-]+$/, 'a group name: letters, digits, ".", "_", "-"'))
    .optional()
    .describe("the approver groups this approver belongs to (an approval chain's steps name them)"),
});

/** A person who runs toolgate: signs approvers' invites and key revocations with their own key. */
export const operatorPolicySchema = z.strictObject({
  description: z.string().optional().describe('who this is, for the people who read the policy'),
  publicKey: publicKeySchema.describe(
    "the operator's own key: invites and revocations must be signed with it",
  ),
});

/** One tool's rules, whoever calls it. */
export const toolPolicySchema = z.strictObject({
  approvalWindows: z
    .partialRecord(riskLevel, durationSchema)
    .optional()
    .describe(
      "how long an approval of this tool may wait, per level; the shortest of this and the caller's window applies",
    ),
});

/** The policy file: per caller, loaded by workers, never taken from workflow input or the model. */
export const policyFileSchema = z.strictObject({
  version: z.string().min(1).optional().describe('a label for this policy; the digest is recorded too'),
  callers: z.record(z.string().min(1), callerPolicySchema),
  tools: z
    .record(z.string().min(1), toolPolicySchema)
    .optional()
    .describe('per tool, whoever calls it: how long its approvals may wait'),
  quotas: z
    .array(quotaSchema)
    .optional()
    .describe(
      'limits across every caller and session of the deployment: calls and amount per tool in a rolling window',
    ),
  // Optional rather than defaulted, so a policy that leaves it out keeps the digest it had before it existed.
  maxApprovalWindow: durationSchema
    .optional()
    .describe(
      'the longest any approval may wait (default 30d); keep it within the namespace retention ' +
        '(30 days by default): a replay guard goes once no run older than the retention can exist',
    ),
  approvers: z.record(z.string().min(1), approverPolicySchema).default({}),
  operators: z
    .record(z.string().min(1), operatorPolicySchema)
    .default({})
    .describe('who may invite approvers to enrol keys, and revoke them'),
});

/** One caller's policy as the workflow sees it. */
export type CallerPolicy = z.output<typeof callerPolicySchema>;
/** A parsed policy file. */
export type PolicyFile = z.output<typeof policyFileSchema>;
/** One caller's approval rules. */
export type ApprovalPolicy = z.output<typeof approvalPolicySchema>;
/** One step of an approval chain, as written in the policy. */
export type ChainStep = z.output<typeof chainStepSchema>;
/** One approver. */
export type ApproverPolicy = z.output<typeof approverPolicySchema>;
/** A policy file as written, before defaults. */
export type PolicyFileInput = z.input<typeof policyFileSchema>;
/** A limit across sessions, as written. */
export type Quota = z.output<typeof quotaSchema>;
/** One numeric bound on one argument. */
export type FieldLimit = z.output<typeof fieldLimitSchema>;
