// The cluster test's worker config: the orders tools against the orders service the test started,
// with the policy, keys and audit store of the run (passed through the environment, since a config is
// a module). Temporal's address, namespace and task queue come from TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE and TOOLGATE_TASK_QUEUE, as in any deployment; TOOLGATE_AUDIT_URL, when set,
// names a PostgreSQL audit store that every worker shares.
import { defineConfig } from 'toolgate';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { createOrdersTools } from '../../examples/orders/orders-implementations';

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(
      `${name} is not set: test/cluster/cluster-toolgate.config.ts is the cluster test's config.`,
    );
  }
  return value;
}

export default defineConfig({
  tools: ordersContracts,
  policyPath: required('TOOLGATE_CLUSTER_POLICY'),
  keysDirectory: required('TOOLGATE_CLUSTER_KEYS'),
  auditPath: required('TOOLGATE_CLUSTER_AUDIT'),
  implementations: () => createOrdersTools({ ordersUrl: required('ORDERS_URL') }),
});
