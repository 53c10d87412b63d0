import { describe, expect, it } from 'vitest';
import { capProposal, deriveCallId, maxUserMessageBytes } from 'toolgate/protocol';

// The turn's user message travels with a proposal for mining: capped like the rest of a proposal, and
// never part of what the call is (its id).

const base = {
  session: 's-1',
  caller: 'support-bot',
  tool: 'get_order',
  arguments: '{"order_id":"ORD-1001"}',
};

describe("a proposal's user message", () => {
  it('travels with the proposal without changing its call id', () => {
    const withMessage = capProposal({ ...base, userMessage: 'where is ORD-1001?' });
    const withAnother = capProposal({ ...base, userMessage: 'status of my order please' });

    expect(withMessage.userMessage).toBe('where is ORD-1001?');
    expect(withMessage.userMessageTruncated).toBeUndefined();
    expect(deriveCallId({ proposal: withMessage })).toBe(deriveCallId({ proposal: capProposal(base) }));
    expect(deriveCallId({ proposal: withAnother })).toBe(deriveCallId({ proposal: withMessage }));
  });

  it('is cut to the byte cap on a character boundary, and flagged', () => {
    // 'é' is two bytes and '😀' four: the cut falls where a whole character no longer fits.
    const message = `${'a'.repeat(maxUserMessageBytes - 3)}é😀 and more`;

    const proposal = capProposal({ ...base, userMessage: message });

    expect(proposal.userMessage).toBe(`${'a'.repeat(maxUserMessageBytes - 3)}é`);
    expect(Buffer.byteLength(proposal.userMessage!, 'utf8')).toBe(maxUserMessageBytes - 1);
    expect(proposal.userMessageTruncated).toBe(true);
  });

  it('is left out when the harness passes something that is not text', () => {
    const proposal = capProposal({ ...base, userMessage: { text: 'hi' } as unknown as string });

    expect(proposal).not.toHaveProperty('userMessage');
  });
});
