// The JSON Schema a model sees in each provider's format accepts exactly what toolgate's zod schema
// accepts, on a table of good and bad arguments per tool, for the orders example and the ticketing
// domain of the library test. The JSON side is checked by ajv (draft 2020-12), as a provider would.
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { Client } from '@temporalio/client';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AnyToolContract } from 'toolgate';
import {
  absentOptionalNulls,
  anthropicTools,
  checkPolicy,
  createToolRegistry,
  openAIChatTools,
  openAIResponsesTools,
  ToolGateClient,
} from 'toolgate';
import { aiSdkTools } from 'toolgate/ai-sdk';
import { validateArguments } from 'toolgate/testing';
import { ordersContracts } from '../../examples/orders/orders-contracts';

/** One row: arguments as the model would send them, and whether zod accepts them. */
interface Row {
  args: Record<string, unknown>;
  accepted: boolean;
  /** Refused only by a zod refinement, which no JSON Schema can say: the JSON side accepts it. */
  refinementOnly?: true;
}

const refund = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };
const update = { ticket_id: 'TCK-1001', changes: { status: 'resolved' }, tags: ['billing'] };

const table: Record<string, Row[]> = {
  get_order: [
    { args: { order_id: 'ORD-1001' }, accepted: true },
    { args: {}, accepted: false },
    { args: { order_id: 'ORD-12345' }, accepted: false },
    { args: { order_id: 'ord-1001' }, accepted: false },
    { args: { order_id: 1001 }, accepted: false },
    { args: { order_id: null }, accepted: false },
    { args: { order_id: 'ORD-1001', force: true }, accepted: false },
  ],
  refund_order: [
    { args: refund, accepted: true },
    { args: { ...refund, amount_cents: 1, currency: 'USD', reason: 'customer_request' }, accepted: true },
    { args: { ...refund, amount_cents: 25.9 }, accepted: false },
    { args: { ...refund, amount_cents: '2590' }, accepted: false },
    { args: { ...refund, amount_cents: 0 }, accepted: false },
    { args: { ...refund, amount_cents: -2590 }, accepted: false },
    { args: { ...refund, amount_cents: null }, accepted: false },
    { args: { ...refund, currency: 'EUR' }, accepted: false },
    { args: { ...refund, reason: 'because' }, accepted: false },
    { args: { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL' }, accepted: false },
    { args: { ...refund, force: true }, accepted: false },
  ],
  get_ticket: [
    { args: { ticket_id: 'TCK-1001' }, accepted: true },
    { args: { ticket_id: 'TCK-1' }, accepted: false },
    { args: { ticket_id: 'TCK-1001', status: 'open' }, accepted: false },
    { args: {}, accepted: false },
  ],
  update_ticket: [
    { args: update, accepted: true },
    { args: { ...update, changes: { priority: 'urgent' }, tags: [] }, accepted: true },
    { args: { ...update, changes: { status: 'closed', priority: 'low' } }, accepted: true },
    { args: { ...update, tags: Array.from({ length: 10 }, (_, index) => `tag-${index}`) }, accepted: true },
    { args: { ...update, tags: Array.from({ length: 11 }, (_, index) => `tag-${index}`) }, accepted: false },
    { args: { ...update, tags: ['VIP'] }, accepted: false },
    { args: { ...update, tags: 'billing' }, accepted: false },
    { args: { ...update, changes: { status: 'deleted' } }, accepted: false },
    { args: { ...update, changes: { status: 'open', owner: 'me' } }, accepted: false },
    { args: { ticket_id: 'TCK-1001', changes: { status: 'open' } }, accepted: false },
    { args: { ...update, changes: {} }, accepted: false, refinementOnly: true },
  ],
};

let contracts: readonly AnyToolContract[];
/** Each format's definitions, by tool name: the JSON Schema that format sends. */
const plainFormats: Record<string, Map<string, object>> = {};
const strictFormats: Record<string, Map<string, object>> = {};
const plainFormatNames = ['OpenAI Chat (non-strict)', 'OpenAI Responses (non-strict)', 'Anthropic', 'AI SDK'];
const strictFormatNames = ['OpenAI Chat (strict)', 'OpenAI Responses (strict)'];
const ajv = new Ajv2020({ strict: false, allErrors: true });
const contractOf = (name: string): AnyToolContract => contracts.find((contract) => contract.name === name)!;

beforeAll(async () => {
  // The ticketing fixture is a project of its own (it imports toolgate as an installed package).
  const fixture = join(__dirname, '../package/ticketing/tickets-contracts.ts');
  const { ticketContracts } = (await import(fixture)) as { ticketContracts: readonly AnyToolContract[] };
  contracts = [...ordersContracts, ...ticketContracts];
  const registry = createToolRegistry({ tools: contracts });
  const policy = checkPolicy({
    source: 'round-trip policy',
    value: {
      version: 'round-trip',
      callers: {
        agent: { publicKey: `ed25519:${'11'.repeat(32)}`, tools: registry.names, autonomy: 'read' },
      },
      approvers: {},
    },
    registry,
  });
  // Definitions need no server: this client never connects.
  const client = new ToolGateClient({
    client: new Client(),
    tools: contracts,
    policy,
    callerKey: () => undefined,
  });
  const caller = 'agent';
  const byName = (entries: [string, object][]) => new Map(entries);
  plainFormats['OpenAI Chat (non-strict)'] = byName(
    openAIChatTools({ client, caller, strict: false }).map((tool) => [
      tool.function.name,
      tool.function.parameters,
    ]),
  );
  plainFormats['OpenAI Responses (non-strict)'] = byName(
    openAIResponsesTools({ client, caller, strict: false }).map((tool) => [tool.name, tool.parameters]),
  );
  plainFormats.Anthropic = byName(
    anthropicTools({ client, caller }).map((tool) => [tool.name, tool.input_schema]),
  );
  plainFormats['AI SDK'] = byName(
    Object.entries(aiSdkTools({ client, session: 'unused', caller })).map(([name, tool]) => [
      name,
      (tool.inputSchema as { jsonSchema: object }).jsonSchema,
    ]),
  );
  strictFormats['OpenAI Chat (strict)'] = byName(
    openAIChatTools({ client, caller }).map((tool) => [tool.function.name, tool.function.parameters]),
  );
  strictFormats['OpenAI Responses (strict)'] = byName(
    openAIResponsesTools({ client, caller }).map((tool) => [tool.name, tool.parameters]),
  );
});

/**
 * The arguments as a model in strict mode sends them, read off the strict schema it was shown (not
 * off zod): every property present, each one the row leaves out sent as null.
 */
function asStrictModelSends(input: { schema: object; args: Record<string, unknown> }) {
  const fill = (schema: { properties?: Record<string, object> }, value: unknown): unknown => {
    if (!schema.properties || typeof value !== 'object' || value === null || Array.isArray(value))
      return value;
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const [key, property] of Object.entries(schema.properties)) {
      out[key] = key in out ? fill(branchWithProperties(property), out[key]) : null;
    }
    return out;
  };
  return fill(input.schema, input.args) as Record<string, unknown>;
}

/** A property's object schema, also when strict mode wrapped it as `anyOf: [object, null]`. */
function branchWithProperties(schema: { anyOf?: object[] }): { properties?: Record<string, object> } {
  return (schema.anyOf?.find((branch) => 'properties' in branch) ?? schema) as {
    properties?: Record<string, object>;
  };
}

describe.each(Object.keys(table))('%s', (toolName) => {
  const rows = table[toolName]!;

  it('has a zod verdict for every row that matches the table', () => {
    const contract = contractOf(toolName);
    for (const row of rows) {
      expect(validateArguments({ contract, value: row.args }).ok, JSON.stringify(row.args)).toBe(
        row.accepted,
      );
    }
  });

  it.each(plainFormatNames)('%s: the JSON Schema accepts exactly what zod accepts', (format) => {
    const validate = ajv.compile(plainFormats[format]!.get(toolName)!);
    for (const row of rows) {
      const jsonAccepts = validate(row.args);
      expect(jsonAccepts, `${JSON.stringify(row.args)}: ${ajv.errorsText(validate.errors)}`).toBe(
        row.refinementOnly ? true : row.accepted,
      );
    }
  });

  it.each(strictFormatNames)(
    '%s: every field is required, optional ones as null, and toolgate reads that null as absent',
    (format) => {
      const contract = contractOf(toolName);
      const schema = strictFormats[format]!.get(toolName)!;
      const validate = ajv.compile(schema);
      for (const row of rows) {
        const sent = asStrictModelSends({ schema, args: row.args });
        const jsonAccepts = validate(sent);
        const zodAccepts = validateArguments({
          contract,
          value: absentOptionalNulls({ contract, value: sent }).value,
        }).ok;
        expect(zodAccepts, JSON.stringify(sent)).toBe(row.accepted);
        expect(jsonAccepts, `${JSON.stringify(sent)}: ${ajv.errorsText(validate.errors)}`).toBe(
          row.refinementOnly ? true : row.accepted,
        );
      }
    },
  );
});

describe('OpenAI strict mode', () => {
  it('sends an optional field as required-or-null, and a required null stays refused', () => {
    const updateTicket = contractOf('update_ticket');
    const schema = strictFormats['OpenAI Chat (strict)']!.get('update_ticket') as {
      properties: {
        changes: { required: string[]; properties: Record<string, { type: unknown; enum?: unknown[] }> };
      };
    };
    expect(schema.properties.changes.required).toEqual(['status', 'priority']);
    expect(schema.properties.changes.properties.status!.type).toEqual(['string', 'null']);
    expect(schema.properties.changes.properties.status!.enum).toContain(null);
    // A null in a required field is not "absent": it reaches validation as null.
    const required = absentOptionalNulls({ contract: updateTicket, value: { ...update, tags: null } }).value;
    expect(validateArguments({ contract: updateTicket, value: required }).ok).toBe(false);
    const optional = absentOptionalNulls({
      contract: updateTicket,
      value: { ...update, changes: { status: 'open', priority: null } },
    });
    expect(optional).toEqual({ value: { ...update, changes: { status: 'open' } }, changed: true });
  });

  it('keeps a "__proto__" key as data when it strips nulls, so validation still refuses it', () => {
    const updateTicket = contractOf('update_ticket');
    const value: unknown = JSON.parse(
      '{"ticket_id":"TCK-1001","changes":{"status":"open","priority":null},"tags":[],"__proto__":{"x":1}}',
    );
    const { value: stripped, changed } = absentOptionalNulls({ contract: updateTicket, value }) as {
      value: Record<string, unknown>;
      changed: boolean;
    };
    expect(changed).toBe(true);
    expect(Object.hasOwn(stripped, '__proto__')).toBe(true);
    expect(validateArguments({ contract: updateTicket, value: stripped }).ok).toBe(false);
  });
});
