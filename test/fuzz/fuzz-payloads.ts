// What a fuzz run proposes, drawn from one seed with fast-check before anything runs: sessions of
// calls, each call a tool name (known, mangled or hostile) and arguments that start from a valid
// shape and are broken in every way a model (or an attacker writing through it) could break them.
// Pure: no I/O.
import fc from 'fast-check';

/** The callers a campaign uses, by role; all but `stranger` are in the tests' policy. */
export const fuzzCallers = {
  /** May ask for refunds, never alone: every refund needs approval (APPROVAL_PENDING), so none is applied. */
  approvalBound: 'support-bot',
  /** May only read orders. */
  readOnly: 'readonly-bot',
  /** Runs the test tools (autonomy `critical`): it is never given `refund_order`, so it applies nothing. */
  testTools: 'test-refunder',
  /** Not in the policy and holds no key: every proposal is UNAUTHENTICATED_CALLER. */
  stranger: 'ghost-bot',
} as const;

/** One proposal as the agent harness hands it to `ToolGateClient.call` (the session is added when it runs). */
export interface FuzzCall {
  caller: string;
  tool: string;
  arguments: string | Record<string, unknown>;
  /** The context the harness attaches (its session's, another end user's, or a hostile one); none when absent. */
  context?: unknown;
  /** How the generator made it, e.g. `refund_order mutated(float-cents)`: the report groups by it. */
  kind: string;
}

/** One conversation: calls run one after another in one session, so its counters are predictable. */
export interface FuzzSession {
  calls: FuzzCall[];
}

/** End users sessions act for: the seed orders' customers (CUS-1 to CUS-3) and one with no order. */
export const fuzzCustomers = ['CUS-1', 'CUS-2', 'CUS-3', 'CUS-404'] as const;

/** A claim set named after what every plain object has, so a lookup in `{}` by name would find them. */
const prototypeClaims = (): Record<string, string> => ({
  constructor: 'x',
  toString: 'y',
  hasOwnProperty: 'z',
  prototype: 'p',
  valueOf: 'v',
});

/** The largest context the client accepts: 16 claims of 256 characters, identifiers of 128. */
const largestContext = (): Record<string, unknown> => ({
  onBehalfOf: `CUS-${'9'.repeat(124)}`,
  tenant: 't'.repeat(128),
  channel: `c${'-x'.repeat(31)}a`,
  claims: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`claim${i}`, 'v'.repeat(256)])),
});

/** A context a harness may attach: a customer's, an internal one, with a tenant, channel and claims now and then. */
const validContext: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      {
        onBehalfOf: fc.constantFrom(...fuzzCustomers),
        tenant: fc.constantFrom('shop-1', 'shop-2'),
        channel: fc.constantFrom('end-user-chat', 'internal-console'),
        claims: fc.dictionary(
          fc.constantFrom('plan', 'region', 'tier.level'),
          fc.constantFrom('gold', 'eu'),
          {
            maxKeys: 3,
          },
        ),
      },
      { requiredKeys: ['onBehalfOf'] },
    ),
  },
  // Acting for no end user (an internal caller): nothing is bound, no order is refused as not owned.
  { weight: 1, arbitrary: fc.constant({ channel: 'internal-console' }) },
  { weight: 1, arbitrary: fc.constant({ onBehalfOf: 'CUS-1', claims: prototypeClaims() }) },
  { weight: 1, arbitrary: fc.constant(largestContext()) },
);

