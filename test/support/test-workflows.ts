// The workflows module the tests' workers bundle: the orders domain plus the test-only tools,
// with fast retries so retry exhaustion takes milliseconds.
import { createToolGateWorkflows } from '../../src/definitions';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { testContracts } from './test-tools';

/** The workflows under test; sessions continue as new after 6 admissions, so tests cross that boundary. */
export const { toolCall, toolSession } = createToolGateWorkflows({
  tools: [...ordersContracts, ...testContracts],
  retry: { maximumAttempts: 3, initialIntervalMs: 20, maximumIntervalMs: 100, attemptTimeoutMs: 3_000 },
  session: { continueAsNewAfter: 6 },
});
