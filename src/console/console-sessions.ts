import { randomBytes, timingSafeEqual } from 'node:crypto';

/*
 * The approvals console's sign-in state, in memory: one-time login challenges and short-lived
 * sessions. A restart signs everybody out, which is the safe direction. Nothing here can decide a
 * call: a session only lets a browser read the queue and relay what its own key signed.
 */

/** What an approver's browser signs (kind `login`) to sign in: one nonce, this console's origin, one approver's key. */
export interface LoginChallenge {
  approver: string;
  keyId: string;
  nonce: string;
  /** The origin the browser signs from; the console accepts only its own. */
  origin: string;
  /** ISO time after which the challenge is refused. */
  expiresAt: string;
}

/** A signed-in approver: who, with which enrolled key, the CSRF token every POST must carry, and until when. */
export interface ConsoleSession {
  id: string;
  approver: string;
  keyId: string;
  csrfToken: string;
  /** Milliseconds since the epoch; the session ends then whatever happens. */
  expiresAt: number;
}

/** The console's challenges and sessions; every method is synchronous and never throws. */
export interface SessionStore {
  /** A fresh challenge, remembered until it is taken or expires. */
  issueChallenge(input: { approver: string; keyId: string; origin: string }): LoginChallenge;
  /** The challenge with this nonce, removed so it can be answered once; undefined when unknown or expired. */
  takeChallenge(nonce: string): LoginChallenge | undefined;
  /** Opens a session for an approver who answered a challenge. */
  open(input: { approver: string; keyId: string }): ConsoleSession;
  /** The live session with this id; undefined when unknown or expired. */
  find(id: string | undefined): ConsoleSession | undefined;
  close(id: string): void;
  /** True when `token` is the session's CSRF token (compared in constant time). */
  csrfMatches(session: ConsoleSession, token: string | undefined): boolean;
}

// Bounds memory: a flood of challenge requests evicts the oldest ones, never grows without end.
const maxChallenges = 1_000;

/** Makes an in-memory session store; `now` is injectable so tests can move time. */
export function createSessionStore(input: {
  sessionTtlMs: number;
  challengeTtlMs: number;
  now?: () => number;
}): SessionStore {
  const now = input.now ?? Date.now;
  const challenges = new Map<string, LoginChallenge>();
  const sessions = new Map<string, ConsoleSession>();
  const token = (): string => randomBytes(32).toString('base64url');
  const sweep = (): void => {
    const at = now();
    for (const [nonce, challenge] of challenges)
      if (Date.parse(challenge.expiresAt) <= at) challenges.delete(nonce);
    for (const [id, session] of sessions) if (session.expiresAt <= at) sessions.delete(id);
  };
  return {
    issueChallenge: ({ approver, keyId, origin }) => {
      sweep();
      while (challenges.size >= maxChallenges) challenges.delete(challenges.keys().next().value as string);
      const challenge: LoginChallenge = {
        approver,
        keyId,
        nonce: token(),
        origin,
        expiresAt: new Date(now() + input.challengeTtlMs).toISOString(),
      };
      challenges.set(challenge.nonce, challenge);
      return challenge;
    },
    takeChallenge: (nonce) => {
      const challenge = challenges.get(nonce);
      challenges.delete(nonce);
      return challenge && Date.parse(challenge.expiresAt) > now() ? challenge : undefined;
    },
    open: ({ approver, keyId }) => {
      sweep();
      const session: ConsoleSession = {
        id: token(),
        approver,
        keyId,
        csrfToken: token(),
        expiresAt: now() + input.sessionTtlMs,
      };
      sessions.set(session.id, session);
      return session;
    },
    find: (id) => {
      if (id === undefined) return undefined;
      const session = sessions.get(id);
      if (!session) return undefined;
      if (session.expiresAt <= now()) {
        sessions.delete(id);
        return undefined;
      }
      return session;
    },
    close: (id) => {
      sessions.delete(id);
    },
    csrfMatches: (session, candidate) => {
      if (candidate === undefined) return false;
      const expected = Buffer.from(session.csrfToken);
      const given = Buffer.from(candidate);
      return expected.length === given.length && timingSafeEqual(expected, given);
    },
  };
}
