// The CLI tests' config: the tests' contracts, and the policy and keys of the running harness
// (passed through the environment, since a config is a module).
import { defineConfig } from 'toolgate';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { testContracts } from './test-tools';

export default defineConfig({
  tools: [...ordersContracts, ...testContracts],
  policyPath: process.env.TOOLGATE_TEST_POLICY ?? 'missing-test-policy.json',
  keysDirectory: process.env.TOOLGATE_TEST_KEYS ?? 'missing-test-keys',
  auditPath: process.env.TOOLGATE_TEST_AUDIT ?? 'missing-test-audit.sqlite',
  implementations: () => [],
});
