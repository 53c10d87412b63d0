/**
 * Errors a tool implementation throws. They cross into the activity wrapper, which tells them
 * apart by `toolgateKind`, never by `instanceof` (they may come from another copy of this module).
 */

/** A business refusal with one of the tool's declared domain codes; never retried. */
export interface ToolRejection extends Error {
  readonly toolgateKind: 'rejection';
  readonly code: string;
  readonly data?: Record<string, unknown>;
}

/** A failure worth retrying (503, timeout, connection reset); retried with the same idempotency key. */
export interface TransientToolError extends Error {
  readonly toolgateKind: 'transient';
}

/** Makes a business refusal: `code` must be one of the tool's domain codes; `message` tells the model what to do. */
export function toolRejection(input: {
  code: string;
  message: string;
  data?: Record<string, unknown>;
}): ToolRejection {
  const error = new Error(input.message) as Error & {
    toolgateKind: 'rejection';
    code: string;
    data?: unknown;
  };
  error.name = 'ToolRejection';
  error.toolgateKind = 'rejection';
  error.code = input.code;
  if (input.data !== undefined) error.data = input.data;
  return error as ToolRejection;
}

/** Makes a transient failure; the executor retries it, then asks the backend whether the effect was applied. */
export function transientToolError(input: { message: string; cause?: unknown }): TransientToolError {
  const error = new Error(input.message, { cause: input.cause }) as Error & { toolgateKind: 'transient' };
  error.name = 'TransientToolError';
  error.toolgateKind = 'transient';
  return error;
}

/** Reads what kind of tool error this is, if any. */
export function toolErrorKind(error: unknown): 'rejection' | 'transient' | undefined {
  if (error !== null && typeof error === 'object' && 'toolgateKind' in error) {
    const kind = error.toolgateKind;
    if (kind === 'rejection' || kind === 'transient') return kind;
  }
  return undefined;
}
