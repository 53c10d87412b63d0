import type { SessionWorkflowOptions } from './session';
import { createSessionWorkflow } from './session';
import type { ToolCallWorkflowOptions } from './tool-call';
import { createToolCallWorkflow } from './tool-call';

/**
 * toolgate's workflows for a set of tools: export both from your workflows module,
 * `export const { toolCall, toolSession } = createToolGateWorkflows({ tools })`.
 */
export function createToolGateWorkflows(
  options: ToolCallWorkflowOptions & { session?: SessionWorkflowOptions },
) {
  return {
    toolCall: createToolCallWorkflow(options),
    toolSession: createSessionWorkflow(options.session),
  };
}
