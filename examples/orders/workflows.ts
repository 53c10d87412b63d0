// The orders domain's workflows module: toolgate's call workflow composed with the orders contracts.
import { createToolCallWorkflow } from '../../src/definitions';
import { ordersContracts } from './orders-contracts';

/** Every proposed orders call runs as this workflow. */
export const toolCall = createToolCallWorkflow({ tools: ordersContracts });
