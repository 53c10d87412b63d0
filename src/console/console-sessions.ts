import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/*
 * The approvals console's sign-in state, in memory: login challenges and short-lived sessions. A
 * restart signs everybody out, which is the safe direction. Nothing here can decide a call: a session
 * only lets a browser read the queue and relay what its own key signed.
 *
 * Challenges are stateless: each one carries a MAC (a per-process secret) over its fields in its
 * nonce, so issuing one stores nothing and a flood of challenge requests can neither fill a table nor
 * evict the challenge a real approver is answering. What is stored is the nonce of each challenge
 * answered with a valid signature, until it expires, so it is answered once; only an enrolled key
 * can add to that set, and each entry lives `challengeTtlMs` at most.
 */

/** What an approver's browser signs (kind `login`) to sign in: one nonce, this console's origin, one approver's key. */
export interface LoginChallenge {
  approver: string;
  keyId: string;
  /** Random, then the console's MAC over the challenge: only this console process can have issued it. */
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
  /** A fresh challenge; nothing is stored until it is answered. */
  issueChallenge(input: { approver: string; keyId: string; origin: string }): LoginChallenge;
  /**
   * The challenge as this console issued it, when `value` is one (every field as issued, the MAC
   * holds), it has not expired and it was not answered yet; undefined otherwise. Marks nothing.
   */
  checkChallenge(value: unknown): LoginChallenge | undefined;
  /**
   * Marks a checked challenge answered; false when it was answered meanwhile (or has expired), so two
   * sign-ins racing with one signed challenge open one session.
   */
  consumeChallenge(challenge: LoginChallenge): boolean;
  /** Opens a session for an approver who answered a challenge. */
  open(input: { approver: string; keyId: string }): ConsoleSession;
  /** The live session with this id; undefined when unknown or expired. */
  find(id: string | undefined): ConsoleSession | undefined;
  close(id: string): void;
  /** True when `token` is the session's CSRF token (compared in constant time). */
  csrfMatches(session: ConsoleSession, token: string | undefined): boolean;
}

/** Makes an in-memory session store; `now` is injectable so tests can move time. */
export function createSessionStore(input: {
  sessionTtlMs: number;
  challengeTtlMs: number;
  now?: () => number;
}): SessionStore {
  const now = input.now ?? Date.now;
  const secret = randomBytes(32);
  /** Nonces of answered challenges, with when each expires. */
  const answered = new Map<string, number>();
  const sessions = new Map<string, ConsoleSession>();
  const token = (): string => randomBytes(32).toString('base64url');
  const macOf = (fields: Omit<LoginChallenge, 'nonce'>, random: string): string =>
    createHmac('sha256', secret)
      .update(JSON.stringify([random, fields.approver, fields.keyId, fields.origin, fields.expiresAt]))
      .digest('base64url');
  const sweep = (): void => {
    const at = now();
    for (const [nonce, expiresAt] of answered) if (expiresAt <= at) answered.delete(nonce);
    for (const [id, session] of sessions) if (session.expiresAt <= at) sessions.delete(id);
  };
  const checkChallenge = (value: unknown): LoginChallenge | undefined => {
    if (typeof value !== 'object' || value === null) return undefined;
    const { approver, keyId, nonce, origin, expiresAt } = value as Record<string, unknown>;
    if (
      typeof approver !== 'string' ||
      typeof keyId !== 'string' ||
      typeof nonce !== 'string' ||
      typeof origin !== 'string' ||
      typeof expiresAt !== 'string'
    ) {
      return undefined;
    }
    const [random, mac, extra] = nonce.split('.');
    if (random === undefined || mac === undefined || extra !== undefined) return undefined;
    const expected = Buffer.from(macOf({ approver, keyId, origin, expiresAt }, random));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    const expiry = Date.parse(expiresAt);
    if (!(expiry > now()) || answered.has(nonce)) return undefined;
    return { approver, keyId, nonce, origin, expiresAt };
  };
  return {
    issueChallenge: ({ approver, keyId, origin }) => {
      const expiresAt = new Date(now() + input.challengeTtlMs).toISOString();
      const random = randomBytes(24).toString('base64url');
      const nonce = `${random}.${macOf({ approver, keyId, origin, expiresAt }, random)}`;
      return { approver, keyId, nonce, origin, expiresAt };
    },
    checkChallenge,
    consumeChallenge: (challenge) => {
      sweep();
      if (!checkChallenge(challenge)) return false;
      answered.set(challenge.nonce, Date.parse(challenge.expiresAt));
      return true;
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
