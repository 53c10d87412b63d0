/**
 * Records keyed by names from outside (a tool, caller or approver name the model, a harness or an
 * approver chose). A plain object answers `constructor`, `toString` or `__proto__` from
 * Object.prototype; these helpers never do. Pure and sandbox-safe.
 */

/** The value stored under `key` as the record's own property, or undefined: never an inherited one. */
export function ownValue<T>(
  record: Readonly<Record<string, T>> | null | undefined,
  key: string,
): T | undefined {
  return record != null && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** A record without a prototype, holding a copy of `entries`: any name is a key like any other. */
export function nameRecord<T>(entries?: Readonly<Record<string, T>>): Record<string, T> {
  const record = Object.create(null) as Record<string, T>;
  if (entries) for (const key of Object.keys(entries)) record[key] = entries[key] as T;
  return record;
}
