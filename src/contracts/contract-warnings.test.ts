import { describe, expect, it } from 'vitest';
import { fixtureAgeWarnings, modelWarnings, parseAge } from './contract-warnings';

const day = 86_400_000;
const now = new Date('2026-12-01T12:00:00.000Z');
const recorded = (ms: number) => new Date(now.getTime() - ms).toISOString();

describe('parseAge', () => {
  it.each([
    ['30d', 30 * day],
    ['12h', 12 * 3_600_000],
    ['2w', 14 * day],
    ['7', 7 * day],
    ['1.5d', 1.5 * day],
  ])('reads %s', (text, ms) => {
    expect(parseAge(text)).toEqual({ ok: true, ms });
  });

  it.each(['', 'monthly', '30 days', '-1d', '0d'])('refuses "%s"', (text) => {
    expect(parseAge(text).ok).toBe(false);
  });
});

describe('fixtureAgeWarnings', () => {
  const warn = (ages: number[]) =>
    fixtureAgeWarnings({
      fixtures: ages.map((ms, index) => ({
        tool: `tool_${index}`,
        scenario: 'success' as const,
        recordedAt: recorded(ms),
      })),
      now,
      maxAgeMs: 30 * day,
      maxAge: '30d',
    });

  it('says nothing up to the age, and warns once past it, the oldest first', () => {
    expect(warn([0, 30 * day])).toEqual([]);
    const [warning] = warn([30 * day + 1, 5 * day, 61 * day]);
    expect(warning).toMatchObject({
      kind: 'FIXTURES_STALE',
      fixtures: [
        { tool: 'tool_2', ageDays: 61 },
        { tool: 'tool_0', ageDays: 30 },
      ],
    });
    expect(warning?.message).toBe(
      '2 fixtures were recorded more than 30d ago (the oldest: tool_2 success, 61 days): re-record them with ' +
        '`toolgate contract record`, since an old recording hides the change it should catch',
    );
  });

  it('warns about a fixture dated in the future, which would never grow old, beyond a few minutes of clock skew', () => {
    expect(warn([-60_000])).toEqual([]);
    const warnings = warn([-365 * day, 5 * day, 31 * day]);
    expect(warnings.map((warning) => warning.kind)).toEqual(['FIXTURES_FROM_THE_FUTURE', 'FIXTURES_STALE']);
    expect(warnings[0]).toMatchObject({
      fixtures: [{ tool: 'tool_0', scenario: 'success', recordedAt: '2027-12-01T12:00:00.000Z' }],
      message: expect.stringContaining(
        '1 fixture is dated after now (tool_0 success: 2027-12-01T12:00:00.000Z)',
      ) as string,
    });
  });
});

describe('modelWarnings', () => {
  it('asks for the full set when the configured model is not the last full run', () => {
    expect(modelWarnings({ model: undefined, lastFullRun: { model: 'a' } })).toEqual([]);
    expect(modelWarnings({ model: 'a', lastFullRun: { model: 'a', at: 'x' } })).toEqual([]);
    expect(modelWarnings({ model: 'b', lastFullRun: { model: 'a' } })).toEqual([
      {
        kind: 'MODEL_CHANGED',
        model: 'b',
        lastFullRun: { model: 'a' },
        message:
          'the configured model is b and the last full selection run used a: the full selection set must run ' +
          '(toolgate eval --set full; a passing run records the model in the snapshot)',
      },
    ]);
  });
});
