import { ApplicationFailure } from '@temporalio/common';

/**
 * Refuses an update of toolgate's own workflows with a stable code (the failure's type) and a reason,
 * never retried: the sender reads the code (see `switchRefusalCodes`, `grantRefusalCodes`).
 */
export function refuse(code: string, reason: string): never {
  throw ApplicationFailure.create({ type: code, message: reason, nonRetryable: true });
}

/** `refuse` when `refused` holds. */
export function refuseIf(refused: boolean, code: string, reason: string): void {
  if (refused) refuse(code, reason);
}
