import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendResponse, ContractFixture, ImplementedTool } from 'toolgate';
import {
  defineToolImplementation,
  parseContractFixture,
  recordingScenarios,
  testContractFixture,
  ToolDefinitionError,
} from 'toolgate';
import { describe, expect, it } from 'vitest';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import { getOrderContract, refundOrderContract } from '../../examples/orders/orders-contracts';
import { adaptRefund, createOrdersTools } from '../../examples/orders/orders-implementations';

// Output adapters: the orders tools map the service's JSON to their output in one pure function each,
// and `testContractFixture` (what `toolgate contract test` runs) replays the answers recorded from the
// real service (contract-fixtures/, committed) through them and the output schema.

const repository = join(__dirname, '..', '..');
const tools = createOrdersTools({ ordersUrl: 'http://127.0.0.1:1' });
const toolNamed = (name: string): ImplementedTool => tools.find((tool) => tool.contract.name === name)!;

function committedFixture(tool: string, scenario: string): ContractFixture {
  const parsed = parseContractFixture(
    readFileSync(join(repository, 'contract-fixtures', tool, `${scenario}.json`), 'utf8'),
  );
  if (!parsed.ok) throw new Error(`contract-fixtures/${tool}/${scenario}.json: ${parsed.message}`);
  return parsed.fixture;
}

/** A committed fixture whose body the test edits, as a vendor's change would. */
function editedFixture(
  tool: string,
  scenario: string,
  edit: (body: Record<string, unknown>) => void,
): ContractFixture {
  const fixture = structuredClone(committedFixture(tool, scenario));
  edit(fixture.response.body as Record<string, unknown>);
  return fixture;
}

function renamed(body: Record<string, unknown>, from: string, to: string): void {
  body[to] = body[from];
  delete body[from];
}

describe('the orders tools against the answers recorded from the real orders service', () => {
  it.each(
    ['get_order', 'refund_order'].flatMap((tool) => recordingScenarios.map((scenario) => [tool, scenario])),
  )(
    '%s %s passes: recorded with recordedAt and source, adapted as its scenario requires',
    (tool, scenario) => {
      const fixture = committedFixture(tool, scenario);
      expect(fixture).toMatchObject({ tool, scenario, source: expect.any(String) as string });
      expect(Date.parse(fixture.recordedAt)).not.toBeNaN();
      const result = testContractFixture({ tool: toolNamed(tool), fixture });
      expect(result.problems).toEqual([]);
      expect(result.ok).toBe(true);
      const expected = {
        success: 'output',
        empty: 'output',
        'business-error': 'rejection',
        unavailable: 'transient',
      };
      expect(result.outcome.kind).toBe(expected[scenario as keyof typeof expected]);
    },
  );

  it('maps the business errors to the codes the recordings expect', () => {
    expect(
      testContractFixture({
        tool: toolNamed('get_order'),
        fixture: committedFixture('get_order', 'business-error'),
      }).outcome,
    ).toMatchObject({ kind: 'rejection', code: 'ORDER_NOT_FOUND' });
    expect(
      testContractFixture({
        tool: toolNamed('refund_order'),
        fixture: committedFixture('refund_order', 'business-error'),
      }).outcome,
    ).toMatchObject({ kind: 'rejection', code: 'AMOUNT_EXCEEDS_REFUNDABLE' });
  });
});

