// A tiny ticketing service over node:http: the backend the ticketing tools talk to. It honours
// idempotency keys like a payment gateway (a key applies once; sent again, the recorded answer comes
// back) and accepts an update only with the credential toolgate minted for exactly that call.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { digestOf, readPublicKeyHex, verifyCredential } from 'toolgate/backend';
import type { Ticket, TicketUpdate } from './tickets-contracts.js';

/** What the service recorded under an idempotency key. */
export type KeyRecord =
  | { status: 'applied'; update: { update_id: string; ticket: Ticket } }
  | { status: 'refused'; code: string; message: string };

/** What the service counts, for the scenario's assertions. */
export interface TicketBackendStats {
  /** Updates applied, one per idempotency key. */
  appliedUpdates: number;
  /** Update requests received, every attempt and replay included. */
  updateRequests: number;
  credentialsAccepted: number;
  credentialsRefused: number;
}

/** A running ticketing service. */
export interface TicketBackend {
  url: string;
  stats(): TicketBackendStats;
  ticket(id: string): Ticket | undefined;
  stop(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Starts the service on 127.0.0.1 and a free port, with two seed tickets (TCK-1001 open, TCK-1002 closed). */
export async function startTicketBackend(input: { minterPublicKeyPath: string }): Promise<TicketBackend> {
  const minterPublicKeyHex = readPublicKeyHex(input.minterPublicKeyPath);
  const tickets = new Map<string, Ticket>([
    [
      'TCK-1001',
      {
        ticket_id: 'TCK-1001',
        title: 'Invoice shows the wrong VAT',
        status: 'open',
        priority: 'normal',
        tags: [],
      },
    ],
    [
      'TCK-1002',
      {
        ticket_id: 'TCK-1002',
        title: 'Password reset mail',
        status: 'closed',
        priority: 'low',
        tags: ['auth'],
      },
    ],
  ]);
  const byKey = new Map<string, KeyRecord>();
  const usedCredentials = new Set<string>();
  const stats: TicketBackendStats = {
    appliedUpdates: 0,
    updateRequests: 0,
    credentialsAccepted: 0,
    credentialsRefused: 0,
  };

  const ticketOf = (id: string): Ticket => {
    const ticket = tickets.get(id);
    if (!ticket)
      throw new HttpError(404, 'TICKET_NOT_FOUND', `No ticket ${id}. Ask the user for the ticket id.`);
    return ticket;
  };

  const checkCredential = (request: IncomingMessage, key: string, args: TicketUpdate): void => {
    const header = request.headers.authorization;
    const verification = verifyCredential({
      token: header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : null,
      minterPublicKeyHex,
      expected: {
        op: 'update_ticket',
        resource: `ticket:${args.ticket_id}`,
        callId: key,
        argsDigest: digestOf(args),
      },
    });
    const jti = verification.ok ? verification.claims.jti : undefined;
    if (!verification.ok || typeof jti !== 'string' || usedCredentials.has(jti)) {
      stats.credentialsRefused += 1;
      const code = verification.ok ? 'CREDENTIAL_REPLAYED' : verification.code;
      throw new HttpError(
        code === 'CREDENTIAL_MISSING' ? 401 : 403,
        code,
        'The credential does not cover this update.',
      );
    }
    usedCredentials.add(jti);
    stats.credentialsAccepted += 1;
  };

  const applyUpdate = (request: IncomingMessage, key: string, args: TicketUpdate): KeyRecord => {
    const recorded = byKey.get(key);
    if (recorded) return recorded;
    checkCredential(request, key, args);
    let record: KeyRecord;
    const ticket = tickets.get(args.ticket_id);
    if (!ticket) {
      record = { status: 'refused', code: 'TICKET_NOT_FOUND', message: `No ticket ${args.ticket_id}.` };
    } else if (ticket.status === 'closed') {
      record = { status: 'refused', code: 'TICKET_CLOSED', message: `Ticket ${ticket.ticket_id} is closed.` };
    } else {
      const updated: Ticket = { ...ticket, ...args.changes, tags: [...args.tags] };
      tickets.set(updated.ticket_id, updated);
      stats.appliedUpdates += 1;
      record = { status: 'applied', update: { update_id: `UPD-${stats.appliedUpdates}`, ticket: updated } };
    }
    byKey.set(key, record);
    return record;
  };

  const route = async (request: IncomingMessage): Promise<{ status: number; body: unknown }> => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const segments = path.split('/').filter(Boolean).map(decodeURIComponent);
    if (request.method === 'GET' && segments[0] === 'tickets' && segments.length === 2) {
      return { status: 200, body: ticketOf(segments[1]!) };
    }
    if (request.method === 'POST' && segments[0] === 'tickets' && segments[2] === 'updates') {
      stats.updateRequests += 1;
      const key = request.headers['idempotency-key'];
      if (typeof key !== 'string' || key === '') {
        throw new HttpError(400, 'IDEMPOTENCY_KEY_MISSING', 'Send an Idempotency-Key header.');
      }
      const args = JSON.parse(await readBody(request)) as TicketUpdate;
      if (args.ticket_id !== segments[1])
        throw new HttpError(400, 'BAD_REQUEST', 'The body names another ticket.');
      const record = applyUpdate(request, key, args);
      if (record.status === 'refused') throw new HttpError(409, record.code, record.message);
      return { status: 200, body: record.update };
    }
    if (request.method === 'GET' && segments[0] === 'updates' && segments[1] === 'by-key' && segments[2]) {
      const record = byKey.get(segments[2]);
      if (!record) throw new HttpError(404, 'NOT_APPLIED', 'Nothing was recorded under this key.');
      return { status: 200, body: record };
    }
    throw new HttpError(404, 'NOT_FOUND', `No route ${request.method ?? ''} ${path}.`);
  };

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    route(request).then(
      ({ status, body }) => send(response, status, body),
      (error: unknown) =>
        error instanceof HttpError
          ? send(response, error.status, { code: error.code, message: error.message })
          : send(response, 500, { code: 'INTERNAL', message: String(error) }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats: () => ({ ...stats }),
    ticket: (id) => tickets.get(id),
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
