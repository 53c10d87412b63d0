import { createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { publicKeyHex, signValue, verifyWithNode } from '../keys/key-files';

/** What a session vouches for when it admits a proposal: this proposal, for this call, in this session. */
export interface AdmissionClaims {
  session: string;
  proposalId: string;
  callId: string;
}

/**
 * Admission tickets bind a call to its session's admission (DESIGN.md, step 1): the session asks the
 * worker to sign one for each proposal it admits, the client starts the call with it, and the worker
 * that evaluates the call checks it. A harness holding the caller's key can start a call workflow
 * directly, but cannot make a ticket, so its call never runs (`SESSION_REQUIRED`). Signed with the
 * minter's key (kind `admission`, so a ticket can never pass for a credential): only workers hold it.
 */
export interface AdmissionTickets {
  issue(claims: AdmissionClaims): string;
  holds(input: { claims: AdmissionClaims; ticket: string | undefined }): boolean;
}

export function createAdmissionTickets(input: { privateKey: KeyObject }): AdmissionTickets {
  const keyHex = publicKeyHex(createPublicKey(input.privateKey));
  const value = (claims: AdmissionClaims): AdmissionClaims => ({
    session: claims.session,
    proposalId: claims.proposalId,
    callId: claims.callId,
  });
  return {
    issue: (claims) => signValue({ kind: 'admission', value: value(claims), privateKey: input.privateKey }),
    holds: ({ claims, ticket }) =>
      typeof ticket === 'string' &&
      verifyWithNode({ kind: 'admission', value: value(claims), signature: ticket, publicKeyHex: keyHex }),
  };
}
