// toolgate's config for the ticketing domain: the tools, named once, the policy and the implementations.
// Paths are relative to this file; keys and the audit store live in .toolgate/ (the defaults).
import { defineConfig } from 'toolgate';
import { ticketContracts } from './tickets-contracts.js';
import { createTicketTools } from './tickets-implementations.js';

export default defineConfig({
  tools: ticketContracts,
  policyPath: './policy.json',
  implementations: () =>
    createTicketTools({ ticketsUrl: process.env.TICKETS_URL ?? 'http://127.0.0.1:4200' }),
});
