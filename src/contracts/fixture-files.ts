// The fixtures folder on disk: `<folder>/<tool>/<scenario>.json`, one recorded answer each (the format
// is contract-fixtures.ts's). Read by `toolgate contract test` and `check`, written by `record`.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { ContractFixture } from './contract-fixtures';
import { fixtureFileName, parseContractFixture, serializeContractFixture } from './contract-fixtures';
import { recordingScenarios } from '../tools/define-tool-implementation';
import { compareText } from './contract-snapshot';

/** The fixtures found in a folder, by file, and the files that could not be read as one. */
export interface FixtureFolder {
  /** False when the folder does not exist (nothing recorded yet). */
  exists: boolean;
  fixtures: { file: string; fixture: ContractFixture }[];
  unreadable: { file: string; message: string }[];
}

/**
 * Why `directory` cannot be the fixtures folder (it is a file), or undefined when it can (a folder, or
 * nothing yet). Callers check it first: {@link readFixtureFolder} reads a folder's entries.
 */
export function fixtureFolderProblem(directory: string): string | undefined {
  if (!existsSync(directory) || statSync(directory).isDirectory()) return undefined;
  return `${directory} is a file, not a folder of fixtures (<folder>/<tool>/<scenario>.json)`;
}

/**
 * Reads every `<tool>/<scenario>.json` under `directory`, by tool, then scenario. A file that is not a
 * fixture, or whose tool or scenario is not its path's, or an entry that cannot be read (a folder named
 * `<scenario>.json`, a file without permission), is listed as unreadable; never throws for one. Throws
 * only when `directory` itself cannot be listed (see {@link fixtureFolderProblem}).
 */
export function readFixtureFolder(directory: string): FixtureFolder {
  if (!existsSync(directory)) return { exists: false, fixtures: [], unreadable: [] };
  const folder: FixtureFolder = { exists: true, fixtures: [], unreadable: [] };
  const tools = readdirSync(directory, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort(compareText);
  for (const tool of tools) {
    // In the order the scenarios are recorded (success, empty, business error, unavailable), then by name.
    const rank = (name: string): number => {
      const index = (recordingScenarios as readonly string[]).indexOf(name.replace(/\.json$/, ''));
      return index < 0 ? recordingScenarios.length : index;
    };
    let names: string[];
    try {
      names = readdirSync(join(directory, tool))
        .filter((name) => name.endsWith('.json'))
        .sort((a, b) => rank(a) - rank(b) || compareText(a, b));
    } catch (error) {
      folder.unreadable.push({ file: join(directory, tool), message: readFailure(error) });
      continue;
    }
    for (const name of names) {
      const file = join(directory, tool, name);
      const text = readText(file);
      if (!text.ok) {
        folder.unreadable.push({ file, message: text.message });
        continue;
      }
      const parsed = parseContractFixture(text.text);
      if (!parsed.ok) {
        folder.unreadable.push({ file, message: parsed.message });
        continue;
      }
      const expected = fixtureFileName(parsed.fixture);
      if (`${tool}/${name}` !== expected) {
        folder.unreadable.push({
          file,
          message: `it records ${parsed.fixture.tool} ${parsed.fixture.scenario}, whose place is ${expected}`,
        });
        continue;
      }
      folder.fixtures.push({ file, fixture: parsed.fixture });
    }
  }
  return folder;
}

/** The fixture at its place under `directory`, if one is there and readable. */
export function readFixture(input: {
  directory: string;
  tool: string;
  scenario: ContractFixture['scenario'];
}): ContractFixture | undefined {
  const file = join(input.directory, fixtureFileName(input));
  if (!existsSync(file)) return undefined;
  const text = readText(file);
  if (!text.ok) return undefined;
  const parsed = parseContractFixture(text.text);
  return parsed.ok ? parsed.fixture : undefined;
}

/** A file's text, or why it cannot be read (a folder where a file should be, no permission). */
function readText(file: string): { ok: true; text: string } | { ok: false; message: string } {
  try {
    return { ok: true, text: readFileSync(file, 'utf8') };
  } catch (error) {
    return { ok: false, message: readFailure(error) };
  }
}

function readFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EISDIR') return 'it is a folder, not a file';
  return `it cannot be read (${(error as Error).message})`;
}

/** Writes a fixture to its place under `directory` (written beside it, then renamed); returns the file. */
export function writeFixture(input: { directory: string; fixture: ContractFixture }): string {
  const file = join(input.directory, fixtureFileName(input.fixture));
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, serializeContractFixture(input.fixture));
  renameSync(temporary, file);
  return file;
}
