import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { admissionTicketLifetimeMs, createAdmissionTickets } from './admission-tickets';
import { signValue } from '../keys/key-files';

const claims = { session: 'conversation-1', proposalId: 'p-1', callId: 'tc-1', proposalDigest: 'd-1' };
const issuedAt = 1_800_000_000_000;

describe('admission tickets', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const tickets = createAdmissionTickets({ privateKey });
  const ticket = tickets.issue(claims, issuedAt);

  it('hold for the proposal, call and session they were issued for, for a run started soon after', () => {
    expect(tickets.holds({ claims, ticket, runStartedAtMs: issuedAt + 50 })).toBe(true);
    expect(tickets.holds({ claims, ticket, runStartedAtMs: issuedAt + admissionTicketLifetimeMs })).toBe(
      true,
    );
  });

  it('do not hold for a run started later with the same input (read from history), nor long before', () => {
    expect(tickets.holds({ claims, ticket, runStartedAtMs: issuedAt + admissionTicketLifetimeMs + 1 })).toBe(
      false,
    );
    expect(tickets.holds({ claims, ticket, runStartedAtMs: issuedAt - 60_000 })).toBe(false);
  });

  it('do not hold for another call, proposal, proposal digest or session, or when missing or altered', () => {
    const at = issuedAt + 50;
    for (const other of [
      { ...claims, callId: 'tc-2' },
      { ...claims, proposalId: 'p-2' },
      { ...claims, proposalDigest: 'd-2' },
      { ...claims, session: 'conversation-2' },
    ]) {
      expect(tickets.holds({ claims: other, ticket, runStartedAtMs: at })).toBe(false);
    }
    expect(tickets.holds({ claims, ticket: undefined, runStartedAtMs: at })).toBe(false);
    expect(tickets.holds({ claims, ticket: 'not a ticket', runStartedAtMs: at })).toBe(false);
    // The issue time is signed: moving it to fit a later run breaks the signature.
    const moved = ticket.replace(String(issuedAt), String(issuedAt + 600_000));
    expect(tickets.holds({ claims, ticket: moved, runStartedAtMs: issuedAt + 600_050 })).toBe(false);
  });

  it('are not made by another key, nor by a signature of another kind over the same claims', () => {
    const at = issuedAt + 50;
    const other = createAdmissionTickets({ privateKey: generateKeyPairSync('ed25519').privateKey });
    expect(tickets.holds({ claims, ticket: other.issue(claims, issuedAt), runStartedAtMs: at })).toBe(false);
    const value = { ...claims, issuedAtMs: issuedAt };
    for (const kind of ['credential', 'proposal'] as const) {
      const forged = `${issuedAt}.${signValue({ kind, value, privateKey })}`;
      expect(tickets.holds({ claims, ticket: forged, runStartedAtMs: at })).toBe(false);
    }
  });
});
