import { z } from 'zod';
import { canonicalJson, digestOf } from '../shared/canonical-json';
import type { AnyToolContract } from './define-tool';
import { authoredRiskSourceOf } from './define-tool';
import { markUnrepresentable } from './unrepresentable-types';

/*
 * The digest an approval binds (docs/design.md, Approval: a decision's `contractDigest`): what would run
 * when the call runs, and nothing a model only reads. It changes when the input or output schema
 * changes what it accepts, when the effect, the domain codes or the idempotency fields change, when
 * the source of the resource or summary function changes, and when the risk function changes (a risk
 * function that now says "reversible" must not run under an approval given for "irreversible"); a
 * description, a title or an example in a schema does not change it, so a wording deploy leaves
 * waiting calls' rounds open.
 *
 * The risk function: `defineToolContract` wraps the author's function (it maps a write's "read" to
 * "reversible"); the digest takes the author's source (`authoredRiskSourceOf`), and the level it gives
 * each of the contract's own `examples`, so a moved threshold shows even when it is a constant the
 * function closes over.
 *
 * The amount function (a write's, counted by the policy's amount limits), when the tool declares one:
 * its source and the amount it gives each example, for the same reason. A tool that declares none is
 * digested exactly as before amounts existed (no key for it at all), so its digest never moved.
 */

// Keywords that change no validation: a model reads them, a call never runs differently for them.
const annotationKeywords = new Set(['$schema', 'description', 'title', 'examples', 'deprecated', '$comment']);
// Keywords whose value maps names (data) to schemas: the names are kept whole, the schemas cleaned.
const schemaMapKeywords = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
]);
// Keywords whose value is instance data, never a schema: kept as they are (sets sorted).
const dataKeywords = new Set(['const', 'default']);
const setKeywords = new Set(['enum', 'required']);

// A contract is fixed for the life of its registry: its digest is computed once per contract object.
const digests = new WeakMap<AnyToolContract, string>();

/**
 * The SHA-256 of the tool's contract as it would run (see above), cached per contract object. Pure
 * and deterministic: two workers (and the credential minter) holding the same build of a contract
 * compute the same digest. A function's source is its text as loaded (`toString()`), so a constant it
 * closes over is not in it, and a worker run from the sources and one run from the build differ; the
 * risk levels the contract gives its own examples are in it, so a moved threshold shows on an example
 * that crosses it.
 */
export function contractDigestOf(input: { contract: AnyToolContract }): string {
  const { contract } = input;
  const known = digests.get(contract);
  if (known !== undefined) return known;
  const digest = digestOf(contractDigestInputOf(contract));
  digests.set(contract, digest);
  return digest;
}

/**
 * What `contractDigestOf` hashes (as canonical JSON): exported so a test can see which keys a tool's
 * digest covers, e.g. that a tool without an amount function has no key for one.
 */
export function contractDigestInputOf(contract: AnyToolContract): Record<string, unknown> {
  return {
    name: contract.name,
    // A type JSON Schema cannot express (a date, a transform's result) is a marker naming it, not `{}`:
    // a change from or to one moves the digest, and a schema without one is written as it always was.
    input: withoutAnnotations(
      z.toJSONSchema(contract.input, { io: 'input', unrepresentable: markUnrepresentable }),
    ),
    output: withoutAnnotations(
      z.toJSONSchema(contract.output, { io: 'output', unrepresentable: markUnrepresentable }),
    ),
    effect: contract.effect,
    domainCodes: Object.keys(contract.domainCodes).sort(),
    idempotencyFields: contract.idempotencyFields ? [...contract.idempotencyFields].sort() : null,
    // Present only when declared, so a tool that binds nothing keeps the digest it always had.
    ...(contract.boundParameters ? { boundParameters: { ...contract.boundParameters } } : {}),
    ...(contract.untrustedOutput
      ? { untrustedOutput: contract.untrustedOutput === true ? true : [...contract.untrustedOutput].sort() }
      : {}),
    functions: {
      risk: authoredRiskSourceOf(contract) ?? contract.risk.toString(),
      resource: contract.resource.toString(),
      summarize: contract.summarize.toString(),
      ...(contract.amount ? { amount: contract.amount.toString() } : {}),
      // Present only when declared: who approves a call is part of what an approval binds.
      ...(contract.approvalRoute ? { approvalRoute: contract.approvalRoute.toString() } : {}),
    },
    riskOfExamples: riskOfExamples(contract),
    ...(contract.amount ? { amountOfExamples: amountOfExamples(contract, contract.amount) } : {}),
  };
}

/** The level the risk function gives each of the contract's examples, in order (none declared: empty). */
function riskOfExamples(contract: AnyToolContract): string[] {
  return (contract.examples ?? []).map((example) => {
    const parsed = contract.input.safeParse(example);
    if (!parsed.success) return '(invalid example)';
    try {
      return contract.risk({ args: parsed.data });
    } catch {
      return '(risk function threw)';
    }
  });
}

/** The amount the amount function gives each of the contract's examples, in order (as the risk levels). */
function amountOfExamples(
  contract: AnyToolContract,
  amount: NonNullable<AnyToolContract['amount']>,
): (number | string)[] {
  return (contract.examples ?? []).map((example) => {
    const parsed = contract.input.safeParse(example);
    if (!parsed.success) return '(invalid example)';
    try {
      return amount(parsed.data);
    } catch {
      return '(amount function threw)';
    }
  });
}

/** A JSON Schema without its annotations, sets (`enum`, `required`) in canonical order. */
function withoutAnnotations(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutAnnotations);
  if (!isRecord(schema)) return schema;
  const cleaned: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (annotationKeywords.has(keyword)) continue;
    if (dataKeywords.has(keyword)) cleaned[keyword] = value;
    else if (setKeywords.has(keyword) && Array.isArray(value)) cleaned[keyword] = sortedSet(value);
    else if (schemaMapKeywords.has(keyword) && isRecord(value)) {
      cleaned[keyword] = Object.fromEntries(
        Object.entries(value).map(([name, inner]) => [name, withoutAnnotations(inner)]),
      );
    } else cleaned[keyword] = withoutAnnotations(value);
  }
  return cleaned;
}

function sortedSet(values: readonly unknown[]): unknown[] {
  return values
    .map((value) => ({ value, key: canonicalJson(value) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ value }) => value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
