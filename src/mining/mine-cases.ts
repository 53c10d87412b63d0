import type { AuditRecord, AuditStore } from '../audit/audit-store';
import type { MinedCandidate, SessionEnd } from './mined-candidates';
import { findCandidates } from './mined-candidates';
import { readSessionEnds } from './session-ends';

/** What one mining run read and found. */
export interface MiningReport {
  /** The window, ISO 8601: from `since` (inclusive) to `until` (exclusive). */
  since: string;
  until: string;
  /** The candidates, most valuable first, at most `limit`. */
  candidates: MinedCandidate[];
  /** How many candidates there were before the limit. */
  found: number;
  /** How many audit records were written in the window. */
  recordsRead: number;
  /**
   * How many sessions with audited calls ended in the window and how many of them as a hand-off, or
   * `null` when neither `sessions` nor `sessionEnds` was given (hand-offs were not looked for).
   */
  sessionEnds: { read: number; handoffs: number } | null;
}

/** How many candidates a run returns unless told otherwise. */
export const defaultMiningLimit = 50;

/**
 * Mines the audit store (and, with `sessions`, the sessions that ended, from the same store) from
 * `since` to `until` (default now) for candidate cases: hand-offs right after a tool call, denied
 * approvals, loops, rejected arguments; ranked by value, each with why. Reads only: it writes nothing
 * and labels nothing.
 */
export async function mineCases(input: {
  audit: AuditStore;
  /** Whether to read the sessions that ended (hand-offs) from the audit store's sessions. */
  sessions?: boolean;
  /** Session ends known otherwise (recorded by your harness), added to those read from the store. */
  sessionEnds?: readonly SessionEnd[];
  since: Date;
  until?: Date;
  limit?: number;
}): Promise<MiningReport> {
  const until = input.until ?? new Date();
  if (!(input.since.getTime() < until.getTime())) {
    throw new RangeError(
      `mineCases: since (${input.since.toISOString()}) must be before until (${until.toISOString()})`,
    );
  }
  const since = input.since.toISOString();
  const records = await input.audit.recordsBetween({ since, until: until.toISOString() });
  // Each session is read once, before the candidates are found (which reads them synchronously).
  const bySession = new Map<string, readonly AuditRecord[]>();
  const readSession = async (session: string): Promise<readonly AuditRecord[]> => {
    let found = bySession.get(session);
    if (!found) {
      found = await input.audit.recordsOfSession(session);
      bySession.set(session, found);
    }
    return found;
  };
  const read = input.sessions
    ? await readSessionEnds({
        sessions: input.audit.sessions,
        since: input.since,
        until,
        // A session with no audited call cannot have been handed off right after one.
        worthReading: async (session) => (await readSession(session)).length > 0,
      })
    : undefined;
  const ends = read || input.sessionEnds ? [...(read ?? []), ...(input.sessionEnds ?? [])] : undefined;
  for (const end of ends ?? []) if (end.reason === 'handoff') await readSession(end.session);
  const { candidates, found } = findCandidates({
    records,
    sessionEnds: ends ?? [],
    recordsOfSession: (session) => bySession.get(session) ?? [],
    limit: input.limit ?? defaultMiningLimit,
  });
  return {
    since,
    until: until.toISOString(),
    candidates,
    found,
    recordsRead: records.length,
    sessionEnds: ends
      ? { read: ends.length, handoffs: ends.filter((end) => end.reason === 'handoff').length }
      : null,
  };
}
