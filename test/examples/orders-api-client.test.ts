import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOrdersApiClient,
  isOrdersContractViolation,
  isOrdersUnavailable,
} from '../../examples/orders/orders-api-client';
import { caught } from '../support/caught';

// A stand-in service whose answer each test picks: only the client's reading of it is under test.
let answer: { status: number; body: string } = { status: 200, body: '' };
let server: Server;
let baseUrl = '';

beforeAll(async () => {
  server = createServer((_request, response) => {
    response.writeHead(answer.status, { 'content-type': 'application/json' });
    response.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const refund = () =>
  createOrdersApiClient({ baseUrl }).refund({
    orderId: 'ORD-1001',
    amountCents: 2590,
    currency: 'BRL',
    reason: 'damaged',
    idempotencyKey: 'key-1',
  });

describe('the orders API client reading a success it cannot parse', () => {
  it.each([
    ['a body missing a required field', 201, '{"order_id":"ORD-1001","amount_cents":2590}'],
    ['a body that is not JSON', 200, '<html>upstream says hi</html>'],
  ])(
    'reports %s as a contract violation carrying the body, not as a transient outage',
    async (_what, status, body) => {
      answer = { status, body };
      const error = await caught(refund);
      expect(isOrdersContractViolation(error), String(error)).toBe(true);
      expect(isOrdersUnavailable(error)).toBe(false);
      expect(error).toMatchObject({ kind: 'contract-violation', transient: false, status });
      expect((error as { body: unknown }).body).toEqual(status === 201 ? JSON.parse(body) : body);
      expect((error as Error).message).toContain('does not match its contract');
    },
  );

  it('still reports a 503 as a transient outage', async () => {
    answer = { status: 503, body: '{"code":"UPSTREAM_UNAVAILABLE","message":"down"}' };
    expect(isOrdersUnavailable(await caught(refund))).toBe(true);
  });
});
