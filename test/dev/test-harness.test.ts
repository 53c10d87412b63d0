import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { acceptsConnections } from '../support/accepts-connections';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineToolContract, defineToolImplementation, resolveConfig } from 'toolgate';
import { startTestHarness } from 'toolgate/testing';

// A user's own domain, tested with toolgate/testing's harness: a note book kept in memory.
const notes: { key: string; text: string }[] = [];
const addNote = defineToolContract({
  name: 'add_note',
  description: 'Adds a note to the shared note book; only when the user asked to write one down.',
  input: z.strictObject({ text: z.string().min(1).max(200).describe('The note, as the user said it.') }),
  output: z.strictObject({ count: z.int() }),
  effect: 'write',
  risk: () => 'irreversible',
  summarize: (args) => `add the note "${args.text}"`,
});
const addNoteTool = defineToolImplementation(addNote, {
  execute: async ({ args, idempotencyKey }) => {
    if (!notes.some((note) => note.key === idempotencyKey))
      notes.push({ key: idempotencyKey, text: args.text });
    return { count: notes.length };
  },
  findApplied: async ({ idempotencyKey }) => {
    const found = notes.some((note) => note.key === idempotencyKey);
    return found ? { status: 'applied', output: { count: notes.length } } : { status: 'not-seen' };
  },
});

const directory = mkdtempSync(join(tmpdir(), 'toolgate-test-harness-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('toolgate/testing: a harness for a user’s own tests', () => {
  it('starts a dev server, keys, a worker and a client for the user’s tools, runs an approved write once, and stops it all', async () => {
    writeFileSync(
      join(directory, 'policy.json'),
      JSON.stringify({
        version: 'notes-1',
        callers: {
          'notes-bot': {
            publicKey: 'callers/notes-bot.pub',
            tools: ['add_note'],
            autonomy: 'reversible',
            approval: { ceiling: 'irreversible' },
          },
        },
        approvers: { erin: { publicKey: 'approvers/erin.pub', maxLevel: 'irreversible', operates: [] } },
      }),
    );
    const config = resolveConfig({
      source: join(directory, 'toolgate.config.js'),
      config: { tools: [addNote], policyPath: 'policy.json', implementations: () => [addNoteTool] },
    });
    const harness = await startTestHarness({ config, projectRoot: join(__dirname, '..', '..') });
    try {
      const pending = await harness.client.call({
        session: 'notes-1',
        caller: 'notes-bot',
        tool: 'add_note',
        arguments: '{"text":"call the customer back"}',
      });
      expect(pending).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
      expect(notes).toEqual([]);
      expect(await harness.decide({ callId: pending.callId, approver: 'erin' })).toMatchObject({
        accepted: true,
        state: 'approved',
      });
      expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
        ok: true,
        code: 'OK',
        effect: 'applied',
      });
      expect(notes).toEqual([{ key: pending.callId, text: 'call the customer back' }]);
    } finally {
      await harness.stop();
    }
    expect(await acceptsConnections(harness.address)).toBe(false);
  });
});
