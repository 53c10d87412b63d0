import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { errorCodes } from '../shared/codes';
import { rejection } from '../shared/tool-result';
import type { ToolResult } from '../shared/tool-result';
import { toolResultJsonSchema } from './tool-result-schema';

describe('the ToolResult JSON Schema', () => {
  const valid = new Ajv({ strict: true }).compile(structuredClone(toolResultJsonSchema));

  it('accepts every shape toolgate answers with: a success, a replay, and a rejection with each code', () => {
    const success: ToolResult = {
      ok: true,
      tool: 'get_order',
      code: 'OK',
      message: 'Done.',
      effect: 'none',
      data: { order_id: 'ORD-1001' },
      callId: 'tc-1',
    };
    expect(valid(success), JSON.stringify(valid.errors)).toBe(true);
    expect(valid({ ...success, effect: 'applied', replayed: true })).toBe(true);
    for (const code of [...errorCodes, 'AMOUNT_EXCEEDS_REFUNDABLE']) {
      const result = rejection({ tool: '', callId: '', code, message: `${code}.`, effect: 'unknown' });
      expect(valid(result), code).toBe(true);
    }
  });

  it('refuses what no ToolResult is: an extra field, another effect, a lower-case code, replayed false', () => {
    const base = rejection({ tool: 't', callId: 'tc-1', code: 'INVALID_JSON', message: 'm' });
    expect(valid({ ...base, extra: 1 })).toBe(false);
    expect(valid({ ...base, effect: 'maybe' })).toBe(false);
    expect(valid({ ...base, code: 'oops' })).toBe(false);
    expect(valid({ ...base, replayed: false })).toBe(false);
    const { callId: _callId, ...withoutCallId } = base;
    expect(valid(withoutCallId)).toBe(false);
  });

  it('cannot be changed by one of its users', () => {
    expect(() => {
      (toolResultJsonSchema as { type: string }).type = 'array';
    }).toThrow(TypeError);
    expect(Object.isFrozen(toolResultJsonSchema.properties)).toBe(true);
  });
});
