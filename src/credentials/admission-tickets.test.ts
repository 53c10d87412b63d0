import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createAdmissionTickets } from './admission-tickets';
import { signValue } from '../keys/key-files';

const claims = { session: 'conversation-1', proposalId: 'p-1', callId: 'tc-1' };

describe('admission tickets', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const tickets = createAdmissionTickets({ privateKey });

  it('hold for the proposal, call and session they were issued for', () => {
    expect(tickets.holds({ claims, ticket: tickets.issue(claims) })).toBe(true);
  });

  it('do not hold for another call, proposal or session, or when missing', () => {
    const ticket = tickets.issue(claims);
    expect(tickets.holds({ claims: { ...claims, callId: 'tc-2' }, ticket })).toBe(false);
    expect(tickets.holds({ claims: { ...claims, proposalId: 'p-2' }, ticket })).toBe(false);
    expect(tickets.holds({ claims: { ...claims, session: 'conversation-2' }, ticket })).toBe(false);
    expect(tickets.holds({ claims, ticket: undefined })).toBe(false);
    expect(tickets.holds({ claims, ticket: 'not a signature' })).toBe(false);
  });

  it('are not made by another key, nor by a signature of another kind over the same claims', () => {
    const other = createAdmissionTickets({ privateKey: generateKeyPairSync('ed25519').privateKey });
    expect(tickets.holds({ claims, ticket: other.issue(claims) })).toBe(false);
    const asCredential = signValue({ kind: 'credential', value: claims, privateKey });
    const asProposal = signValue({ kind: 'proposal', value: claims, privateKey });
    expect(tickets.holds({ claims, ticket: asCredential })).toBe(false);
    expect(tickets.holds({ claims, ticket: asProposal })).toBe(false);
  });
});
