import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import {
  capProposal,
  deriveCallId,
  jsonNestingDepth,
  isCallId,
  maxArgumentsBytes,
  maxArgumentsDepth,
  parseArguments,
  proposalArgumentsDigest,
} from './proposal';

const base = { session: 's1', caller: 'support-bot', tool: 'refund_order' };

describe('canonical JSON and digests', () => {
  it('sorts object keys recursively and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('hashes with the pure-JS SHA-256 to the same bytes as node:crypto', () => {
    for (const text of ['', 'refund', '{"amount_cents":2590}', 'ação ✓ 😀']) {
      expect(sha256Hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
    }
  });
});

describe('call ids', () => {
  it('derives the documented key: caller, tool, session and canonical arguments', () => {
    const proposal = capProposal({ ...base, arguments: '{"amount_cents":2590}' });
    const expected = createHash('sha256')
      .update(JSON.stringify(['support-bot', 'refund_order', 'session:s1', { amount_cents: 2590 }]))
      .digest('hex');
    expect(deriveCallId({ proposal })).toBe(`tc-refund_order-${expected}`);
  });

  it("names the tool in the call id only when the name has a tool name's shape", () => {
    const named = deriveCallId({ proposal: capProposal({ ...base, arguments: '{}' }) });
    expect(named).toMatch(/^tc-refund_order-[0-9a-f]{64}$/);
    expect(isCallId(named)).toBe(true);
    const odd = deriveCallId({
      proposal: capProposal({ ...base, tool: 'refund order; drop', arguments: '{}' }),
    });
    expect(odd).toMatch(/^tc-(?:\w+-)?[0-9a-f]{64}$/);
    expect(isCallId(odd)).toBe(true);
    expect(isCallId('tc-refund order-' + '0'.repeat(64))).toBe(false);
    expect(isCallId('tc-refund_order-' + '0'.repeat(63))).toBe(false);
  });

  it('gives one call id to arguments that differ only in whitespace and key order', () => {
    const a = deriveCallId({
      proposal: capProposal({ ...base, arguments: '{"amount_cents":2590,"currency":"BRL"}' }),
    });
    const b = deriveCallId({
      proposal: capProposal({ ...base, arguments: '{ "currency" : "BRL", "amount_cents" : 2590 }' }),
    });
    const c = deriveCallId({
      proposal: capProposal({ ...base, arguments: { currency: 'BRL', amount_cents: 2590 } }),
    });
    expect(a).toBe(b);
    expect(a).toBe(c);
  });

  it('ignores fields outside idempotencyFields, but not the ones inside', () => {
    const fields = ['amount_cents'];
    const damaged = capProposal({ ...base, arguments: '{"amount_cents":2590,"reason":"damaged"}' });
    const other = capProposal({ ...base, arguments: '{"amount_cents":2590,"reason":"customer_request"}' });
    const more = capProposal({ ...base, arguments: '{"amount_cents":2591,"reason":"damaged"}' });
    expect(deriveCallId({ proposal: damaged, idempotencyFields: fields })).toBe(
      deriveCallId({ proposal: other, idempotencyFields: fields }),
    );
    expect(deriveCallId({ proposal: damaged, idempotencyFields: fields })).not.toBe(
      deriveCallId({ proposal: more, idempotencyFields: fields }),
    );
  });

  it('separates sessions, callers and tools', () => {
    const id = (overrides: Partial<typeof base>) =>
      deriveCallId({ proposal: capProposal({ ...base, ...overrides, arguments: '{}' }) });
    const ids = new Set([id({}), id({ session: 's2' }), id({ caller: 'other' }), id({ tool: 'get_order' })]);
    expect(ids.size).toBe(4);
  });

  it('keys an intent by caller, tool and intent id only', () => {
    const first = capProposal({ ...base, arguments: '{"amount_cents":1}', intentId: 'confirm-9' });
    const second = capProposal({
      ...base,
      session: 'other',
      arguments: '{"amount_cents":2}',
      intentId: 'confirm-9',
    });
    expect(deriveCallId({ proposal: first })).toBe(deriveCallId({ proposal: second }));
    const expected = createHash('sha256')
      .update(JSON.stringify(['support-bot', 'refund_order', 'intent:confirm-9']))
      .digest('hex');
    expect(deriveCallId({ proposal: first })).toBe(`tc-${first.tool}-${expected}`);
  });

  it('keys unparseable arguments by their raw text', () => {
    const a = deriveCallId({ proposal: capProposal({ ...base, arguments: '{"amount' }) });
    const b = deriveCallId({ proposal: capProposal({ ...base, arguments: '{"amount ' }) });
    expect(a).not.toBe(b);
  });
});

