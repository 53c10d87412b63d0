// The ticketing tools' implementations: they talk to the ticketing service over HTTP. Updates carry
// the call id as idempotency key and the credential toolgate minted for the attempt.
import { defineToolImplementation, toolRejection, transientToolError } from 'toolgate';
import type { ImplementedTool } from 'toolgate';
import type { KeyRecord } from './ticket-backend.js';
import { getTicketContract, updateTicketContract } from './tickets-contracts.js';
import type { Ticket } from './tickets-contracts.js';

/** One request to the service: a refusal with a code becomes a toolgate rejection, an outage a transient error. */
async function request<T>(input: {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: unknown;
}): Promise<T> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(input.url, {
      method: input.method ?? 'GET',
      headers: { 'content-type': 'application/json', ...input.headers },
      ...(input.body !== undefined ? { body: JSON.stringify(input.body) } : {}),
      signal: AbortSignal.timeout(5_000),
    });
    text = await response.text();
  } catch (error) {
    throw transientToolError({
      message: `The ticketing service did not answer: ${String(error)}`,
      cause: error,
    });
  }
  if (response.status >= 500) {
    throw transientToolError({ message: `The ticketing service answered ${response.status}.` });
  }
  const body = JSON.parse(text) as unknown;
  if (!response.ok) {
    const { code, message } = body as { code: string; message: string };
    throw toolRejection({ code, message });
  }
  return body as T;
}

/** The ticketing tools, bound to the service at `ticketsUrl`. */
export function createTicketTools(input: { ticketsUrl: string }): ImplementedTool[] {
  const base = input.ticketsUrl.replace(/\/+$/, '');
  const readTicket = (id: string) => request<Ticket>({ url: `${base}/tickets/${encodeURIComponent(id)}` });
  const lookup = async (key: string): Promise<KeyRecord | undefined> => {
    try {
      return await request<KeyRecord>({ url: `${base}/updates/by-key/${encodeURIComponent(key)}` });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'NOT_APPLIED') return undefined;
      throw error;
    }
  };

  const getTicket = defineToolImplementation(getTicketContract, {
    execute: ({ args }) => readTicket(args.ticket_id),
  });

  const updateTicket = defineToolImplementation(updateTicketContract, {
    check: async ({ args }) => {
      const ticket = await readTicket(args.ticket_id);
      if (ticket.status === 'closed') {
        throw toolRejection({
          code: 'TICKET_CLOSED',
          message: `Ticket ${ticket.ticket_id} is closed and cannot be changed. Tell the user; do not retry.`,
        });
      }
    },
    // What the approver reads: the ticket as it is now and exactly what changes.
    preview: async ({ args }) => {
      const ticket = await readTicket(args.ticket_id);
      return {
        action: `update ${ticket.ticket_id} "${ticket.title}"`,
        status: `${ticket.status} -> ${args.changes.status ?? ticket.status}`,
        priority: `${ticket.priority} -> ${args.changes.priority ?? ticket.priority}`,
        tags: args.tags,
      };
    },
    execute: ({ args, idempotencyKey, credential }) =>
      request({
        url: `${base}/tickets/${encodeURIComponent(args.ticket_id)}/updates`,
        method: 'POST',
        headers: {
          'idempotency-key': idempotencyKey,
          ...(credential !== undefined ? { authorization: `Bearer ${credential}` } : {}),
        },
        body: args,
      }),
    findApplied: async ({ idempotencyKey }) => {
      const record = await lookup(idempotencyKey);
      if (!record) return { status: 'not-seen' };
      return record.status === 'applied'
        ? { status: 'applied', output: record.update }
        : { status: 'refused', code: record.code, message: record.message };
    },
    verify: async ({ args, output, callId }) => {
      const record = await lookup(callId);
      if (record?.status !== 'applied' || record.update.update_id !== output.update_id) {
        throw new Error(`no update is recorded under key ${callId}`);
      }
      if (args.changes.status !== undefined && record.update.ticket.status !== args.changes.status) {
        throw new Error(`ticket ${args.ticket_id} does not have status ${args.changes.status}`);
      }
    },
  });

  return [getTicket, updateTicket];
}
