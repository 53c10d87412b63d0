/** The figures of one sample set. */
export interface Summary {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** The p-quantile (0..1) of sorted values, interpolated between the closest ranks. */
export function quantile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * p;
  const below = Math.floor(position);
  const above = Math.ceil(position);
  const low = sorted[below]!;
  const high = sorted[above]!;
  return low + (high - low) * (position - below);
}

/** Sorted copy, ascending. */
export function sortedCopy(samples: readonly number[]): number[] {
  return [...samples].sort((a, b) => a - b);
}

/** Summarises samples; every figure is NaN when there are none. */
export function summarize(samples: readonly number[]): Summary {
  const sorted = sortedCopy(samples);
  const n = sorted.length;
  return {
    n,
    p50: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    p99: quantile(sorted, 0.99),
    mean: n === 0 ? Number.NaN : sorted.reduce((sum, value) => sum + value, 0) / n,
    min: n === 0 ? Number.NaN : sorted[0]!,
    max: n === 0 ? Number.NaN : sorted[n - 1]!,
  };
}