describe('a vendor change in a recorded answer fails its adapter test with the field path', () => {
  it('fails a renamed field at the output path it breaks, naming the field the answer has instead', () => {
    const fixture = editedFixture('refund_order', 'success', (body) =>
      renamed(body, 'remaining_refundable_cents', 'remaining_cents'),
    );
    const result = testContractFixture({ tool: toolNamed('refund_order'), fixture });
    expect(result.ok).toBe(false);
    expect(result.problems).toEqual([
      {
        path: 'output.remaining_refundable_cents',
        message: 'required, missing (the response has remaining_cents)',
      },
    ]);
  });

  it('fails a field moved into a nested object, naming where it went', () => {
    const fixture = editedFixture('get_order', 'success', (body) => {
      body.amounts = { total_cents: body.total_cents };
      delete body.total_cents;
    });
    expect(testContractFixture({ tool: toolNamed('get_order'), fixture }).problems).toEqual([
      { path: 'output.total_cents', message: 'required, missing (the response has amounts.total_cents)' },
    ]);
  });

  it('tells each of two missing fields where it went, and a changed type by its value', () => {
    const fixture = editedFixture('get_order', 'empty', (body) => {
      renamed(body, 'customer_id', 'customerId');
      renamed(body, 'refundable_cents', 'refundable_balance_cents');
      body.refunded_cents = '0';
    });
    expect(testContractFixture({ tool: toolNamed('get_order'), fixture }).problems).toEqual([
      { path: 'output.customer_id', message: 'required, missing (the response has customerId)' },
      { path: 'output.refunded_cents', message: 'expected number, got string "0"' },
      {
        path: 'output.refundable_cents',
        message: 'required, missing (the response has refundable_balance_cents)',
      },
    ]);
  });

  it('says so when the answer has nothing like the missing field', () => {
    const fixture = editedFixture('refund_order', 'empty', (body) => delete body.refund_id);
    expect(testContractFixture({ tool: toolNamed('refund_order'), fixture }).problems).toEqual([
      {
        path: 'output.refund_id',
        message: 'required, missing (the adapter reads refund_id; the response has no such field)',
      },
    ]);
  });

  it('fails an enum value the output does not accept, with the value', () => {
    const fixture = editedFixture('refund_order', 'success', (body) => (body.currency = 'EUR'));
    expect(testContractFixture({ tool: toolNamed('refund_order'), fixture }).problems).toEqual([
      { path: 'output.currency', message: '"EUR" is not one of "BRL", "USD"' },
    ]);
  });
});

describe('what an adapter must make of each scenario', () => {
  const answer = (
    scenario: ContractFixture['scenario'],
    response: BackendResponse,
    tool = 'get_order',
  ): ContractFixture => ({
    version: 1,
    tool,
    scenario,
    recordedAt: '2026-01-01T00:00:00.000Z',
    source: 'test',
    request: { args: { order_id: 'ORD-1001' } },
    response,
  });

  it('fails a business error whose code the tool does not declare: the model would get INTERNAL_ERROR', () => {
    const result = testContractFixture({
      tool: toolNamed('get_order'),
      fixture: answer('business-error', { status: 401, body: { code: 'CREDENTIAL_MISSING', message: 'no' } }),
    });
    expect(result.problems).toEqual([
      {
        message:
          "answers CREDENTIAL_MISSING, which is not one of the tool's domain codes (ORDER_NOT_FOUND, ORDER_NOT_OWNED): the model would get INTERNAL_ERROR",
      },
    ]);
  });

  it('fails a business error with another declared code than the recordings expect', () => {
    const result = testContractFixture({
      tool: toolNamed('refund_order'),
      fixture: {
        ...answer(
          'business-error',
          { status: 404, body: { code: 'ORDER_NOT_FOUND', message: 'gone' } },
          'refund_order',
        ),
        request: { args: { order_id: 'ORD-9999', amount_cents: 1, currency: 'BRL', reason: 'damaged' } },
      },
    });
    expect(result.problems).toEqual([
      { message: 'answers ORDER_NOT_FOUND; the recordings expect AMOUNT_EXCEEDS_REFUNDABLE' },
    ]);
  });

  it('takes a 503 and an answer that never came for an outage, and fails a 4xx recorded as one', () => {
    const unavailable = (response: BackendResponse) =>
      testContractFixture({ tool: toolNamed('get_order'), fixture: answer('unavailable', response) });
    expect(
      unavailable({ status: 503, body: { code: 'UPSTREAM_UNAVAILABLE', message: 'down' } }),
    ).toMatchObject({
      ok: true,
      outcome: { kind: 'transient' },
    });
    expect(unavailable({ status: null, body: null, error: 'ETIMEDOUT' })).toMatchObject({ ok: true });
    expect(unavailable({ status: 404, body: { code: 'ORDER_NOT_FOUND', message: 'x' } }).problems).toEqual([
      {
        message:
          'the adapter refused with ORDER_NOT_FOUND for an unavailable backend, 404 (ORDER_NOT_FOUND: x): ' +
          'throw transientToolError({ message }), so the call is retried and then answered UPSTREAM_UNAVAILABLE',
      },
    ]);
  });

  it('fails a success the adapter refuses, and a success whose body is not an object', () => {
    const success = (response: BackendResponse) =>
      testContractFixture({ tool: toolNamed('get_order'), fixture: answer('success', response) });
    expect(success({ status: 409, body: { code: 'X', message: 'y' } }).ok).toBe(false);
    expect(
      success({ status: 200, body: '<html>hello</html>' }).problems.map((problem) => problem.path),
    ).toEqual([
      'output.order_id',
      'output.customer_id',
      'output.total_cents',
      'output.refunded_cents',
      'output.refundable_cents',
      'output.currency',
      'output.note',
    ]);
  });

  it('notes, without failing, arguments the input schema now refuses', () => {
    const result = testContractFixture({
      tool: toolNamed('get_order'),
      fixture: { ...committedFixture('get_order', 'success'), request: { args: { order_id: 'order 3' } } },
    });
    expect(result.ok).toBe(true);
    expect(result.notes).toEqual([
      expect.stringContaining('recorded with arguments the input schema now refuses'),
    ]);
  });

  it('fails a tool without an adapter, saying what to declare', () => {
    const plain = defineToolImplementation(getOrderContract, { execute: async () => ({}) as never });
    expect(
      testContractFixture({ tool: plain, fixture: committedFixture('get_order', 'success') }).problems,
    ).toEqual([
      {
        message:
          'the implementation declares no output adapter: declare output: { request, adapt } so its recorded answers can be tested',
      },
    ]);
  });
});