/** Contexts no harness should attach: each is CONTEXT_INVALID, whatever else the proposal is. */
const hostileContexts: readonly (() => unknown)[] = [
  () => 'CUS-1',
  () => ['CUS-1'],
  () => null,
  () => ({ onBehalfOf: '' }),
  () => ({ onBehalfOf: 5 }),
  () => ({ onBehalfOf: 'x'.repeat(129) }),
  () => ({ onBehalfOf: 'CUS-1\u0000' }),
  () => ({ onBehalfOf: 'CUS\u202e-2' }),
  () => ({ onBehalfOf: 'CUS-1\nCUS-2' }),
  () => ({ tenant: 't'.repeat(129) }),
  () => ({ channel: 'End User Chat' }),
  () => ({ channel: `a${'b'.repeat(64)}` }),
  () => ({ onBehalfOf: 'CUS-1', role: 'admin' }),
  () => ({ onBehalfOf: 'CUS-1', claims: JSON.parse('{"__proto__":"x"}') as unknown }),
  () => ({ onBehalfOf: 'CUS-1', claims: { _private: 'x' } }),
  () => ({ onBehalfOf: 'CUS-1', claims: { plan: 7 } }),
  () => ({ onBehalfOf: 'CUS-1', claims: { plan: '' } }),
  () => ({ onBehalfOf: 'CUS-1', claims: { plan: 'v'.repeat(257) } }),
  () => ({ onBehalfOf: 'CUS-1', claims: { plan: 'v'.repeat(1_000_000) } }),
  () => ({
    onBehalfOf: 'CUS-1',
    claims: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`c${i}`, 'v'])),
  }),
  () => ({ onBehalfOf: 'CUS-1', claims: ['plan', 'gold'] }),
];
const hostileContext: fc.Arbitrary<unknown> = fc
  .integer({ min: 0, max: hostileContexts.length - 1 })
  .map((index) => hostileContexts[index]!());

/** A session's context: none, one a harness may attach, or now and then a hostile one. */
const sessionContext: fc.Arbitrary<{ value: unknown; hostile: boolean }> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ value: undefined, hostile: false }) },
  { weight: 5, arbitrary: validContext.map((value) => ({ value, hostile: false })) },
  { weight: 1, arbitrary: hostileContext.map((value) => ({ value, hostile: true })) },
);

/** Order ids the generators use; all match the schema's pattern, so the business check decides. */
export const fuzzOrderIds = ['ORD-1001', 'ORD-1002', 'ORD-1003', 'ORD-1004', 'ORD-9999', 'ORD-0000'] as const;

/** Tool names that are properties of every plain object: a lookup in `{}` by name finds them. */
export const prototypeNames = [
  'constructor',
  '__proto__',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupSetter__',
  'prototype',
] as const;

const knownTools = ['get_order', 'refund_order', 'echo_shape', 'explode'] as const;
type KnownTool = (typeof knownTools)[number];

type Shape = Record<string, unknown>;

const orderId = fc.constantFrom(...fuzzOrderIds);
const currency = fc.constantFrom('BRL', 'USD');
const reason = fc.constantFrom('damaged', 'not_delivered', 'customer_request');
// Around the seed orders' balances (12000, 4500, 90000), the critical threshold (10000) and the
// approval-bound caller's limit (50000), plus anything up to 100000.
const amountCents = fc.oneof(
  fc.constantFrom(1, 2590, 4500, 4501, 10_000, 10_001, 12_000, 12_001, 50_000, 50_001, 90_000),
  fc.integer({ min: 1, max: 100_000 }),
);

/** A valid-looking arguments object for each known tool. */
const validShapes: Record<KnownTool, fc.Arbitrary<Shape>> = {
  get_order: fc.record({ order_id: orderId }),
  refund_order: fc.oneof(
    fc.record({ order_id: orderId, amount_cents: amountCents, currency, reason }),
    // Most refunds a model proposes are plausible: a seed order of the orders example, its currency, an amount it allows.
    fc
      .constantFrom(
        { order_id: 'ORD-1001', currency: 'BRL', refundable: 12_000 },
        { order_id: 'ORD-1002', currency: 'USD', refundable: 4_500 },
        { order_id: 'ORD-1003', currency: 'BRL', refundable: 90_000 },
      )
      .chain((order) =>
        fc.record({
          order_id: fc.constant(order.order_id),
          amount_cents: fc.integer({ min: 1, max: order.refundable }),
          currency: fc.constant(order.currency),
          reason,
        }),
      ),
  ),
  echo_shape: fc.record({ broken: fc.boolean() }),
  explode: fc.constant({}),
};

