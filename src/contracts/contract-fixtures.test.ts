import { describe, expect, it } from 'vitest';
import type { ContractFixture } from './contract-fixtures';
import {
  answerFits,
  keepVolatileValues,
  parseContractFixture,
  serializeContractFixture,
  shapeChanges,
} from './contract-fixtures';

const fixture: ContractFixture = {
  version: 1,
  tool: 'refund_order',
  scenario: 'success',
  recordedAt: '2026-12-01T10:00:00.000Z',
  source: 'http://127.0.0.1:4100',
  request: { args: { order_id: 'ORD-1001', amount_cents: 2590 } },
  response: { status: 201, body: { refund_id: 'RF-1', items: [{ id: 'a', sku: 'x' }] } },
};

describe('the fixture file', () => {
  it('reads back what it wrote, and ends with a newline', () => {
    const text = serializeContractFixture(fixture);
    expect(text.endsWith('}\n')).toBe(true);
    expect(parseContractFixture(text)).toEqual({ ok: true, fixture });
    const unavailable = { ...fixture, response: { status: null, body: null, error: 'ECONNREFUSED' } };
    expect(parseContractFixture(serializeContractFixture(unavailable))).toEqual({
      ok: true,
      fixture: unavailable,
    });
  });

  it('refuses a file that is not JSON, of another version, or without a recording date', () => {
    expect(parseContractFixture('{')).toMatchObject({
      ok: false,
      message: expect.stringContaining('not JSON') as string,
    });
    expect(parseContractFixture(JSON.stringify({ ...fixture, version: 2 }))).toEqual({
      ok: false,
      message: 'version 2; this toolgate reads version 1',
    });
    const { recordedAt: _recordedAt, ...undated } = fixture;
    expect(parseContractFixture(JSON.stringify(undated))).toMatchObject({
      ok: false,
      message: expect.stringContaining('recordedAt:') as string,
    });
  });
});

describe('answerFits', () => {
  it.each([
    ['success', 200, true],
    ['empty', 204, true],
    ['success', 401, false],
    ['business-error', 422, true],
    ['business-error', 503, false],
    ['unavailable', 503, true],
    ['unavailable', null, true],
    ['unavailable', 200, false],
  ] as const)('a %s recorded as %s fits: %s', (scenario, status, fits) => {
    expect(answerFits({ scenario, response: { status, body: null } }).ok).toBe(fits);
  });

  it('says what came instead, with the code and message of an error body', () => {
    expect(
      answerFits({
        scenario: 'success',
        response: { status: 401, body: { code: 'CREDENTIAL_MISSING', message: 'send one' } },
      }),
    ).toEqual({
      ok: false,
      message: 'the backend answered 401 (CREDENTIAL_MISSING: send one), not a success (2xx)',
    });
  });
});

describe('keepVolatileValues', () => {
  it('keeps the previous value at a volatile path when its type is the same, and the new one otherwise', () => {
    const previous = {
      refund_id: 'RF-old',
      created_at: 'then',
      amount: 1,
      items: [{ id: 'a1' }, { id: 'a2' }],
    };
    const next = {
      refund_id: 'RF-new',
      created_at: 12,
      amount: 2,
      items: [{ id: 'b1' }, { id: 'b2' }, { id: 'b3' }],
    };
    expect(
      keepVolatileValues({
        previous,
        next,
        paths: ['refund_id', 'created_at', 'items[].id', 'missing.path'],
      }),
    ).toEqual({
      refund_id: 'RF-old',
      created_at: 12,
      amount: 2,
      items: [{ id: 'a1' }, { id: 'a2' }, { id: 'b3' }],
    });
    expect(next.refund_id).toBe('RF-new');
  });
});

describe('shapeChanges', () => {
  it('lists the status and the body paths whose type changed, appeared or went, never values', () => {
    expect(
      shapeChanges(
        { status: 201, body: { remaining_refundable_cents: 9410, id: 'a', tags: ['x'] } },
        { status: 200, body: { remaining_cents: 9410, id: 'b', tags: [1] } },
      ),
    ).toEqual([
      { path: 'status', before: '201', after: '200' },
      { path: 'body.remaining_cents', before: 'absent', after: 'number' },
      { path: 'body.remaining_refundable_cents', before: 'number', after: 'absent' },
      { path: 'body.tags[]', before: 'string', after: 'number' },
    ]);
    expect(shapeChanges(fixture.response, { status: 201, body: { refund_id: 'RF-2', items: [] } })).toEqual([
      { path: 'body.items[]', before: 'object', after: 'absent' },
      { path: 'body.items[].id', before: 'string', after: 'absent' },
      { path: 'body.items[].sku', before: 'string', after: 'absent' },
    ]);
  });
});
