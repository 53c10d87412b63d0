import { describe, expect, it } from 'vitest';
import { jsonForScript } from './console-pages';

describe("the call page's JSON data block", () => {
  it('cannot be closed or broken out of by any value, and reads back as the same value', () => {
    const value = {
      reason: '</script><script>alert(1)</script><!-- & -->',
      separators: 'a\u2028b\u2029c',
      nested: [{ '</SCRIPT>': '<' }],
      amount_cents: 2590,
    };
    const text = jsonForScript(value);
    expect(text).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});
