// toolgate's config for the orders example: `npm start` and the `toolgate` CLI read it.
// Your own deployment has a file like this one that names your tools (once) and your policy.
import { defineConfig } from 'toolgate';
import { ordersContracts } from './examples/orders/orders-contracts';
import { createOrdersTools } from './examples/orders/orders-implementations';

export default defineConfig({
  tools: ordersContracts,
  policyPath: './examples/orders/policy.json',
  implementations: () => createOrdersTools({ ordersUrl: process.env.ORDERS_URL ?? 'http://127.0.0.1:4100' }),
});
