import { createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { publicKeyHex, signValue, verifyWithNode } from '../keys/key-files';

/**
 * What a session vouches for when it admits a proposal: this proposal (its digest), for this call,
 * in this session, at this time.
 */
export interface AdmissionClaims {
  session: string;
  proposalId: string;
  callId: string;
  /** SHA-256 of the canonical proposal: another proposal under the same id never passes. */
  proposalDigest: string;
}

/**
 * How long after its issue a ticket starts a call: the client starts the call at once (it retries
 * for 30 s at most), and the bound is checked against the run's start time, which the server sets,
 * so a worker that is slow to pick the call up never breaks it. A run started later with an old
 * ticket (its previous run closed, the input read from history) is `SESSION_REQUIRED`.
 */
export const admissionTicketLifetimeMs = 120_000;
/** A run may start this much before the ticket's issue time (clocks of workers and server differ). */
export const admissionClockSkewMs = 5_000;

/**
 * Admission tickets bind a call to its session's admission (docs/design.md, step 1): the session asks the
 * worker to sign one for each proposal it admits, the client starts the call with it, and the worker
 * that evaluates the call checks it. A harness holding the caller's key can start a call workflow
 * directly, but cannot make a ticket, so its call never runs (`SESSION_REQUIRED`). Signed with the
 * minter's key (kind `admission`, so a ticket can never pass for a credential): only workers hold it.
 * A ticket is `<issued at, ms>.<signature>`.
 */
export interface AdmissionTickets {
  issue(claims: AdmissionClaims, issuedAtMs: number): string;
  /** Whether the ticket holds for these claims and a run that started at `runStartedAtMs`. */
  holds(input: { claims: AdmissionClaims; ticket: string | undefined; runStartedAtMs: number }): boolean;
}

export function createAdmissionTickets(input: { privateKey: KeyObject }): AdmissionTickets {
  const keyHex = publicKeyHex(createPublicKey(input.privateKey));
  const value = (claims: AdmissionClaims, issuedAtMs: number) => ({
    session: claims.session,
    proposalId: claims.proposalId,
    callId: claims.callId,
    proposalDigest: claims.proposalDigest,
    issuedAtMs,
  });
  return {
    issue: (claims, issuedAtMs) =>
      `${issuedAtMs}.${signValue({ kind: 'admission', value: value(claims, issuedAtMs), privateKey: input.privateKey })}`,
    holds: ({ claims, ticket, runStartedAtMs }) => {
      if (typeof ticket !== 'string') return false;
      const match = /^(\d{1,15})\.([A-Za-z0-9_-]+)$/.exec(ticket);
      if (!match) return false;
      const issuedAtMs = Number(match[1]);
      const age = runStartedAtMs - issuedAtMs;
      if (age < -admissionClockSkewMs || age > admissionTicketLifetimeMs) return false;
      return verifyWithNode({
        kind: 'admission',
        value: value(claims, issuedAtMs),
        signature: match[2]!,
        publicKeyHex: keyHex,
      });
    },
  };
}
