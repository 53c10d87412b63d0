// The Vercel AI SDK's tools: `tool()` objects whose `execute` is a governed toolgate call, so
// `generateText`/`streamText` run every tool call the model makes through the pipeline.
import type { JSONValue, Tool } from 'ai';
import { jsonSchema, tool } from 'ai';
import type { ToolResult } from '../shared/tool-result';
import { inputJsonSchema } from './json-schema';
import type { ProviderSession } from './provider-calls';
import { isErrorResult, objectArguments, runModelToolCalls } from './provider-calls';

/** An AI SDK tool that runs through toolgate: its input as the model sent it, its output the `ToolResult`. */
export type ToolGateAiSdkTool = Tool<Record<string, unknown>, ToolResult>;

/**
 * The caller's tools (only those its policy allows) as an AI SDK tool set for one session. The input
 * schema is toolgate's own JSON Schema, not validated by the SDK: toolgate validates, so a bad argument
 * reaches the model as `INVALID_ARGUMENTS`, audited. The model reads the `ToolResult`, marked as an
 * error (`error-json`) for every code but OK and APPROVAL_PENDING.
 */
export function aiSdkTools(input: ProviderSession): Record<string, ToolGateAiSdkTool> {
  const tools: Record<string, ToolGateAiSdkTool> = {};
  for (const contract of input.client.toolsFor(input.caller)) {
    tools[contract.name] = tool<Record<string, unknown>, ToolResult, Record<string, never>>({
      description: contract.description,
      inputSchema: jsonSchema<Record<string, unknown>>(inputJsonSchema(contract)),
      execute: async (args) => {
        const [result] = await runModelToolCalls({
          ...input,
          calls: [{ name: contract.name, arguments: objectArguments(args) }],
        });
        return result!;
      },
      toModelOutput: ({ output }) => {
        const value = output as unknown as JSONValue;
        return isErrorResult(output) ? { type: 'error-json', value } : { type: 'json', value };
      },
    });
  }
  return tools;
}
