import type { ImplementedTool } from 'toolgate';
import { defineToolImplementation } from 'toolgate';
import { echoShapeContract, explodeContract, missingFieldContract } from './test-tools';

/** The secret the exploding tool puts in its error; it must appear in no ToolResult. */
export const explodeSecret = 'db-password=hunter2';

/** Implementations of the test-only tools. */
export function createTestTools(): ImplementedTool[] {
  return [
    defineToolImplementation(echoShapeContract, {
      // The cast is the point: this implementation breaks its own contract when asked to.
      execute: async ({ args }) =>
        args.broken
          ? ({ value: 'not a number' } as unknown as { value: number })
          : { value: 7, ...(args.label !== undefined ? { label: args.label } : {}) },
    }),
    defineToolImplementation(missingFieldContract, {
      // The cast is the point: `label` is missing.
      execute: async () => ({ value: 7 }) as unknown as { value: number; label: string },
    }),
    defineToolImplementation(explodeContract, {
      execute: async () => {
        throw new Error(`connection failed (${explodeSecret})`);
      },
    }),
  ];
}
