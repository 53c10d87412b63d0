// The orders domain's workflows module: toolgate's workflows composed with the orders contracts.
import { createToolGateWorkflows } from '../../src/definitions';
import { ordersContracts } from './orders-contracts';

/** Every proposed orders call runs as `toolCall`; every conversation as `toolSession`. */
export const { toolCall, toolSession } = createToolGateWorkflows({ tools: ordersContracts });
