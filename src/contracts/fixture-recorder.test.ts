import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineToolContract } from '../tools/define-tool';
import type { BackendResponse } from '../tools/define-tool-implementation';
import { defineToolImplementation } from '../tools/define-tool-implementation';
import { recordingPlan, recordScenario } from './fixture-recorder';

const input = z.strictObject({ id: z.string().describe('The id.') });
const output = z.strictObject({ id: z.string() });

function tool(options: {
  name: string;
  effect: 'read' | 'write';
  sandbox?: boolean;
  answer?: () => Promise<BackendResponse>;
}) {
  const contract = defineToolContract({
    name: options.name,
    description: 'A tool for the recorder tests.',
    input,
    output,
    effect: options.effect,
    ...(options.effect === 'write' ? { risk: () => 'reversible' as const } : {}),
    domainCodes: { NOT_FOUND_HERE: 'no such thing' },
  });
  return defineToolImplementation(contract, {
    output: {
      request: options.answer ?? (async ({ args }) => ({ status: 200, body: { id: args.id } })),
      adapt: ({ response }) => response.body as { id: string },
    },
    ...(options.effect === 'write' ? { findApplied: async () => ({ status: 'not-seen' as const }) } : {}),
    recordings: {
      source: `${options.name}-backend`,
      ...(options.sandbox ? { sandbox: true } : {}),
      scenarios: {
        unavailable: {
          args: { id: 'u' },
          request: async () => ({ status: null, body: null, error: 'ECONNREFUSED' }),
        },
        success: { args: { id: 's' } },
        'business-error': { args: { id: 'b' } },
      },
    },
  });
}

describe('recordingPlan', () => {
  it("records reads first, in scenario order, and skips a write's scenarios but its unavailable one", () => {
    const plan = recordingPlan({
      tools: [tool({ name: 'write_it', effect: 'write' }), tool({ name: 'read_it', effect: 'read' })],
      writes: false,
    });
    expect(plan.map((step) => [step.tool.contract.name, step.scenario, step.skipped !== undefined])).toEqual([
      ['read_it', 'success', false],
      ['read_it', 'business-error', false],
      ['read_it', 'unavailable', false],
      ['write_it', 'success', true],
      ['write_it', 'business-error', true],
      ['write_it', 'unavailable', false],
    ]);
    expect(plan[3]?.skipped).toContain('pass --writes');
  });

  it("records a write's scenarios with --writes, or when its recordings name a sandbox", () => {
    for (const plan of [
      recordingPlan({ tools: [tool({ name: 'write_it', effect: 'write' })], writes: true }),
      recordingPlan({ tools: [tool({ name: 'write_it', effect: 'write', sandbox: true })], writes: false }),
    ]) {
      expect(plan.every((step) => step.skipped === undefined)).toBe(true);
    }
  });
});

describe('recordScenario', () => {
  it('records the answer with its date, source and arguments', async () => {
    const result = await recordScenario({
      tool: tool({ name: 'read_it', effect: 'read' }),
      scenario: 'success',
      recordedAt: 'now',
    });
    expect(result).toMatchObject({
      ok: true,
      ownRequest: false,
      fixture: {
        tool: 'read_it',
        scenario: 'success',
        recordedAt: 'now',
        source: 'read_it-backend',
        request: { args: { id: 's' } },
        response: { status: 200, body: { id: 's' } },
      },
    });
  });

  it('refuses an answer that does not fit the scenario, and a request that throws', async () => {
    const refused = tool({
      name: 'read_it',
      effect: 'read',
      answer: async () => ({ status: 403, body: { code: 'NO', message: 'no' } }),
    });
    expect(await recordScenario({ tool: refused, scenario: 'success', recordedAt: 'now' })).toEqual({
      ok: false,
      message:
        'the backend answered 403 (NO: no), not a success (2xx); the backend wants a credential, and a recording ' +
        'sends none: record against one that does not check them; the fixture is left as it was',
    });
    const throwing = tool({
      name: 'read_it',
      effect: 'read',
      answer: async () => {
        throw new Error('socket hang up');
      },
    });
    expect(await recordScenario({ tool: throwing, scenario: 'success', recordedAt: 'now' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('the request threw (socket hang up)') as string,
    });
  });
});