/** The fields a mutation aims at: the tool's own, plus names a model might confuse them with. */
const fieldNames = fc.constantFrom(
  'order_id',
  'amount_cents',
  'currency',
  'reason',
  'broken',
  'amount',
  'orderId',
  'order_id ',
  'ORDER_ID',
);

const awkwardStrings = fc.constantFrom(
  '',
  ' ',
  'NaN',
  'Infinity',
  '-Infinity',
  'null',
  'undefined',
  '2590',
  '25.90',
  '1e3',
  '0x10',
  ' 2590',
  'ORD-1001 ',
  'ord-1001',
  'ORD-١٠٠١', // Arabic-Indic digits: \d in the pattern must not take them
  'ORD-１００１', // full-width digits
  'ORD-1001\u0000',
  'ORD-1001\n',
  '\u202eORD-1001', // right-to-left override
  'ORD\u200b-1001', // zero-width space
  '\ud800', // a lone high surrogate
  '\udc00x', // a lone low surrogate
  '😀🧾',
  'BRL ',
  'brl',
  'damaged; DROP TABLE refunds',
  '"}',
  '\\u0000',
);

const unicodeString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }), // any code unit, lone surrogates included
  awkwardStrings,
);

const wrongTypeValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  unicodeString,
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

/** Nested `depth` levels deep: arrays or objects, around a leaf. */
function nested(input: { depth: number; kind: 'array' | 'object'; leaf: unknown }): unknown {
  let value: unknown = input.leaf;
  for (let level = 0; level < input.depth; level++) value = input.kind === 'array' ? [value] : { a: value };
  return value;
}

const nesting = fc.record({
  depth: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 2, max: 8 }) },
    fc.integer({ min: 2000, max: 3000 }),
  ),
  kind: fc.constantFrom('array' as const, 'object' as const),
  leaf: fc.oneof(fc.constant(1), fc.constant('ORD-1001'), fc.constant(null)),
});

/** One way to break an arguments object, described so a failure names it. */
type Mutation = { name: string; apply: (shape: Shape) => Shape };

const set = (name: string, field: string, value: unknown): Mutation => ({
  name,
  apply: (shape) => defineField({ ...shape }, field, value),
});

/** Sets a field as an own, enumerable property, even `__proto__` (an assignment would change the prototype). */
function defineField(shape: Shape, field: string, value: unknown): Shape {
  Object.defineProperty(shape, field, { value, enumerable: true, writable: true, configurable: true });
  return shape;
}

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.tuple(fieldNames, wrongTypeValue).map(([field, value]) => set('wrong-type', field, value)),
  fc
    .constantFrom(25.9, 2590.5, 0.5, 1e-7, 12_000.000001, 4500.1)
    .map((value) => set('float-cents', 'amount_cents', value)),
  fc
    .constantFrom(1e21, 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE, 2 ** 31, 2 ** 32 + 1)
    .map((value) => set('huge-number', 'amount_cents', value)),
  fc
    .constantFrom(-1, -2590, 0, -0, -(2 ** 53), Number.MIN_SAFE_INTEGER)
    .map((value) => set('negative-or-zero', 'amount_cents', value)),
  fc.tuple(fieldNames, awkwardStrings).map(([field, value]) => set('nan-like-string', field, value)),
  fc
    .tuple(
      fc.oneof(
        fc.constantFrom(...prototypeNames, 'amount', 'orderId', '', ' ', 'order_id\u0000', 'reason2'),
        fc.string({ unit: 'binary', maxLength: 12 }),
      ),
      wrongTypeValue,
    )
    .map(([field, value]) => set('unknown-field', field, value)),
  fieldNames.map((field): Mutation => ({
    name: 'missing-field',
    apply: (shape) => {
      const copy = { ...shape };
      delete copy[field];
      return copy;
    },
  })),
  fc.tuple(fieldNames, unicodeString).map(([field, value]) => set('unicode', field, value)),
  fc
    .tuple(
      fieldNames,
      fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 1_000, max: 5_000 }) },
        fc.integer({ min: 20_000, max: 60_000 }),
      ),
      fc.constantFrom('x', 'é', '😀'),
    )
    .map(([field, length, unit]) => set('long-string', field, unit.repeat(length))),
  fc
    .tuple(fc.oneof(fieldNames, fc.constant('extra')), nesting)
    .map(([field, shape]) => set(shape.depth > 100 ? 'deep-nesting' : 'nesting', field, nested(shape))),
);

