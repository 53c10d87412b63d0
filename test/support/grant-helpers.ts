import { listGrants, revokeGrant } from 'toolgate/admin';
import type { ToolGateHarness } from './toolgate-harness';

/**
 * Revokes, as operator olivia, every grant of the harness's task queue that could still cover a call
 * (active, or used up: a use given back would wake it), so each test starts with none.
 */
export async function revokeOpenGrants(harness: ToolGateHarness, reason = 'test done'): Promise<void> {
  const { grants } = await listGrants({ client: harness.temporal, taskQueue: harness.taskQueue });
  for (const entry of grants) {
    if (entry.state !== 'active' && entry.state !== 'used-up') continue;
    await revokeGrant({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      grantId: entry.grant.grantId,
      by: { operator: 'olivia' },
      key: harness.operatorKey('olivia'),
      reason,
    });
  }
}
