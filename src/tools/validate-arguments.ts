import { z } from 'zod';
import type { AnyToolContract } from './define-tool';
import { unwrap } from './define-tool';
import { ownValue } from '../shared/own-records';

/** One failing field, as the model is told about it. */
export interface ArgumentIssue {
  field: string;
  problem: string;
  description?: string;
  acceptedValues?: readonly unknown[];
}

/** Validated arguments, or every failing field at once. */
export type ArgumentValidation =
  { ok: true; args: Record<string, unknown> } | { ok: false; issues: ArgumentIssue[]; message: string };

/**
 * Validates parsed arguments against the tool's strict schema: no coercion, no unknown fields.
 * The message lists every failing field as `field: problem (the field's own description)`.
 */
export function validateArguments(input: { contract: AnyToolContract; value: unknown }): ArgumentValidation {
  // reportInput puts the offending value into each issue, so the message can quote it.
  const parsed = input.contract.input.safeParse(input.value, { reportInput: true });
  if (parsed.success) return { ok: true, args: parsed.data };
  const issues: ArgumentIssue[] = [];
  for (const issue of parsed.error.issues) issues.push(...describeIssue({ contract: input.contract, issue }));
  const lines = issues.map((issue) => {
    let line = `${issue.field}: ${issue.problem}`;
    if (issue.description) line += ` (${issue.description})`;
    return line;
  });
  const message = `The arguments for ${input.contract.name} are invalid; fix every field and call again. ${lines.join('; ')}.`;
  return { ok: false, issues, message };
}

function describeIssue(input: { contract: AnyToolContract; issue: z.core.$ZodIssue }): ArgumentIssue[] {
  const { issue } = input;
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const parent = fieldAt({ schema: input.contract.input, path });
    const accepted = parent instanceof z.ZodObject ? Object.keys(parent.shape) : [];
    return issue.keys.map((key) => ({
      field: [...path, key].join('.'),
      problem: `unknown field; remove it (accepted fields: ${accepted.join(', ')})`,
    }));
  }
  const field = fieldAt({ schema: input.contract.input, path });
  const description = field ? (field.description ?? unwrap(field).description) : undefined;
  const base: ArgumentIssue = {
    field: path.length ? path.join('.') : '(arguments)',
    problem: problemOf(issue),
  };
  if (description) base.description = description;
  if (issue.code === 'invalid_value') base.acceptedValues = issue.values;
  return [base];
}

function problemOf(issue: z.core.$ZodIssue): string {
  // A missing field shows up as whatever its schema expected (a type, an enum value): say what happened.
  if (issue.input === undefined && (issue.code === 'invalid_type' || issue.code === 'invalid_value')) {
    return 'required; it is missing';
  }
  switch (issue.code) {
    case 'invalid_type':
      if (issue.expected === 'int' && typeof issue.input === 'number') {
        return `must be an integer, got ${JSON.stringify(issue.input)}`;
      }
      return `must be ${article(issue.expected)}, got ${describeValue(issue.input)}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'too_small':
      return `${issue.message.replace(/^Too small: /, '')}, got ${JSON.stringify(issue.input)}`;
    case 'too_big':
      return `${issue.message.replace(/^Too big: /, '')}, got ${JSON.stringify(issue.input)}`;
    case 'invalid_format':
      return issue.format === 'regex' && 'pattern' in issue
        ? `must match ${String(issue.pattern)}, got ${JSON.stringify(issue.input)}`
        : `must be a valid ${issue.format}`;
    default:
      return issue.message;
  }
}

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

function describeValue(value: unknown): string {
  const text = JSON.stringify(value);
  const kind = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
  return text !== undefined && text.length <= 40 ? `${kind} ${text}` : kind;
}

function fieldAt(input: { schema: z.ZodType; path: readonly string[] }): z.ZodType | undefined {
  let current: z.ZodType | undefined = input.schema;
  for (const key of input.path) {
    const inner: z.ZodType | undefined = current ? unwrap(current) : undefined;
    if (inner instanceof z.ZodObject) current = ownValue(inner.shape as Record<string, z.ZodType>, key);
    else if (inner instanceof z.ZodArray) current = inner.element as z.ZodType;
    else return undefined;
  }
  return current;
}
