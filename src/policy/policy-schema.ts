import { z } from 'zod';
import { riskLevels } from '../tools/risk-levels';

const fieldLimitSchema = z
  .strictObject({
    max: z.number().optional().describe('the largest value this caller may send'),
    min: z.number().optional().describe('the smallest value this caller may send'),
  })
  .refine((limit) => limit.max !== undefined || limit.min !== undefined, 'give "max", "min" or both');

/** One caller's rules: what it may call, what it may do alone, and its per-tool limits. */
export const callerPolicySchema = z.strictObject({
  description: z.string().optional(),
  tools: z.array(z.string().min(1)).describe('the tools this caller may call'),
  autonomy: z.enum(riskLevels).describe('the highest risk level this caller may run without approval'),
  limits: z
    .record(z.string(), z.record(z.string(), fieldLimitSchema))
    .optional()
    .describe('per tool, per numeric argument: the bounds this caller must stay within'),
});

/** The policy file: per caller, loaded by workers, never taken from workflow input or the model. */
export const policyFileSchema = z.strictObject({
  version: z.string().min(1).optional().describe('a label for this policy; the digest is recorded too'),
  callers: z.record(z.string().min(1), callerPolicySchema),
});

/** One caller's policy as the workflow sees it. */
export type CallerPolicy = z.output<typeof callerPolicySchema>;
/** A parsed policy file. */
export type PolicyFile = z.output<typeof policyFileSchema>;
/** One numeric bound on one argument. */
export type FieldLimit = z.output<typeof fieldLimitSchema>;
