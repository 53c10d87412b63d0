import { canonicalJson } from './canonical-json';

/** One top-level field whose value an edit changed; a side is absent when the field was. */
export interface ArgumentChange {
  field: string;
  proposed?: unknown;
  edited?: unknown;
}

/**
 * The top-level fields whose values differ between the proposed and the edited arguments, in the
 * order they first appear. Pure and sandbox-safe: the workflow tells the model with it, the console
 * shows approvers with it.
 */
export function argumentChanges(
  proposed: Record<string, unknown>,
  edited: Record<string, unknown>,
): ArgumentChange[] {
  return [...new Set([...Object.keys(proposed), ...Object.keys(edited)])]
    .filter((field) => canonicalJson(proposed[field] ?? null) !== canonicalJson(edited[field] ?? null))
    .map((field) => ({
      field,
      ...(proposed[field] !== undefined ? { proposed: proposed[field] } : {}),
      ...(edited[field] !== undefined ? { edited: edited[field] } : {}),
    }));
}
