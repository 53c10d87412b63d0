import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SelectionReport } from 'toolgate';
import { recordSelectionInSnapshot, selectionRecordOf } from 'toolgate';
import { afterAll, describe, expect, it } from 'vitest';

// The contract snapshot's `selection` field: what the last full run that passed used, written into a
// snapshot that exists, every other byte of it untouched.

const directory = mkdtempSync(join(tmpdir(), 'toolgate-record-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const report = (changes: Partial<SelectionReport>) =>
  ({
    set: 'full',
    ok: true,
    model: 'model-a',
    finishedAt: '2025-06-01T12:00:00.000Z',
    ...changes,
  }) as SelectionReport;

describe('the selection record', () => {
  it('is earned by a full run that passed, and by nothing else', () => {
    expect(selectionRecordOf(report({}))).toEqual({ model: 'model-a', at: '2025-06-01T12:00:00.000Z' });
    expect(selectionRecordOf(report({ set: 'critical' }))).toBeUndefined();
    expect(selectionRecordOf(report({ ok: false }))).toBeUndefined();
  });

  it('replaces only the top-level selection field of the snapshot', () => {
    const path = join(directory, 'snapshot.json');
    const before = [
      '{',
      '  "version": 1,',
      '  "createdAt": "2025-01-01T00:00:00.000Z",',
      '  "selection": {',
      '    "model": "model-old",',
      '    "at": "2024-12-01T00:00:00.000Z"',
      '  },',
      '  "tools": [{ "name": "a", "input": { "selection": {} } }]',
      '}',
      '',
    ].join('\n');
    writeFileSync(path, before);
    expect(
      recordSelectionInSnapshot({ path, record: { model: 'model-a', at: '2025-06-01T12:00:00.000Z' } }),
    ).toEqual({
      ok: true,
    });
    expect(readFileSync(path, 'utf8')).toBe(
      before.replace('model-old', 'model-a').replace('2024-12-01T00:00:00.000Z', '2025-06-01T12:00:00.000Z'),
    );
  });

  it('adds the field to a snapshot laid out otherwise, keeping every other field', () => {
    const path = join(directory, 'compact.json');
    writeFileSync(path, '{"version":1,"tools":[]}');
    expect(recordSelectionInSnapshot({ path, record: { model: 'm', at: 't' } }).ok).toBe(true);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({
      version: 1,
      tools: [],
      selection: { model: 'm', at: 't' },
    });
  });

  it('never creates a snapshot, and leaves one that is not JSON alone', () => {
    const absent = join(directory, 'absent.json');
    expect(recordSelectionInSnapshot({ path: absent, record: { model: 'm', at: 't' } })).toMatchObject({
      ok: false,
      reason: 'NOT_FOUND',
    });
    const broken = join(directory, 'broken.json');
    writeFileSync(broken, '{ not json');
    expect(recordSelectionInSnapshot({ path: broken, record: { model: 'm', at: 't' } })).toMatchObject({
      ok: false,
      reason: 'NOT_A_SNAPSHOT',
    });
    expect(readFileSync(broken, 'utf8')).toBe('{ not json');
  });

  it('answers FILE_ERROR, never throws, for a folder where the snapshot should be', () => {
    const folder = join(directory, 'a-folder.json');
    mkdirSync(folder);
    expect(recordSelectionInSnapshot({ path: folder, record: { model: 'm', at: 't' } })).toMatchObject({
      ok: false,
      reason: 'FILE_ERROR',
      message: expect.stringContaining('cannot be read') as string,
    });
  });
});
