import { proxyLocalActivities } from '@temporalio/workflow';
import type { SessionActivities } from './activities';
import type { SessionOperation, SessionOperationAnswer } from './protocol';

/**
 * One operation on the sessions in the audit store (stats, end, reset, list, the admission of a
 * proposal that replays a completed call), for a client that holds no store: the workflow runs it as
 * one local activity and closes. Sessions themselves are no workflow (issue 28): a call admits itself.
 */
export async function toolSessionOperation(operation: SessionOperation): Promise<SessionOperationAnswer> {
  return proxyLocalActivities<SessionActivities>({
    startToCloseTimeout: '10s',
    retry: { maximumAttempts: 5, initialInterval: '200ms' },
  }).sessionOperation(operation);
}
