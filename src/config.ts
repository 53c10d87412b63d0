import { existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { require as requireTypeScript } from 'tsx/cjs/api';
import type { z } from 'zod';
import { ConfigurationError } from './policy/load-policy';
import type { ImplementedTool } from './tools/define-tool-implementation';
import type { ToolContract, ToolInputSchema } from './tools/define-tool';

/** A deployment of toolgate: your tools, your workflows module and your policy file. */
export interface ToolGateConfig {
  /** The tool contracts (the same list your workflows module passes to `createToolCallWorkflow`). */
  tools: readonly ToolContract<ToolInputSchema, z.ZodType>[];
  /** Your workflows module, relative to the config file: it exports `toolCall`. */
  workflowsPath: string;
  /** Your policy file (JSON), relative to the config file. */
  policyPath: string;
  /** Builds the tools' implementations; called by workers only, so clients never open backends. */
  implementations: () => readonly ImplementedTool[] | Promise<readonly ImplementedTool[]>;
  /** The SQLite audit store, relative to the config file (default `.toolgate/audit.sqlite`). */
  auditPath?: string;
  /** Where key files are, relative to the config file (default `.toolgate/keys`); the policy's key paths are relative to it. */
  keysDirectory?: string;
  temporal?: { address?: string; namespace?: string; taskQueue?: string };
}

/** Declares a config with its types checked; returns it unchanged. */
export function defineConfig(config: ToolGateConfig): ToolGateConfig {
  return config;
}

/** A config with every path made absolute. */
export interface LoadedConfig extends ToolGateConfig {
  source: string;
  auditPath: string;
  keysDirectory: string;
}

/**
 * Loads a config module (TypeScript or JavaScript, its default export). A missing file or field
 * throws a `ConfigurationError` naming the file, the field and the fix.
 */
export function loadConfig(input: { path: string }): LoadedConfig {
  const source = resolve(input.path);
  if (!existsSync(source)) {
    throw new ConfigurationError(
      `config file ${source}: not found; pass --config <file> or set TOOLGATE_CONFIG (see README, "Your own tools")`,
    );
  }
  // tsx loads a TypeScript config (and what it imports) wherever this runs: the CLI, a test, a script.
  const loaded = requireTypeScript(source, __filename) as { default?: ToolGateConfig } & ToolGateConfig;
  const config = loaded.default ?? loaded;
  const missing = (['tools', 'workflowsPath', 'policyPath', 'implementations'] as const).filter(
    (field) => config[field] === undefined,
  );
  if (missing.length) {
    throw new ConfigurationError(
      `config file ${source}: missing ${missing.join(', ')}; export default defineConfig({ tools, workflowsPath, policyPath, implementations })`,
    );
  }
  if (typeof config.implementations !== 'function') {
    throw new ConfigurationError(
      `config file ${source}: implementations must be a function returning the implementations`,
    );
  }
  const base = dirname(source);
  const absolute = (path: string): string => (isAbsolute(path) ? path : resolve(base, path));
  return {
    ...config,
    source,
    workflowsPath: absolute(config.workflowsPath),
    policyPath: absolute(config.policyPath),
    auditPath: absolute(config.auditPath ?? '.toolgate/audit.sqlite'),
    keysDirectory: absolute(config.keysDirectory ?? '.toolgate/keys'),
  };
}