describe('an implementation with an output adapter', () => {
  const refundArgs = {
    order_id: 'ORD-1001',
    amount_cents: 2590,
    currency: 'BRL',
    reason: 'damaged',
  } as const;

  it("executes as adapt(request): the refund's answer, as the service sent it, becomes the tool's output", async () => {
    const sent: unknown[] = [];
    const api = {
      refund: async (request: unknown) => {
        sent.push(request);
        const body = committedFixture('refund_order', 'success').response.body;
        return { refund: {}, replayed: false, response: { status: 201, body } };
      },
    } as unknown as OrdersApiClient;
    const [, refund] = createOrdersTools({ ordersUrl: 'http://127.0.0.1:1', api });
    const output = await refund!.implementation.execute({
      args: refundArgs,
      callId: 'tc-1',
      context: {},
      idempotencyKey: 'tc-1',
      attempt: 1,
      credential: 'token',
    });
    expect(sent).toEqual([
      {
        orderId: 'ORD-1001',
        amountCents: 2590,
        currency: 'BRL',
        reason: 'damaged',
        idempotencyKey: 'tc-1',
        credential: 'token',
      },
    ]);
    expect(output).toEqual(
      adaptRefund({
        response: { status: 201, body: committedFixture('refund_order', 'success').response.body },
      }),
    );
    expect(refundOrderContract.output.safeParse(output).success).toBe(true);
  });

  const adapter = { request: async () => ({ status: 200, body: {} }), adapt: () => ({}) as never };

  it('is refused with both execute and output', () => {
    expect(() =>
      defineToolImplementation(getOrderContract, {
        execute: async () => ({}) as never,
        output: adapter,
      } as never),
    ).toThrow(
      new ToolDefinitionError(
        'tool "get_order": declare execute or output ({ request, adapt }), not both: execute is built from the adapter',
      ),
    );
  });

  it('is refused with recordings but no adapter, or recordings whose arguments the input schema refuses', () => {
    expect(() =>
      defineToolImplementation(getOrderContract, {
        execute: async () => ({}) as never,
        recordings: { source: 'x', scenarios: { success: { args: { order_id: 'ORD-1001' } } } },
      }),
    ).toThrow('recordings need an output adapter');
    expect(() =>
      defineToolImplementation(getOrderContract, {
        output: adapter,
        recordings: { source: 'x', scenarios: { success: { args: { order_id: 'order one' } } } },
      }),
    ).toThrow('recordings.scenarios.success.args do not pass the input schema (order_id:');
  });

  it("is refused with a business error's code the tool does not declare", () => {
    expect(() =>
      defineToolImplementation(getOrderContract, {
        output: adapter,
        recordings: {
          source: 'x',
          scenarios: { 'business-error': { args: { order_id: 'ORD-9999' }, code: 'NO_SUCH_THING' } },
        },
      }),
    ).toThrow(
      `recordings.scenarios.business-error.code "NO_SUCH_THING" is not one of the tool's domain codes`,
    );
  });
});
