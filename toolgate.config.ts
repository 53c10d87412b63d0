// toolgate's config for the orders example: `npm start` and the `toolgate` CLI read it.
// Your own deployment has a file like this one that names your tools (once) and your policy.
import { defineConfig } from 'toolgate';
import { ordersContracts } from './examples/orders/orders-contracts';
import { createOrdersTools } from './examples/orders/orders-implementations';

// npm start keeps its state in .toolgate/ unless TOOLGATE_STATE names another folder (the tour test does).
const state = process.env.TOOLGATE_STATE ?? '.toolgate';

export default defineConfig({
  tools: ordersContracts,
  auditPath: `${state}/audit.sqlite`,
  keysDirectory: `${state}/keys`,
  mcp: { tokensPath: `${state}/mcp-tokens.json` },
  policyPath: './examples/orders/policy.json',
  implementations: () => createOrdersTools({ ordersUrl: process.env.ORDERS_URL ?? 'http://127.0.0.1:4100' }),
});
