import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../../src/shared/canonical-json';
import { capProposal, deriveCallId, maxArgumentsBytes, parseArguments } from '../../src/shared/proposal';

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
    expect(deriveCallId({ proposal })).toBe(`tc-${expected}`);
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
    expect(deriveCallId({ proposal: first })).toBe(`tc-${expected}`);
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
