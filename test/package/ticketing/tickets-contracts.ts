// The ticketing domain's tool contracts: what the model sees, what toolgate validates and classifies.
import { defineToolContract } from 'toolgate';
import { z } from 'zod';

const ticketId = z
  .string()
  .regex(/^TCK-\d{4}$/)
  .describe('Ticket id as the user or get_ticket gave it, for example TCK-1001. Never invent one.');
const status = z.enum(['open', 'pending', 'resolved', 'closed']);
const priority = z.enum(['low', 'normal', 'high', 'urgent']);

/** A ticket as the tools report it. */
const ticketOutput = z.strictObject({
  ticket_id: z.string(),
  title: z.string(),
  status,
  priority,
  tags: z.array(z.string()),
});

/** Reads one ticket. */
export const getTicketContract = defineToolContract({
  name: 'get_ticket',
  description:
    'Read one support ticket: title, status, priority and tags. No side effects. ' +
    'Call it before changing a ticket, and to answer questions about one.',
  input: z.strictObject({ ticket_id: ticketId }),
  output: ticketOutput,
  effect: 'read',
  domainCodes: { TICKET_NOT_FOUND: 'no ticket has this id' },
  summarize: (args) => `read ${args.ticket_id}`,
});

/** Changes a ticket's status or priority and replaces its tags: closing it, or making it urgent, is irreversible. */
export const updateTicketContract = defineToolContract({
  name: 'update_ticket',
  description:
    "Change a ticket's status and/or priority and set its tags. Call get_ticket first. " +
    'Only when the user asked for the change; closing a ticket notifies the customer and cannot be undone.',
  input: z.strictObject({
    ticket_id: ticketId,
    changes: z
      .strictObject({
        status: status.optional().describe('The new status; omit it to keep the current one.'),
        priority: priority.optional().describe('The new priority; omit it to keep the current one.'),
      })
      .refine((changes) => changes.status !== undefined || changes.priority !== undefined, {
        message: 'give at least one of status, priority',
      })
      .describe('What to change on the ticket; give at least one field.'),
    tags: z
      .array(
        z
          .string()
          .regex(/^[a-z][a-z0-9-]{0,31}$/)
          .describe('One tag: lowercase letters, digits and "-", starting with a letter.'),
      )
      .max(10)
      .describe("The ticket's tags after the change (the whole list, not additions), at most 10."),
  }),
  output: z.strictObject({
    update_id: z.string(),
    ticket: ticketOutput,
  }),
  effect: 'write',
  risk: ({ args }) =>
    args.changes.status === 'closed' || args.changes.priority === 'urgent' ? 'irreversible' : 'reversible',
  domainCodes: {
    TICKET_NOT_FOUND: 'no ticket has this id',
    TICKET_CLOSED: 'the ticket is closed and can no longer be changed',
  },
  summarize: (args) =>
    `update ${args.ticket_id}: ${Object.entries(args.changes)
      .map(([field, value]) => `${field}=${String(value)}`)
      .join(', ')}`,
  // An update's credential covers this one ticket only.
  resource: (args) => `ticket:${args.ticket_id}`,
});

/** The ticketing domain's contracts, in the order the model sees them. */
export const ticketContracts = [getTicketContract, updateTicketContract] as const;

/** The arguments of update_ticket, as toolgate hands them to the implementation once validated. */
export type TicketUpdate = z.output<typeof updateTicketContract.input>;
/** A ticket as the tools report it. */
export type Ticket = z.output<typeof ticketOutput>;
