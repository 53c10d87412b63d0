import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { YamlValue } from './yaml-subset';
import { parseYamlSubset } from './yaml-subset';

// The scheduled CI example (.github/workflows/contracts.yml) is ready to use: valid YAML in the block
// style GitHub reads, every pull request runs the check, the adapters and the selection suite, and the
// weekly run re-records, shows the diff and tests the new recordings. Read with a small block-YAML
// reader (yaml-subset.ts): a workflow it cannot read fails here.

const repository = join(__dirname, '..', '..');
const text = readFileSync(join(repository, '.github', 'workflows', 'contracts.yml'), 'utf8');

type Step = {
  name?: string;
  id?: string;
  if?: string;
  run?: string;
  uses?: string;
  with?: Record<string, YamlValue>;
};
type Job = { if: string; steps: Step[]; env?: Record<string, string>; permissions?: Record<string, string> };
type Workflow = {
  name: string;
  on: Record<string, YamlValue>;
  env: Record<string, string>;
  jobs: Record<string, Job>;
};

const workflow = parseYamlSubset(text) as unknown as Workflow;

/** The index of the first step whose `run` contains `command`; fails when none does. */
function stepRunning(job: Job, command: string): number {
  const index = job.steps.findIndex((step) => step.run?.includes(command));
  expect(index, `a step runs "${command}"`).toBeGreaterThanOrEqual(0);
  return index;
}

