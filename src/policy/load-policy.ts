import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import { unwrap } from '../tools/define-tool';
import type { ToolRegistry } from '../tools/tool-registry';
import type { CallerPolicy, PolicyFile } from './policy-schema';
import { policyFileSchema } from './policy-schema';

/** Something an operator configured is wrong; the message names the file, the field and the fix. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

/** A policy as workers hold it: the file's content, its version label and its digest. */
export interface LoadedPolicy {
  readonly source: string;
  readonly version: string;
  readonly digest: string;
  readonly file: PolicyFile;
  callerPolicy(caller: string): CallerPolicy | null;
}

/** Reads and checks a policy file; a bad file throws a `ConfigurationError` that says what to fix. */
export function loadPolicyFile(input: { path: string; registry: ToolRegistry }): LoadedPolicy {
  let text: string;
  try {
    text = readFileSync(input.path, 'utf8');
  } catch (error) {
    throw new ConfigurationError(
      `policy file ${input.path}: cannot be read (${(error as Error).message}); check the path you configured`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigurationError(`policy file ${input.path}: not valid JSON (${(error as Error).message})`);
  }
  return checkPolicy({ source: input.path, value: json, registry: input.registry });
}

/** Checks a policy value against the schema and the registry; the source names it in errors. */
export function checkPolicy(input: { source: string; value: unknown; registry: ToolRegistry }): LoadedPolicy {
  const parsed = policyFileSchema.safeParse(input.value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(top level)'}: ${issue.message}`,
    );
    throw new ConfigurationError(`policy file ${input.source}: ${problems.join('; ')}`);
  }
  const file = parsed.data;
  const problems: string[] = [];
  const known = input.registry.names;
  for (const [caller, policy] of Object.entries(file.callers)) {
    policy.tools.forEach((tool, index) => {
      if (!input.registry.get(tool)) {
        problems.push(
          `callers.${caller}.tools.${index}: unknown tool "${tool}"; known tools: ${known.join(', ')}`,
        );
      }
    });
    for (const [tool, fields] of Object.entries(policy.limits ?? {})) {
      const contract = input.registry.get(tool);
      if (!contract) {
        problems.push(`callers.${caller}.limits.${tool}: unknown tool; known tools: ${known.join(', ')}`);
        continue;
      }
      const shape = contract.input.shape as Record<string, z.ZodType>;
      for (const field of Object.keys(fields)) {
        const schema = shape[field];
        if (!schema || !(unwrap(schema) instanceof z.ZodNumber)) {
          const numeric = Object.keys(shape).filter(
            (key) => unwrap(shape[key] as z.ZodType) instanceof z.ZodNumber,
          );
          problems.push(
            `callers.${caller}.limits.${tool}.${field}: not a numeric input field of ${tool}; ` +
              `numeric fields: ${numeric.join(', ') || 'none'}`,
          );
        }
      }
    }
  }
  if (problems.length) throw new ConfigurationError(`policy file ${input.source}: ${problems.join('; ')}`);
  const digest = sha256Hex(canonicalJson(file));
  const version = `${file.version ?? 'unversioned'}@${digest.slice(0, 12)}`;
  return {
    source: input.source,
    version,
    digest,
    file,
    callerPolicy: (caller) => file.callers[caller] ?? null,
  };
}