/** Broken text: not JSON at all, or JSON with one thing wrong. */
const brokenJson = fc.oneof(
  fc.constantFrom(
    '{',
    '}',
    '{"order_id": "ORD-1001"',
    '{"order_id": "ORD-1001",}',
    "{'order_id': 'ORD-1001'}",
    '{order_id: "ORD-1001"}',
    '{"order_id": "ORD-1001"} trailing',
    '{"order_id": "ORD-1001"}{"order_id": "ORD-1002"}',
    '{"amount_cents": 2590 /* cents */}',
    '{"amount_cents": NaN}',
    '{"amount_cents": Infinity}',
    '{"amount_cents": 0x10}',
    '{"amount_cents": +2590}',
    '{"amount_cents": 02590}',
    '{"order_id": "ORD-1001\n"}', // a raw newline inside a string
    '{"order_id": "\\x41"}',
    '{"order_id": "\\ud800"}', // valid JSON: an escaped lone surrogate
    '\ufeff{"order_id": "ORD-1001"}', // a byte order mark
    'undefined',
    'NaN',
    '```json\n{"order_id": "ORD-1001"}\n```',
    '<tool_call>{"order_id": "ORD-1001"}</tool_call>',
    '{"order_id": "ORD-1001"\u0000}',
    '{"\ud800": 1',
    '[',
    '\\',
  ),
  // A valid text cut short at a random point.
  fc
    .tuple(
      fc.constantFrom('get_order', 'refund_order', 'echo_shape') as fc.Arbitrary<KnownTool>,
      fc.integer({ min: 0, max: 200 }),
    )
    .chain(([tool, cut]) =>
      validShapes[tool].map((shape) => {
        const text = JSON.stringify(shape);
        return text.slice(0, Math.min(cut, text.length - 1));
      }),
    ),
  fc.string({ unit: 'binary', maxLength: 30 }).filter((text) => !isJson(text)),
);

/** JSON that parses, but not to an object. */
const notAnObject = fc.oneof(
  fc.constantFrom(
    '42',
    '-0',
    '1e400',
    '"ORD-1001"',
    '"{\\"order_id\\": \\"ORD-1001\\"}"', // the arguments encoded twice, as models sometimes do
    'null',
    'true',
    '[]',
    '[{"order_id": "ORD-1001"}]',
  ),
  fc
    .jsonValue({ maxDepth: 2 })
    .filter((value) => value === null || typeof value !== 'object' || Array.isArray(value))
    .map((value) => JSON.stringify(value)),
);

/** Nesting as the whole arguments text, written out (deep arrays are never an object; deep objects are). */
const deepText = nesting.map((shape) => ({
  depth: shape.depth,
  text:
    shape.kind === 'array'
      ? '['.repeat(shape.depth) + ']'.repeat(shape.depth)
      : '{"a":'.repeat(shape.depth) + '1' + '}'.repeat(shape.depth),
}));

