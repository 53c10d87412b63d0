import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cancellationRefusalCodes,
  decisionRefusalCodes,
  errorCodes,
  grantRefusalCodes,
  registryRefusalCodes,
  runCli,
  switchRefusalCodes,
} from 'toolgate';
import { consoleRefusalCodes } from 'toolgate/console';
import {
  codeBlocksOf,
  documentedCliCommands,
  headingAnchorsOf,
  relativeLinksOf,
  tableRowsUnder,
} from './markdown';

// The docs cannot drift from the code: the codes table is the code list, every refusal code is named,
// the package entries listed are the package's (and the names they cite are exported), every relative
// link and anchor resolves, every `npm run toolgate -- …` command names a command and flags the CLI
// has, and every `ts check` block type-checks against the package.

const root = join(__dirname, '..', '..');
const docsFolder = join(root, 'docs');
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(docsFolder)
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const read = (page: string): string => readFileSync(join(root, page), 'utf8');
const reference = read('docs/reference.md');

describe('the reference', () => {
  it('lists exactly the codes of src/shared/codes.ts in its codes table', () => {
    const listed = tableRowsUnder(reference, 'Codes')
      .map((row) => /^`([A-Z_]+)`$/.exec(row[0] ?? '')?.[1])
      .filter((code): code is string => code !== undefined);
    expect(new Set(listed).size).toBe(listed.length);
    // `OK` is the one success code; every other row is an error code.
    expect([...listed].sort()).toEqual(['OK', ...errorCodes].sort());
  });

  it('names every refusal code of decisions, cancellations, switches, grants, the registry and the console', () => {
    const lists = {
      decisionRefusalCodes,
      cancellationRefusalCodes,
      switchRefusalCodes,
      grantRefusalCodes,
      registryRefusalCodes,
      consoleRefusalCodes,
    };
    const missing = Object.entries(lists).flatMap(([list, codes]) =>
      codes.filter((code) => !reference.includes(`\`${code}\``)).map((code) => `${list}: ${code}`),
    );
    expect(missing).toEqual([]);
  });

  it("lists exactly package.json's entries, and each name it cites is exported by that entry", async () => {
    const exported = Object.keys(
      (JSON.parse(read('package.json')) as { exports: Record<string, unknown> }).exports,
    )
      .filter((entry) => entry !== './package.json')
      .map((entry) => (entry === '.' ? 'toolgate' : `toolgate/${entry.slice(2)}`));
    const rows = tableRowsUnder(reference, 'Package entries');
    const listed = rows.map((row) => /^`([\w/-]+)`$/.exec(row[0] ?? '')?.[1]);
    expect(listed).toEqual(exported);
    const notExported: string[] = [];
    for (const row of rows) {
      const entry = /^`([\w/-]+)`$/.exec(row[0] ?? '')?.[1] ?? '';
      const module = (await import(entry)) as Record<string, unknown>;
      for (const [, name] of (row[1] ?? '').matchAll(/`([A-Za-z_$][\w$]*)`/g)) {
        if (name && !(name in module)) notExported.push(`${entry}: ${name}`);
      }
    }
    expect(notExported).toEqual([]);
  });

  it("lists exactly the CLI's commands", async () => {
    const listed = tableRowsUnder(reference, 'CLI').flatMap((row) =>
      [...(row[0] ?? '').matchAll(/`([a-z-]+)`/g)].map((match) => match[1]),
    );
    const commands = subcommandsIn(await helpOf([]));
    expect([...listed].sort()).toEqual([...commands].sort());
  });
});

