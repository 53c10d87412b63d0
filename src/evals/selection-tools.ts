// The tools a selection case offers the model: the caller's, exactly as `openAIChatTools` sends them
// to a live agent. Built from the contracts and the policy's allowlist alone: the suite runs no tool,
// so it needs neither Temporal nor the caller's key (a CI job has neither).
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { openAIStrictJsonSchema, inputJsonSchema } from '../providers/json-schema';
import type { OpenAIChatTool } from '../providers/openai';
import type { StrictMode } from '../providers/provider-calls';
import { sentStrict } from '../providers/provider-calls';
import { ConfigurationError } from '../policy/load-policy';
import { policyFileSchema } from '../policy/policy-schema';
import { ownValue } from '../shared/own-records';
import type { AnyToolContract, ToolContract, ToolInputSchema } from '../tools/define-tool';
import { createToolRegistry } from '../tools/tool-registry';

/**
 * Chat Completions definitions of `contracts`, in their order: the same objects `openAIChatTools`
 * gives for a caller allowed these tools (`strict: true` by default, as there).
 */
export function selectionToolDefinitions(input: {
  contracts: readonly AnyToolContract[];
  strict?: StrictMode;
}): OpenAIChatTool[] {
  const mode = input.strict ?? true;
  return input.contracts.map((contract) => {
    const strict = sentStrict({ contract, mode });
    return {
      type: 'function',
      function: {
        name: contract.name,
        description: contract.description,
        parameters: strict ? openAIStrictJsonSchema(contract) : inputJsonSchema(contract),
        strict,
      },
    };
  });
}

/**
 * The contracts `caller` may use, in the config's order, from the policy file's allowlist. Reads only
 * the allowlist: no key file is opened. A missing caller is a `ConfigurationError` listing the callers.
 */
export function callerContracts(input: {
  tools: readonly ToolContract<ToolInputSchema, z.ZodType>[];
  policyPath: string;
  caller: string;
}): AnyToolContract[] {
  const callers = policyCallers({ policyPath: input.policyPath });
  const allowed = ownValue(callers, input.caller);
  if (!allowed) {
    throw new ConfigurationError(
      `caller "${input.caller}" is not in the policy ${input.policyPath}; ` +
        `use one of: ${Object.keys(callers).join(', ') || '(none)'}`,
    );
  }
  const registry = createToolRegistry({ tools: input.tools });
  return registry.names.filter((name) => allowed.tools.includes(name)).map((name) => registry.get(name)!);
}

/** The policy file's callers and their allowlists, checked against the policy schema. */
export function policyCallers(input: { policyPath: string }): Record<string, { tools: string[] }> {
  const { policyPath } = input;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(policyPath, 'utf8'));
  } catch (error) {
    throw new ConfigurationError(
      `policy file ${policyPath}: cannot be read as JSON (${(error as Error).message})`,
    );
  }
  const parsed = policyFileSchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(top level)'}: ${issue.message}`,
    );
    throw new ConfigurationError(`policy file ${policyPath}: ${problems.join('; ')}`);
  }
  return parsed.data.callers;
}
