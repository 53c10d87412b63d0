import { z } from 'zod';
import type { AnyToolContract, ToolContract, ToolInputSchema } from './define-tool';
import { modelInputSchema, ToolDefinitionError } from './define-tool';

/** A provider-neutral tool definition; `parameters` is generated from the very schema that validates. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** The tools one deployment knows, by name. Pure: workflows build one from the contracts. */
export interface ToolRegistry {
  readonly names: readonly string[];
  get(name: string): AnyToolContract | undefined;
  /** Definitions to send to the model, only for the tools named (all when omitted), in registry order. */
  definitions(input?: { only?: readonly string[] }): ToolDefinition[];
}

/** Builds a registry; two tools with one name are refused at start-up. */
export function createToolRegistry(input: {
  tools: readonly ToolContract<ToolInputSchema, z.ZodType>[];
}): ToolRegistry {
  const byName = new Map<string, AnyToolContract>();
  for (const tool of input.tools) {
    if (byName.has(tool.name)) {
      throw new ToolDefinitionError(`tool "${tool.name}" is defined twice; tool names must be unique`);
    }
    byName.set(tool.name, tool);
  }
  const definitionCache = new Map<string, ToolDefinition>();
  const definitionOf = (tool: AnyToolContract): ToolDefinition => {
    let definition = definitionCache.get(tool.name);
    if (!definition) {
      const { $schema: _schema, ...parameters } = z.toJSONSchema(modelInputSchema(tool)) as Record<
        string,
        unknown
      >;
      definition = { name: tool.name, description: tool.description, parameters };
      definitionCache.set(tool.name, definition);
    }
    return definition;
  };
  return {
    names: [...byName.keys()],
    get: (name) => byName.get(name),
    definitions: (options) => {
      const only = options?.only ? new Set(options.only) : undefined;
      return [...byName.values()].filter((tool) => !only || only.has(tool.name)).map(definitionOf);
    },
  };
}
