import type { z } from 'zod';
import type { AnyToolContract, ToolContract, ToolInputSchema } from './define-tool';
import { ToolDefinitionError } from './define-tool';

/** What every implementation function receives: validated arguments and the call id, the idempotency key. */
export interface ToolCallContext<Args> {
  args: Args;
  callId: string;
}

/**
 * What the backend recorded under a call's idempotency key: the effect it applied (with the output
 * `execute` would have returned), a business refusal (with one of the tool's domain codes), or
 * nothing. `not-seen` must mean the backend never saw the key: the call then reports nothing applied.
 */
export type RecordedOutcome<Output> =
  | { status: 'applied'; output: Output }
  | { status: 'refused'; code: string; message: string; data?: Record<string, unknown> }
  | { status: 'not-seen' };

/** The I/O half of a tool, registered by workers as activities. */
export interface ToolImplementation<Args = unknown, Output = unknown> {
  /** Read-only business checks; throw `toolRejection(...)` with a domain code to refuse. */
  check?: (context: ToolCallContext<Args>) => Promise<void>;
  /**
   * Performs the call. For a write, the backend must honour `idempotencyKey` (the call id) like a
   * payment gateway: the same key never applies twice.
   */
  execute: (
    context: ToolCallContext<Args> & {
      idempotencyKey: string;
      attempt: number;
      /** For a write: the credential minted for this attempt; send it to the backend. */
      credential?: string;
    },
  ) => Promise<Output>;
  /**
   * For a write: asks the backend what it recorded under the key, so a lost response is never
   * reported as not applied and a refusal whose answer was lost keeps its domain code. Throw when
   * the backend cannot say: the call then reports its effect as unknown.
   */
  findApplied?: (
    context: ToolCallContext<Args> & { idempotencyKey: string },
  ) => Promise<RecordedOutcome<Output>>;
  /** The exact effect, computed from the validated arguments, for an approver to read. */
  preview?: (context: ToolCallContext<Args>) => Promise<Record<string, unknown>>;
  /** Reads the effect back after execution; throw to report `VERIFICATION_FAILED`. */
  verify?: (context: ToolCallContext<Args> & { output: Output }) => Promise<void>;
}

/** A contract with its implementation, as a worker registers it. */
export interface ImplementedTool {
  readonly contract: AnyToolContract;
  readonly implementation: ToolImplementation;
}

/**
 * Binds an implementation to its contract and checks it at start-up: a write without `findApplied`
 * is refused, because a lost response could then only be reported as `unknown`.
 */
export function defineToolImplementation<Input extends ToolInputSchema, Output extends z.ZodType>(
  contract: ToolContract<Input, Output>,
  implementation: ToolImplementation<z.output<Input>, z.output<Output>>,
): ImplementedTool {
  if (typeof implementation.execute !== 'function') {
    throw new ToolDefinitionError(`tool "${contract.name}": the implementation needs an execute function`);
  }
  if (contract.effect === 'write' && typeof implementation.findApplied !== 'function') {
    throw new ToolDefinitionError(
      `tool "${contract.name}": a write needs findApplied({ idempotencyKey }) so a lost response can be resolved`,
    );
  }
  return Object.freeze({
    contract: contract,
    implementation: implementation as ToolImplementation,
  });
}
