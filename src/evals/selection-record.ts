// What the contract snapshot keeps of the selection suite: the model id of the last full run that
// passed, and when. `toolgate contract check` compares it with the configured model: a model change
// changes no line of code, so only this record can say the full set must run again.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { canonicalJson } from '../shared/canonical-json';
import type { SelectionReport } from './selection-suite';

/** The snapshot's `selection` field: the model of the last full run that passed, and when it ended. */
export interface SelectionRecord {
  model: string;
  at: string;
}

/** The record a run earns: only a full run that passed (every threshold met, no error) earns one. */
export function selectionRecordOf(report: SelectionReport): SelectionRecord | undefined {
  return report.set === 'full' && report.ok ? { model: report.model, at: report.finishedAt } : undefined;
}

/**
 * Writes `record` as the `selection` field of the snapshot file at `path`, leaving every other field
 * as it is. Never creates the file: `toolgate contract snapshot` does; without it there is nothing
 * to record in.
 * Replaces the file whole (written beside it, then renamed), so a reader never sees half of it.
 * Never throws: a path that cannot be read or written (a folder, no permission) is `FILE_ERROR`.
 */
export function recordSelectionInSnapshot(input: {
  path: string;
  record: SelectionRecord;
}): { ok: true } | { ok: false; reason: 'NOT_FOUND' | 'NOT_A_SNAPSHOT' | 'FILE_ERROR'; message: string } {
  const { path, record } = input;
  if (!existsSync(path)) {
    return {
      ok: false,
      reason: 'NOT_FOUND',
      message: `no contract snapshot at ${path} (toolgate contract snapshot writes one); the run is not recorded`,
    };
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return {
      ok: false,
      reason: 'FILE_ERROR',
      message: `the contract snapshot ${path} cannot be read (${(error as Error).message}); the run is not recorded`,
    };
  }
  let snapshot: unknown;
  try {
    snapshot = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      reason: 'NOT_A_SNAPSHOT',
      message: `the contract snapshot ${path} is not JSON (${(error as Error).message}); the run is not recorded`,
    };
  }
  if (typeof snapshot !== 'object' || snapshot === null || Array.isArray(snapshot)) {
    return {
      ok: false,
      reason: 'NOT_A_SNAPSHOT',
      message: `the contract snapshot ${path} is not a JSON object; the run is not recorded`,
    };
  }
  const updated = {
    ...(snapshot as Record<string, unknown>),
    selection: { model: record.model, at: record.at },
  };
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, patchedText({ text, updated, record }));
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    return {
      ok: false,
      reason: 'FILE_ERROR',
      message: `the contract snapshot ${path} cannot be written (${(error as Error).message}); the run is not recorded`,
    };
  }
  return { ok: true };
}

/**
 * The snapshot's text with only its top-level `selection` replaced, laid out as the snapshot lays
 * out an object, so a review shows one changed field and the formatter has nothing to redo. When the
 * field cannot be found so, the whole object is written again (two-space JSON, keys in their order).
 */
function patchedText(input: {
  text: string;
  updated: Record<string, unknown>;
  record: SelectionRecord;
}): string {
  const { text, updated, record } = input;
  const field =
    `"selection": {\n    "model": ${JSON.stringify(record.model)},\n` +
    `    "at": ${JSON.stringify(record.at)}\n  }`;
  // The top-level field is the one indented two spaces; a tool's field named selection sits deeper.
  const top = /^ {2}"selection": \{[^{}]*\}/m;
  if (top.test(text)) {
    const patched = text.replace(top, `  ${field}`);
    // Checked, not trusted: the patched text must read back as exactly the updated snapshot.
    if (sameJson(patched, updated)) return patched;
  }
  return `${JSON.stringify(updated, null, 2)}\n`;
}

function sameJson(text: string, value: unknown): boolean {
  try {
    return canonicalJson(JSON.parse(text)) === canonicalJson(value);
  } catch {
    return false;
  }
}
