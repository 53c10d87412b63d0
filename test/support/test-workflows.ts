// The workflows module the tests' workers bundle: the orders domain plus the test-only tools,
// with fast retries so retry exhaustion takes milliseconds.
import { createToolCallWorkflow } from '../../src/definitions';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { testContracts } from './test-tools';

/** The call workflow under test. */
export const toolCall = createToolCallWorkflow({
  tools: [...ordersContracts, ...testContracts],
  retry: { maximumAttempts: 3, initialIntervalMs: 20, maximumIntervalMs: 100, attemptTimeoutMs: 3_000 },
});