/** Text beyond the client's 256 KiB cap (in UTF-8 bytes), or just under it. */
const oversized = fc.constantFrom(
  { name: 'over-cap', text: JSON.stringify({ order_id: 'ORD-1001', note: 'x'.repeat(262_144) }) },
  { name: 'over-cap-multibyte', text: JSON.stringify({ order_id: 'ORD-1001', note: 'é'.repeat(131_080) }) },
  { name: 'under-cap', text: JSON.stringify({ order_id: 'ORD-1001', note: 'x'.repeat(200_000) }) },
  { name: 'whitespace-over-cap', text: ' '.repeat(262_145) },
);

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** An object passed as is, or written out as the model might: compact, pretty, reordered, padded. */
/** Indented JSON, as a model might write it; compact when indenting would blow it up (deep nesting grows quadratically). */
function indented(value: unknown, spaces: number): string {
  const compact = JSON.stringify(value);
  return compact.length > 2_000 ? compact : JSON.stringify(value, null, spaces);
}

function asSent(shape: Shape, form: number): string | Shape {
  switch (form) {
    case 0:
      return shape;
    case 1:
      return JSON.stringify(shape);
    case 2:
      return indented(shape, 2);
    case 3: {
      const reordered: Shape = {};
      for (const key of Object.keys(shape).reverse()) defineField(reordered, key, shape[key]);
      return ` \n\t${JSON.stringify(reordered)}\n `;
    }
    default:
      return shape;
  }
}

/** Arguments for a tool: valid, mutated, or broken in their text. */
function argumentsFor(tool: KnownTool): fc.Arbitrary<{ arguments: string | Shape; kind: string }> {
  const form = fc.integer({ min: 0, max: 3 });
  return fc.oneof(
    {
      weight: 45,
      arbitrary: fc
        .tuple(validShapes[tool], form)
        .map(([shape, sent]) => ({ arguments: asSent(shape, sent), kind: 'valid' })),
    },
    {
      weight: 50,
      arbitrary: fc
        .tuple(validShapes[tool], fc.array(mutation, { minLength: 1, maxLength: 3 }), form)
        .map(([shape, mutations, sent]) => ({
          arguments: asSent(
            mutations.reduce((current, next) => next.apply(current), shape),
            sent,
          ),
          kind: `mutated(${mutations.map((applied) => applied.name).join(',')})`,
        })),
    },
    {
      weight: 10,
      arbitrary: fc
        .tuple(
          fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
          form,
        )
        .map(([shape, sent]) => ({ arguments: asSent(shape, sent), kind: 'random-object' })),
    },
    { weight: 20, arbitrary: brokenJson.map((text) => ({ arguments: text, kind: 'broken-json' })) },
    { weight: 10, arbitrary: notAnObject.map((text) => ({ arguments: text, kind: 'not-an-object' })) },
    {
      weight: 10,
      arbitrary: deepText.map(({ depth, text }) => ({
        arguments: text,
        kind: depth > 100 ? 'deep-nesting-text' : 'nesting-text',
      })),
    },
    {
      weight: 10,
      arbitrary: fc
        .constantFrom('', ' ', '\n\t ', '{}', '\ufeff')
        .map((text) => ({ arguments: text, kind: 'empty' })),
    },
    // Rare (about 1 call in 150): each is a few hundred KB through Temporal.
    { weight: 1, arbitrary: oversized.map((big) => ({ arguments: big.text, kind: big.name })) },
  );
}

/** A tool name: mostly a known one; otherwise mangled, hostile, or random. */
/** The tools each caller mostly asks for (its own, in the tests' policy); refunds twice as often as reads. */
const usualTools: Record<string, readonly KnownTool[]> = {
  [fuzzCallers.approvalBound]: ['get_order', 'refund_order', 'refund_order'],
  [fuzzCallers.readOnly]: ['get_order'],
  [fuzzCallers.testTools]: ['echo_shape', 'explode', 'get_order'],
  [fuzzCallers.stranger]: ['get_order', 'refund_order'],
};

