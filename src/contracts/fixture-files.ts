// The fixtures folder on disk: `<folder>/<tool>/<scenario>.json`, one recorded answer each (the format
// is contract-fixtures.ts's). Read by `toolgate contract test` and `check`, written by `record`.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
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
 * Reads every `<tool>/<scenario>.json` under `directory`, by tool, then scenario. A file that is not a
 * fixture, or whose tool or scenario is not its path's, is listed as unreadable; never throws for one.
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
    const names = readdirSync(join(directory, tool))
      .filter((name) => name.endsWith('.json'))
      .sort((a, b) => rank(a) - rank(b) || compareText(a, b));
    for (const name of names) {
      const file = join(directory, tool, name);
      const parsed = parseContractFixture(readFileSync(file, 'utf8'));
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
  const parsed = parseContractFixture(readFileSync(file, 'utf8'));
  return parsed.ok ? parsed.fixture : undefined;
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
