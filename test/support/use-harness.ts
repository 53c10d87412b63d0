import { afterAll, beforeAll, beforeEach } from 'vitest';
import { temporalAddress } from './temporal';
import type { ToolGateHarness } from './toolgate-harness';
import { startHarness } from './toolgate-harness';

/**
 * One harness for the test file (started before all, stopped after all); before each test the
 * orders are reset to the seed data and a fresh session id is taken.
 */
export function useHarness(
  onStart: (harness: ToolGateHarness) => void,
  options: Omit<Parameters<typeof startHarness>[0], 'address'> = {},
): void {
  let harness: ToolGateHarness | undefined;
  beforeAll(async () => {
    harness = await startHarness({ address: temporalAddress(), ...options });
    onStart(harness);
  });
  afterAll(async () => {
    await harness?.stop();
  });
  beforeEach(async () => {
    await harness!.orders.api.reset();
    harness!.newSession();
  });
}