/** A tool name for a caller: mostly one of its own; otherwise another known tool, or a mangled, hostile or random name. */
const toolNameFor = (caller: string): fc.Arbitrary<{ tool: string; known: KnownTool | undefined }> =>
  fc.oneof(
    {
      weight: 24,
      arbitrary: fc
        .constantFrom(...(usualTools[caller] ?? knownTools))
        .map((tool) => ({ tool, known: tool })),
    },
    { weight: 3, arbitrary: fc.constantFrom(...knownTools).map((tool) => ({ tool, known: tool })) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(...prototypeNames).map((tool) => ({ tool, known: undefined })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...knownTools),
          fc.constantFrom(
            (name: string) => name.toUpperCase(),
            (name: string) => ` ${name}`,
            (name: string) => `${name}\u0000`,
            (name: string) => `${name}\ud800`,
            (name: string) => name.replace('e', 'е'), // Cyrillic е
            (name: string) => name.slice(0, -1),
            (name: string) => `${name}()`,
            (name: string) => `functions.${name}`,
            (name: string) => name.replace('_', '-'),
            (name: string) => `${name}${' '.repeat(200)}`, // cut at 200 characters
          ),
        )
        .map(([name, mangle]) => ({ tool: mangle(name), known: undefined })),
    },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.string({ unit: 'binary', maxLength: 30 }),
          fc.constantFrom(
            '',
            ' ',
            'x'.repeat(201),
            'é'.repeat(5_000),
            '\ud800',
            '../get_order',
            'get_order;rm',
          ),
        )
        .filter((tool) => !(knownTools as readonly string[]).includes(tool))
        .map((tool) => ({ tool, known: undefined })),
    },
  );

/** One call for a caller; `refund_order` is never drawn for the test-tools caller. */
function callFor(caller: string): fc.Arbitrary<FuzzCall> {
  return toolNameFor(caller)
    .filter(({ tool }) => caller !== fuzzCallers.testTools || tool !== 'refund_order')
    .chain(({ tool, known }) =>
      // An unknown name still carries arguments meant for some tool.
      argumentsFor(known ?? 'refund_order').map((drawn) => ({
        caller,
        tool,
        arguments: drawn.arguments,
        kind: `${known ?? 'other-name'} ${drawn.kind}`,
      })),
    );
}

/** The same proposal again, or with another text for the same value, or another `reason` (same idempotency key). */
function repeated(previous: FuzzCall, variant: number): FuzzCall {
  const parsed = typeof previous.arguments === 'string' ? undefined : previous.arguments;
  if (variant === 1 && parsed)
    return {
      ...previous,
      arguments: indented(parsed, 1),
      kind: `${previous.kind} again(reformatted)`,
    };
  if (variant === 2 && parsed && 'reason' in parsed) {
    return {
      ...previous,
      arguments: { ...parsed, reason: 'customer_request' },
      kind: `${previous.kind} again(other reason)`,
    };
  }
  return { ...previous, kind: `${previous.kind} again` };
}

const sessionPlan = fc.record({
  owner: fc.constantFrom(
    fuzzCallers.approvalBound,
    fuzzCallers.approvalBound,
    fuzzCallers.approvalBound,
    fuzzCallers.readOnly,
    fuzzCallers.readOnly,
    fuzzCallers.testTools,
  ),
  // Now and then 26 to 28: past the default step budget of 25, so STEP_LIMIT shows up too.
  length: fc.oneof(
    { weight: 10, arbitrary: fc.integer({ min: 1, max: 8 }) },
    { weight: 2, arbitrary: fc.integer({ min: 26, max: 28 }) },
  ),
  context: sessionContext,
});

/** The fields of a context, for a call's kind: `context(CUS-1,channel)`, `context(hostile)`. */
function contextKind(context: unknown, hostile: boolean): string {
  if (context === undefined) return '';
  if (hostile) return ' context(hostile)';
  const given = context as Record<string, unknown>;
  const fields = Object.keys(given).filter((field) => field !== 'onBehalfOf');
  const who = typeof given.onBehalfOf === 'string' ? given.onBehalfOf.slice(0, 8) : 'nobody';
  return ` context(${[who, ...fields].join(',')})`;
}

