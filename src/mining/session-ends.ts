// How sessions ended, read from the audit store's sessions (issue 28): a session's end reason
// (`handoff`, `idle`, ...) and when it closed are part of its state there, kept as long as the audit.
import type { SessionStore } from '../sessions/store';
import type { SessionEnd } from './mined-candidates';

/**
 * The sessions that closed from `since` (inclusive) to `until` (exclusive), with their end reason.
 * `worthReading` skips a session (mining reads only those with audited calls). Never changes anything.
 */
export async function readSessionEnds(input: {
  sessions: Pick<SessionStore, 'closedBetween'>;
  since: Date;
  until: Date;
  worthReading?: (session: string) => boolean | Promise<boolean>;
}): Promise<SessionEnd[]> {
  const closed = await input.sessions.closedBetween({
    since: input.since.toISOString(),
    until: input.until.toISOString(),
  });
  const ends: SessionEnd[] = [];
  for (const session of closed) {
    if (session.closedAt === undefined) continue;
    if (input.worthReading && !(await input.worthReading(session.session))) continue;
    ends.push({
      session: session.session,
      ...(session.caller !== undefined ? { caller: session.caller } : {}),
      reason: session.closedReason ?? 'ended',
      endedAt: session.closedAt,
    });
  }
  return ends;
}
