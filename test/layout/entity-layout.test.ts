import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The layout follows the durable entities: each entity's folder holds its protocol, its workflow side,
// its activities and its client side. This test keeps it so: a workflow written anywhere else, or
// sandbox code outside an entity's workflow files, fails it.

const root = join(__dirname, '..', '..');
const src = join(root, 'src');

/** The entities and whether each runs a workflow of its own (approvals run inside the call's). */
const entities: Record<string, { workflow: boolean }> = {
  calls: { workflow: true },
  approvals: { workflow: false },
  sessions: { workflow: true },
  grants: { workflow: true },
  controls: { workflow: true },
  quotas: { workflow: true },
  'approver-keys': { workflow: true },
  notifications: { workflow: true },
};

interface SourceFile {
  /** Relative to src/, with forward slashes. */
  path: string;
  text: string;
}

/** What breaks the layout in a set of source files; empty when it holds. */
function layoutProblems(files: SourceFile[]): string[] {
  const problems: string[] = [];
  const byPath = new Map(files.map((file) => [file.path, file.text]));
  const index = byPath.get('workflows.ts');
  if (index === undefined)
    return ['src/workflows.ts, the list the workflow bundle is built from, is missing'];
  const listed = new Map<string, string>();
  for (const line of index.split('\n').filter((text) => text.startsWith('export'))) {
    const match = /^export \{ (\w+) \} from '\.\/([\w-]+)\/workflow';$/.exec(line);
    if (!match) {
      problems.push(`src/workflows.ts: "${line}" is not one workflow from an entity's workflow.ts`);
      continue;
    }
    const [, name, entity] = match as unknown as [string, string, string];
    if (!entities[entity])
      problems.push(`src/workflows.ts: ${name} comes from ${entity}/, which is no entity`);
    listed.set(entity, name);
  }
  for (const [entity, { workflow }] of Object.entries(entities)) {
    if (!byPath.has(`${entity}/protocol.ts`)) problems.push(`${entity}/ has no protocol.ts`);
    if (workflow && !listed.has(entity))
      problems.push(`${entity}/workflow.ts is not listed in src/workflows.ts`);
  }
  for (const { path, text } of files) {
    const [folder, name] = path.split('/');
    // A workflow function is exported by an entity's workflow.ts, and that is the one src/workflows.ts lists.
    if (name === 'workflow.ts' && folder !== undefined) {
      for (const [, exported] of text.matchAll(/^export async function (\w+)/gm)) {
        if (listed.get(folder) !== exported) {
          problems.push(`${path}: exports the workflow ${exported}, which src/workflows.ts does not list`);
        }
      }
    }
    // Sandbox code (anything that imports a value of @temporalio/workflow) lives in an entity's
    // workflow files or protocol, where the sandbox lint rule applies.
    // Any value import or re-export (named, namespace or default); a type-only one brings no code.
    const sandbox = /^(import|export)(?! type )[^;]*from ['"]@temporalio\/workflow['"]/m.test(text);
    const entityFolder = folder !== undefined && entities[folder] !== undefined;
    const workflowSide = name !== undefined && /^(workflow(-[\w-]+)?|protocol)\.ts$/.test(name);
    if (sandbox && !(entityFolder && workflowSide)) {
      problems.push(`${path}: imports @temporalio/workflow outside an entity's workflow*.ts or protocol.ts`);
    }
  }
  return problems;
}

function sourceFiles(directory: string): SourceFile[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) return [];
    return [{ path: relative(src, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }];
  });
}

describe('the layout follows the entities', () => {
  const files = sourceFiles(src);

  it('keeps each workflow in its entity’s folder and sandbox code in workflow files', () => {
    expect(layoutProblems(files)).toEqual([]);
    // Every entity that runs a workflow has one, and the bundle lists exactly those.
    const workflows = files
      .filter((file) => /^[\w-]+\/workflow\.ts$/.test(file.path))
      .map((file) => file.path);
    expect(workflows.sort()).toEqual(
      Object.entries(entities)
        .filter(([, { workflow }]) => workflow)
        .map(([entity]) => `${entity}/workflow.ts`)
        .sort(),
    );
  });

  it('has no folder by kind of part any more', () => {
    const folders = readdirSync(src, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    for (const gone of ['workflows', 'activities', 'admin']) expect(folders).not.toContain(gone);
  });

  it('fails on a workflow planted outside its entity, and on sandbox code in an activity', () => {
    const grantsWorkflow = files.find((file) => file.path === 'grants/workflow.ts')?.text ?? '';
    const planted = [
      ...files.filter((file) => file.path !== 'grants/workflow.ts'),
      { path: 'grants/grant-timer.ts', text: "import { sleep } from '@temporalio/workflow';\n" },
      { path: 'grants/grant-clock.ts', text: "import * as wf from '@temporalio/workflow';\n" },
      { path: 'grants/grant-types.ts', text: "import type { Sinks } from '@temporalio/workflow';\n" },
      {
        path: 'grants/workflow.ts',
        text: `${grantsWorkflow}\nexport async function shadowGrants(): Promise<void> {}\n`,
      },
    ];
    expect(layoutProblems(planted).sort()).toEqual([
      "grants/grant-clock.ts: imports @temporalio/workflow outside an entity's workflow*.ts or protocol.ts",
      "grants/grant-timer.ts: imports @temporalio/workflow outside an entity's workflow*.ts or protocol.ts",
      'grants/workflow.ts: exports the workflow shadowGrants, which src/workflows.ts does not list',
    ]);
    const unlisted = files.map((file) =>
      file.path === 'workflows.ts'
        ? { ...file, text: file.text.replace("export { toolgateQuota } from './quotas/workflow';\n", '') }
        : file,
    );
    expect(layoutProblems(unlisted)).toContain('quotas/workflow.ts is not listed in src/workflows.ts');
  });
});