/** A whole session: its owner's calls, with repeats, and now and then a proposal from someone else. */
const session: fc.Arbitrary<FuzzSession> = sessionPlan.chain(({ owner, length, context }) =>
  fc
    .array(
      fc.record({
        step: fc.oneof(
          { weight: 17, arbitrary: fc.constant('fresh' as const) },
          { weight: 4, arbitrary: fc.constant('repeat' as const) },
          { weight: 1, arbitrary: fc.constant('intruder' as const) },
          // The harness names another end user mid-session, or attaches a hostile context.
          { weight: 1, arbitrary: fc.constant('other-context' as const) },
          // The model fills the bound customer_id itself.
          { weight: 1, arbitrary: fc.constant('bound-sent' as const) },
        ),
        otherContext: fc.oneof(
          { weight: 3, arbitrary: validContext.map((value) => ({ value, hostile: false })) },
          { weight: 1, arbitrary: hostileContext.map((value) => ({ value, hostile: true })) },
        ),
        boundCustomer: fc.constantFrom(...fuzzCustomers),
        fresh: callFor(owner),
        intruder: fc
          .constantFrom(fuzzCallers.approvalBound, fuzzCallers.readOnly, fuzzCallers.stranger)
          .filter((caller) => caller !== owner)
          .chain((caller) => callFor(caller)),
        pick: fc.nat(),
        variant: fc.integer({ min: 0, max: 2 }),
      }),
      { minLength: length, maxLength: length },
    )
    .map((draws) => {
      const inContext = (call: FuzzCall): FuzzCall =>
        context.value === undefined
          ? call
          : {
              ...call,
              context: context.value,
              kind: `${call.kind}${contextKind(context.value, context.hostile)}`,
            };
      const calls: FuzzCall[] = [];
      for (const draw of draws) {
        const earlier = calls.filter((call) => call.caller === owner);
        if (draw.step === 'repeat' && earlier.length > 0) {
          calls.push(repeated(earlier[draw.pick % earlier.length]!, draw.variant));
        } else if (draw.step === 'intruder') {
          calls.push(inContext({ ...draw.intruder, kind: `${draw.intruder.kind} intruder` }));
        } else if (draw.step === 'other-context') {
          const other = draw.otherContext;
          calls.push({
            ...draw.fresh,
            context: other.value,
            kind: `${draw.fresh.kind}${contextKind(other.value, other.hostile)} other-context`,
          });
        } else if (draw.step === 'bound-sent' && typeof draw.fresh.arguments === 'object') {
          calls.push(
            inContext({
              ...draw.fresh,
              arguments: { ...draw.fresh.arguments, customer_id: draw.boundCustomer },
              kind: `${draw.fresh.kind} bound-sent`,
            }),
          );
        } else {
          calls.push(inContext(draw.fresh));
        }
      }
      return { calls };
    }),
);

/** Session `index` of the campaign drawn from `seed`: the same pair always gives the same session. */
export function drawSession(input: { seed: number; index: number }): FuzzSession {
  // One fast-check seed per session (a 32-bit mix of both), so a session can be drawn on its own.
  const mixed = Math.imul(input.seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(input.index + 1, 0xc2b2ae35);
  const [drawn] = fc.sample(session, { seed: mixed | 0, numRuns: 1 });
  return drawn!;
}

/**
 * The campaign's sessions, drawn one at a time (so a long run holds only those in flight) until they
 * hold `payloads` calls; the last one is cut to fit. The same seed always gives the same sessions.
 */
export function sessionSource(input: { seed: number; payloads: number }): () => FuzzSession | undefined {
  let index = 0;
  let total = 0;
  return () => {
    if (total >= input.payloads) return undefined;
    const drawn = drawSession({ seed: input.seed, index: index++ });
    const calls = drawn.calls.slice(0, input.payloads - total);
    total += calls.length;
    return { calls };
  };
}
