// What `toolgate contract check` warns about besides the diff, neither of which a code change shows:
// recorded answers that have grown old (a double that ages hides exactly the change it should catch)
// and a model that is not the one the full selection set last passed with (a model upgrade changes
// no line of code). Warnings never fail the check. Pure: the CLI reads the files and the clock.
import type { RecordingScenario } from '../tools/define-tool-implementation';
import { compareText } from './contract-snapshot';

/** How old a fixture may grow before `check` asks for a new recording, unless told otherwise. */
export const defaultMaxFixtureAge = '30d';

/** What a warning is about; stable, for CI. */
export const contractWarningKinds = [
  'FIXTURES_STALE',
  'FIXTURES_FROM_THE_FUTURE',
  'FIXTURE_UNREADABLE',
  'MODEL_CHANGED',
] as const;

/** A kind of contract warning. */
export type ContractWarningKind = (typeof contractWarningKinds)[number];

/** A fixture older than the age allowed. */
export interface StaleFixture {
  tool: string;
  scenario: RecordingScenario;
  recordedAt: string;
  /** Whole days since it was recorded. */
  ageDays: number;
}

/** Something `check` (and `test`) says without failing: with its kind, a sentence, and the details. */
export type ContractWarning =
  | { kind: 'FIXTURES_STALE'; message: string; maxAge: string; fixtures: StaleFixture[] }
  | {
      kind: 'FIXTURES_FROM_THE_FUTURE';
      message: string;
      fixtures: { tool: string; scenario: RecordingScenario; recordedAt: string }[];
    }
  | { kind: 'FIXTURE_UNREADABLE'; message: string; file: string }
  | {
      kind: 'MODEL_CHANGED';
      message: string;
      model: string;
      /** The snapshot's record of the last full selection run; empty when none passed yet. */
      lastFullRun: { model?: string; at?: string };
    };

const units: Record<string, number> = { h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** How far ahead of `now` a recording date may be before it is suspect: clocks of two machines differ a little. */
export const fixtureClockSkewMs = 5 * 60_000;

/** Reads an age such as `30d`, `12h` or `2w` (a bare number is days); never throws. */
export function parseAge(text: string): { ok: true; ms: number } | { ok: false; message: string } {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([hdw]?)\s*$/.exec(text);
  if (!match?.[1]) {
    return {
      ok: false,
      message: `"${text}" is not an age: write a number of hours, days or weeks (12h, 30d, 2w)`,
    };
  }
  const ms = Number(match[1]) * (units[match[2] || 'd'] ?? units.d!);
  if (!(ms > 0)) return { ok: false, message: `"${text}": an age must be more than zero` };
  return { ok: true, ms };
}

/**
 * The fixtures recorded more than `maxAgeMs` before `now`, as one warning that names the oldest and
 * says to re-record; and those dated after `now` (beyond a few minutes of clock skew), as another: a
 * wrong clock or a hand edit, and a date that would keep the fixture fresh forever. None when every
 * fixture is fresh.
 */
export function fixtureAgeWarnings(input: {
  fixtures: readonly { tool: string; scenario: RecordingScenario; recordedAt: string }[];
  now: Date;
  maxAgeMs: number;
  /** The age as the user wrote it, for the message (`30d`). */
  maxAge: string;
}): ContractWarning[] {
  const stale = input.fixtures
    .map((fixture) => ({ ...fixture, ms: input.now.getTime() - Date.parse(fixture.recordedAt) }))
    .filter((fixture) => fixture.ms > input.maxAgeMs)
    .sort((a, b) => b.ms - a.ms || compareText(a.tool, b.tool) || compareText(a.scenario, b.scenario))
    .map(({ ms, ...fixture }) => ({ ...fixture, ageDays: Math.floor(ms / units.d!) }));
  const future = input.fixtures
    .filter((fixture) => Date.parse(fixture.recordedAt) - input.now.getTime() > fixtureClockSkewMs)
    .sort((a, b) => compareText(a.tool, b.tool) || compareText(a.scenario, b.scenario))
    .map(({ tool, scenario, recordedAt }) => ({ tool, scenario, recordedAt }));
  const warnings: ContractWarning[] = [];
  const first = future[0];
  if (first) {
    warnings.push({
      kind: 'FIXTURES_FROM_THE_FUTURE',
      message:
        `${future.length === 1 ? '1 fixture is' : `${future.length} fixtures are`} dated after now ` +
        `(${first.tool} ${first.scenario}: ${first.recordedAt}): a wrong clock or a hand edit, and such a ` +
        'fixture never grows old; re-record it with `toolgate contract record`',
      fixtures: future,
    });
  }
  const oldest = stale[0];
  if (!oldest) return warnings;
  const count = stale.length === 1 ? '1 fixture was' : `${stale.length} fixtures were`;
  return [
    ...warnings,
    {
      kind: 'FIXTURES_STALE',
      message:
        `${count} recorded more than ${input.maxAge} ago (the oldest: ${oldest.tool} ${oldest.scenario}, ` +
        `${oldest.ageDays} days): re-record them with \`toolgate contract record\`, since an old recording ` +
        'hides the change it should catch',
      maxAge: input.maxAge,
      fixtures: stale,
    },
  ];
}

/**
 * A warning when a model is configured and it is not the model of the snapshot's last full selection
 * run (or none passed yet): the full selection set must run. None when no model is configured.
 */
export function modelWarnings(input: {
  model: string | undefined;
  lastFullRun: { model?: string; at?: string };
}): ContractWarning[] {
  const { model, lastFullRun } = input;
  if (model === undefined || model === '' || model === lastFullRun.model) return [];
  const since =
    lastFullRun.model === undefined
      ? 'no full selection run is recorded in the snapshot'
      : `the last full selection run used ${lastFullRun.model}${lastFullRun.at ? ` (${lastFullRun.at})` : ''}`;
  return [
    {
      kind: 'MODEL_CHANGED',
      message:
        `the configured model is ${model} and ${since}: the full selection set must run ` +
        '(toolgate eval --set full; a passing run records the model in the snapshot)',
      model,
      lastFullRun: { ...lastFullRun },
    },
  ];
}
