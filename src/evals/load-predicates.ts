// A case file's own predicates: a module of the team's (TypeScript through tsx, or JavaScript) whose
// default export, `predicates` export, or named exports are predicates, e.g. what an order id is.
import { ConfigurationError } from '../policy/load-policy';
import type { ArgumentPredicates } from './argument-matchers';

/**
 * Loads the predicates a module exports: its default export, else its `predicates` export, else its
 * named exports; each a function of the value or `{description, test}`. Anything else is a
 * `ConfigurationError` naming the module and the export.
 */
export function loadPredicatesModule(input: { path: string; namedBy: string }): ArgumentPredicates {
  const { path } = input;
  let loaded: unknown;
  try {
    loaded = requireModule(path);
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    throw new ConfigurationError(
      `predicates module ${path} (named by ${input.namedBy}): cannot be loaded (${(error as Error).message})`,
    );
  }
  const exports = (typeof loaded === 'object' && loaded !== null ? loaded : {}) as Record<string, unknown>;
  const candidate = exports.default ?? exports.predicates ?? exports;
  if (typeof candidate !== 'object' || candidate === null) {
    throw new ConfigurationError(
      `predicates module ${path}: export an object of predicates, e.g. export default { orderId: (value) => ... }`,
    );
  }
  const predicates: Record<string, ArgumentPredicates[string]> = {};
  for (const [name, value] of Object.entries(candidate)) {
    if (name === '__esModule') continue;
    const record = value as { description?: unknown; test?: unknown } | null;
    if (typeof value === 'function') predicates[name] = value as (value: unknown) => boolean;
    else if (
      typeof record === 'object' &&
      record !== null &&
      typeof record.description === 'string' &&
      typeof record.test === 'function'
    ) {
      predicates[name] = record as ArgumentPredicates[string];
    } else {
      throw new ConfigurationError(
        `predicates module ${path}: ${name} is not a predicate; export a function of the value, ` +
          'or { description: "what passes", test: (value) => boolean }',
      );
    }
  }
  return predicates;
}

/** JavaScript with Node's own loader; TypeScript through tsx, the optional peer a TypeScript config needs too. */
function requireModule(path: string): unknown {
  // A predicates module is named at run time, by path: require is the loader here.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!/\.[mc]?ts$/.test(path)) return require(path);
  let tsx: { require: (id: string, from: string) => unknown };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- tsx is an optional peer dependency
    tsx = require('tsx/cjs/api') as typeof tsx;
  } catch {
    throw new ConfigurationError(
      `predicates module ${path}: a TypeScript module needs tsx (npm install --save-dev tsx), or write it as .js`,
    );
  }
  return tsx.require(path, __filename);
}