describe('the contracts workflow', () => {
  it('runs on every pull request, weekly, and by hand', () => {
    expect(Object.keys(workflow.on).sort()).toEqual(['pull_request', 'schedule', 'workflow_dispatch']);
    expect(workflow.on.pull_request).toBeNull();
    const [schedule] = workflow.on.schedule as { cron: string }[];
    const fields = schedule!.cron.split(' ');
    expect(fields).toHaveLength(5);
    // Minute, hour and weekday fixed, any day of the month: once a week.
    expect(fields.slice(0, 2).every((field) => /^\d+$/.test(field))).toBe(true);
    expect(fields.slice(2, 4)).toEqual(['*', '*']);
    expect(fields[4]).toMatch(/^[0-6]$/);
  });

  it('on a pull request: the check, then the adapters on the fixtures, then the selection suite when the LLM secrets exist', () => {
    const job = workflow.jobs.check!;
    expect(job.if).toBe("github.event_name == 'pull_request'");
    const check = stepRunning(job, 'toolgate -- contract check');
    const adapters = stepRunning(job, 'toolgate -- contract test');
    const selection = stepRunning(job, 'toolgate -- eval --set');
    expect(check).toBeLessThan(adapters);
    expect(adapters).toBeLessThan(selection);
    expect(job.steps[selection]!.if).toContain("env.LLM_BASE_URL != ''");
    expect(workflow.env.LLM_BASE_URL).toBe('${{ secrets.LLM_BASE_URL }}');
    expect(workflow.env.LLM_MODEL).toBe('${{ vars.LLM_MODEL }}');
  });

  it('runs the full set on a pull request when a description or the model changed, the critical set otherwise', () => {
    const job = workflow.jobs.check!;
    const decide = job.steps[stepRunning(job, 'contract check --json')]!;
    expect(decide.run).toContain(
      'check.selectionSuiteMustRun === true || check.fullSelectionMustRun === true',
    );
    expect(decide.run).toContain('set=${full ? "full" : "critical"}');
    expect(job.steps[stepRunning(job, 'toolgate -- eval --set')]!.run).toContain(
      `--set "\${{ steps.${decide.id}.outputs.set }}"`,
    );
  });

  it('weekly: starts the service, records, shows the diff, tests the new recordings, runs the full set, opens a pull request', () => {
    const job = workflow.jobs.refresh!;
    expect(job.if).toBe("github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'");
    const start = stepRunning(job, 'examples/orders/service/main.ts');
    const record = stepRunning(job, 'toolgate -- contract record');
    const diff = stepRunning(job, 'git diff --exit-code');
    const adapters = stepRunning(job, 'toolgate -- contract test');
    const full = stepRunning(job, 'toolgate -- eval --set full');
    expect([start, record, diff, adapters, full]).toEqual(
      [...[start, record, diff, adapters, full]].sort((a, b) => a - b),
    );
    expect(job.steps[diff]!.run).toContain('--ignore-matching-lines=\'"recordedAt":\' -- contract-fixtures/');
    expect(job.steps[diff]!['continue-on-error' as keyof Step]).toBe(true);
    const pullRequest = job.steps.find((step) => step.uses?.startsWith('peter-evans/create-pull-request@'));
    expect(pullRequest?.with?.['add-paths']).toBe('contract-fixtures/\ntoolgate.contracts.json\n');
    expect(job.permissions).toEqual({ contents: 'write', 'pull-requests': 'write' });
    expect(job.steps.at(-1)!.if).toBe(
      "steps.adapters.outcome == 'failure' || steps.full-selection.outcome == 'failure'",
    );
  });

  it('records writes only against the throwaway service or a staging marked as a sandbox', () => {
    const job = workflow.jobs.refresh!;
    expect(job.env?.RECORD_WRITES).toBe(
      "${{ secrets.ORDERS_STAGING_URL == '' && 'true' || vars.RECORD_WRITES }}",
    );
    const record = job.steps[stepRunning(job, 'toolgate -- contract record')]!.run!;
    expect(record).toContain('if [ "$RECORD_WRITES" = "true" ]; then writes="--writes"; fi');
    // The service it starts listens where the config's implementations look by default.
    const start = job.steps[stepRunning(job, 'examples/orders/service/main.ts')]!;
    expect(start.if).toBe("env.ORDERS_STAGING_URL == ''");
    expect(start.run).toContain('--port 4100');
    expect(job.env?.ORDERS_URL).toBe("${{ secrets.ORDERS_STAGING_URL || 'http://127.0.0.1:4100' }}");
    expect(readFileSync(join(repository, 'toolgate.config.ts'), 'utf8')).toContain(
      "process.env.ORDERS_URL ?? 'http://127.0.0.1:4100'",
    );
  });

  it('names files and actions that exist, each action at a pinned major version', () => {
    expect(existsSync(join(repository, 'examples', 'orders', 'service', 'main.ts'))).toBe(true);
    expect(workflow.env.SELECTION_CASES).toBe('examples/orders/selection-cases.json');
    expect(existsSync(join(repository, 'examples', 'orders', 'selection-cases.json'))).toBe(true);
    const actions = Object.values(workflow.jobs).flatMap((job) =>
      job.steps.flatMap((step) => (step.uses ? [step.uses] : [])),
    );
    expect(actions.length).toBeGreaterThan(0);
    for (const action of actions) expect(action).toMatch(/^[\w-]+\/[\w-]+@v\d+$/);
  });
});

describe('the block-YAML reader the test above relies on', () => {
  it('reads mappings, sequences of mappings, quoted and block scalars', () => {
    expect(
      parseYamlSubset(
        [
          'a: 1',
          "b: 'it''s'",
          'c:',
          '  - x',
          '  - k: v',
          '    l: "w"',
          'd: |',
          '  one',
          '  two',
          'e: # a comment',
          'f: plain text # and a comment',
        ].join('\n'),
      ),
    ).toEqual({ a: 1, b: "it's", c: ['x', { k: 'v', l: 'w' }], d: 'one\ntwo\n', e: null, f: 'plain text' });
  });

  it.each([
    ['a tab in the indentation', 'a:\n\tb: 1', 'line 2: a tab in the indentation'],
    ['a key given twice', 'a: 1\na: 2', 'line 2: key "a" given twice'],
    [
      'a line indented as nothing opened',
      'a:\n  b: 1\n   c: 2',
      'line 3: indented as nothing above it opened',
    ],
    ['a flow collection', 'a: [1, 2]', 'flow collections, anchors and tags are not read here'],
    ['an unterminated quote', "a: 'x", "line 1: an unterminated '...'"],
  ])('refuses %s', (_what, source, message) => {
    expect(() => parseYamlSubset(source)).toThrow(message);
  });
});
