// A second, test-only domain built on toolgate's public API alone: tools whose implementations
// misbehave on purpose, to prove the pipeline's own guarantees (output contract, internal errors).
import { z } from 'zod';
import { defineToolContract } from 'toolgate';

/** Answers with whatever shape it was asked to, so the output contract can be broken on purpose. */
export const echoShapeContract = defineToolContract({
  name: 'echo_shape',
  description:
    'Test tool: returns a record; with broken=true it returns one that breaks its output contract.',
  input: z.strictObject({
    broken: z.boolean().describe('whether to answer with a broken shape'),
    label: z.string().optional().describe('an optional label, echoed back'),
  }),
  output: z.strictObject({ value: z.int(), label: z.string().optional() }),
  effect: 'read',
});

/** Answers without a field its output contract requires (`label`). */
export const missingFieldContract = defineToolContract({
  name: 'missing_field',
  description: 'Test tool: returns a record that lacks a field its output contract requires.',
  input: z.strictObject({}),
  output: z.strictObject({ value: z.int(), label: z.string() }),
  effect: 'read',
});

/** Throws an unexpected error whose details must never reach the model. */
export const explodeContract = defineToolContract({
  name: 'explode',
  description: 'Test tool: always fails with an unexpected error carrying a secret in its message.',
  input: z.strictObject({}),
  output: z.strictObject({}),
  effect: 'read',
});

/** The test domain's contracts. */
export const testContracts = [echoShapeContract, explodeContract, missingFieldContract] as const;
