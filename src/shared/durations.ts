/** How long an approval waits when the policy names no window for the level. */
export const defaultApprovalWindowMs = 4 * 60 * 60 * 1000;

const durationUnits: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A policy duration (`4h`, `30s`, or milliseconds) in milliseconds. */
export function durationMs(value: number | string): number {
  if (typeof value === 'number') return value;
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(value);
  return match ? Number(match[1]) * (durationUnits[match[2]!] ?? 1) : defaultApprovalWindowMs;
}