describe('links', () => {
  it('every relative link and anchor in the README, CONTRIBUTING.md and docs/ resolves', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const link of relativeLinksOf(read(page))) {
        const [path = '', anchor] = link.split('#');
        const target = path === '' ? join(root, page) : resolve(root, dirname(page), path);
        let text: string;
        try {
          text = readFileSync(target, 'utf8');
        } catch {
          // A folder is a fine target (GitHub lists it); anything else missing is broken.
          try {
            readdirSync(target);
            continue;
          } catch {
            broken.push(`${page}: ${link} (no such file)`);
            continue;
          }
        }
        if (anchor !== undefined && target.endsWith('.md') && !headingAnchorsOf(text).has(anchor)) {
          broken.push(`${page}: ${link} (no heading #${anchor} in ${relative(root, target)})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('CLI commands in the docs', () => {
  it('every `npm run toolgate -- …` names a command the CLI has and only flags that command takes', async () => {
    const problems: string[] = [];
    const helps = new Map<string, string>();
    const help = async (path: readonly string[]): Promise<string> => {
      const key = path.join(' ');
      let text = helps.get(key);
      if (text === undefined) {
        text = await helpOf(path);
        helps.set(key, text);
      }
      return text;
    };
    let checked = 0;
    for (const page of pages) {
      for (const command of documentedCliCommands(read(page))) {
        // `npm run toolgate -- <command>` speaks of the CLI in general.
        if (command.words[0]?.startsWith('<')) continue;
        checked += 1;
        // Walk the words while they name subcommands; the rest are arguments and flags.
        const path: string[] = [];
        for (const word of command.words) {
          if (word.startsWith('-')) break;
          if (!subcommandsIn(await help(path)).includes(word)) break;
          path.push(word);
        }
        if (path.length === 0) {
          problems.push(`${page}: "${command.text}" names no command`);
          continue;
        }
        const text = await help(path);
        for (const flag of command.words.filter((word) => word.startsWith('--'))) {
          const name = flag.split('=')[0] ?? flag;
          if (!new RegExp(`(^|[\\s,])${name}([\\s,]|$)`, 'm').test(text)) {
            problems.push(`${page}: "${command.text}": toolgate ${path.join(' ')} has no ${name}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
    // The docs do show commands: a parser that found none would check nothing.
    expect(checked).toBeGreaterThan(30);
  });
});

describe('code blocks marked `ts check`', () => {
  it('type-check against the package', () => {
    const folder = join(root, 'test-results', 'docs-check');
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    const files: string[] = [];
    for (const page of pages) {
      codeBlocksOf(read(page))
        .filter((block) => block.info === 'ts check')
        .forEach((block, index) => {
          const file = join(folder, `${page.replace(/[/.]/g, '-')}-${index + 1}.mts`);
          // Each block is an ES module of its own, as a reader's file would be (top-level await is fine).
          writeFileSync(file, `${block.code}\nexport {};\n`);
          files.push(file);
        });
    }
    expect(files.length).toBeGreaterThan(0);
    writeFileSync(
      join(folder, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.json',
        include: files.map((file) => relative(folder, file)),
      }),
    );
    const tsc = spawnSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(folder, 'tsconfig.json')],
      { cwd: root, encoding: 'utf8' },
    );
    expect(`${tsc.stdout}${tsc.stderr}`).toBe('');
    expect(tsc.status).toBe(0);
  }, 180_000);
});

/** The help text of `toolgate <path…>`, as the CLI prints it. */
async function helpOf(path: readonly string[]): Promise<string> {
  const lines: string[] = [];
  const code = await runCli([...path, '--help'], {
    out: (text) => lines.push(text),
    error: (text) => lines.push(text),
  });
  expect(code, `toolgate ${path.join(' ')} --help`).toBe(0);
  return lines.join('\n');
}

/** The subcommand names a help text lists under "Commands:" (without `help`). */
function subcommandsIn(help: string): string[] {
  const section = help.split(/^Commands:$/m)[1];
  if (section === undefined) return [];
  return [...section.split(/\n\S/)[0]!.matchAll(/^ {2}([a-z][a-z-]*)/gm)]
    .map((match) => match[1]!)
    .filter((name) => name !== 'help');
}
