/** Risk levels from least to most dangerous; the order is the contract. */
export const riskLevels = ['read', 'reversible', 'irreversible', 'critical'] as const;

/** How much damage a call could do if it were wrong. */
export type RiskLevel = (typeof riskLevels)[number];

/** The level's rank: read 0, reversible 1, irreversible 2, critical 3 (the `RiskLevel` search attribute). */
export function riskRank(level: RiskLevel): number {
  return riskLevels.indexOf(level);
}