describe('proposal caps', () => {
  it('cuts a tool name at 200 characters and flags it', () => {
    const proposal = capProposal({ ...base, tool: 'x'.repeat(500), arguments: '{}' });
    expect(proposal.tool).toHaveLength(200);
    expect(proposal.toolNameTruncated).toBe(true);
  });

  it('replaces arguments over 256 KiB by their size and digest', () => {
    const raw = JSON.stringify({ padding: 'é'.repeat(maxArgumentsBytes / 2) });
    const proposal = capProposal({ ...base, arguments: raw });
    expect(proposal.rawArguments).toBe('');
    expect(proposal.argumentsTooLarge).toEqual({ bytes: Buffer.byteLength(raw), sha256: sha256Hex(raw) });
  });

  it('parses an empty text as no arguments and refuses non-objects', () => {
    expect(parseArguments('  ')).toEqual({ ok: true, value: {} });
    expect(parseArguments('null').ok).toBe(false);
    expect(parseArguments('"text"').ok).toBe(false);
    expect(parseArguments('[]').ok).toBe(false);
    expect(parseArguments('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
  });
});

describe('nesting depth', () => {
  const deepText = (depth: number) => `{"a":${'['.repeat(depth - 1)}1${']'.repeat(depth - 1)}}`;

  it('counts the nesting of a JSON text without parsing it, ignoring brackets inside strings', () => {
    expect(jsonNestingDepth('1')).toBe(0);
    expect(jsonNestingDepth('{"a":[1,{"b":[]}]}')).toBe(4);
    expect(jsonNestingDepth('{"a":"[[[{{{\\"[[["}')).toBe(1);
    expect(jsonNestingDepth(deepText(3_000))).toBe(3_000);
  });

  it(`accepts ${maxArgumentsDepth} levels and refuses one more as INVALID_JSON, naming the limit`, () => {
    expect(parseArguments(deepText(maxArgumentsDepth)).ok).toBe(true);
    const refused = parseArguments(deepText(maxArgumentsDepth + 1));
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.message).toContain(
      `nested ${maxArgumentsDepth + 1} levels deep; the limit is ${maxArgumentsDepth}`,
    );
  });

  it('derives a call id for arguments nested to the byte cap, as text or as an object, without throwing', () => {
    const depth = maxArgumentsBytes / 2 - 8;
    const text = `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(maxArgumentsBytes);
    const fromText = capProposal({ ...base, arguments: text });
    expect(deriveCallId({ proposal: fromText })).toMatch(/^tc-(?:\w+-)?[0-9a-f]{64}$/);
    expect(proposalArgumentsDigest(fromText)).toMatch(/^[0-9a-f]{64}$/);

    let value: unknown = 1;
    for (let level = 0; level < 200_000; level++) value = [value];
    const fromObject = capProposal({ ...base, arguments: { a: value } });
    expect(fromObject.rawArguments).toBe('');
    expect(fromObject.argumentsUnreadable).toContain(`more than ${maxArgumentsDepth} levels`);
    expect(deriveCallId({ proposal: fromObject })).toMatch(/^tc-(?:\w+-)?[0-9a-f]{64}$/);
  });

  it('refuses an object that shares references past what the byte cap holds, at once', () => {
    let shared: unknown[] = [1];
    for (let level = 0; level < 60; level++) shared = [shared, shared];
    // 2^60 paths: without the budget this never returns, and the test times out.
    const proposal = capProposal({ ...base, arguments: { a: shared } });
    expect(proposal.argumentsUnreadable).toContain('more than 262144 values');
  });

  it('marks cyclic and BigInt objects as unreadable instead of throwing', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(capProposal({ ...base, arguments: cyclic }).argumentsUnreadable).toContain('levels');
    const big = capProposal({ ...base, arguments: { amount_cents: 10n } });
    expect(big.argumentsUnreadable).toMatch(/not JSON/);
    expect(deriveCallId({ proposal: big })).toMatch(/^tc-/);
  });
});
