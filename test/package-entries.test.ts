import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as packageIndex from 'toolgate';
import * as packageAdmin from 'toolgate/admin';
import * as packageProtocol from 'toolgate/protocol';
import * as packageAiSdk from 'toolgate/ai-sdk';
import * as packageBackend from 'toolgate/backend';
import * as packageConsole from 'toolgate/console';
import * as packageMcp from 'toolgate/mcp';
import * as packageTesting from 'toolgate/testing';
import { describe, expect, it } from 'vitest';

const projectRoot = join(__dirname, '..');

interface EntryConditions {
  'toolgate-source': string;
  types: string;
  default: string;
}

const manifest = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
  exports: Record<string, EntryConditions | string>;
};

const entries = Object.entries(manifest.exports).filter(
  (entry): entry is [string, EntryConditions] => typeof entry[1] !== 'string',
);

describe('package entries', () => {
  it('resolves toolgate and each of its entries to the very source modules, with no build', async () => {
    // The same module instance: vitest loaded src/, not dist/ through Node's own resolution. The
    // source files are imported by the path the manifest names, the one place that may name them.
    const loaded = {
      '.': packageIndex,
      './admin': packageAdmin,
      './protocol': packageProtocol,
      './backend': packageBackend,
      './testing': packageTesting,
      './mcp': packageMcp,
      './ai-sdk': packageAiSdk,
      './console': packageConsole,
    };
    for (const [name, conditions] of entries) {
      const source: unknown = await import(join(projectRoot, conditions['toolgate-source']));
      expect(loaded[name as keyof typeof loaded], name).toBe(source);
    }
  });

  it('names the source first, then the declarations, then the built JavaScript, for every entry', () => {
    expect(entries.map(([name]) => name)).toEqual([
      '.',
      './admin',
      './protocol',
      './backend',
      './testing',
      './mcp',
      './ai-sdk',
      './console',
    ]);
    for (const [name, conditions] of entries) {
      // Node and TypeScript take the first matching condition, so the order is the contract.
      expect(Object.keys(conditions), name).toEqual(['toolgate-source', 'types', 'default']);
      const source = conditions['toolgate-source'];
      expect(existsSync(join(projectRoot, source)), `${name}: ${source}`).toBe(true);
      const built = source.replace(/^\.\/src\//, './dist/').replace(/\.ts$/, '');
      expect(conditions.types, name).toBe(`${built}.d.ts`);
      expect(conditions.default, name).toBe(`${built}.js`);
    }
  });

  it('loads toolgate/backend without Temporal or zod, so a backend needs none of the peer dependencies', () => {
    // A plain Node process, as a backend service runs it: require() with the source condition.
    const script =
      "require('toolgate/backend');" +
      'console.log(JSON.stringify(Object.keys(require.cache).filter((file) => file.includes("node_modules"))));';
    const output = execFileSync(
      process.execPath,
      ['--conditions=toolgate-source', '--require', 'tsx/cjs', '--eval', script],
      { cwd: projectRoot, encoding: 'utf8' },
    );
    const loaded = JSON.parse(output) as string[];
    expect(loaded.some((file) => file.includes('@noble'))).toBe(true);
    expect(loaded.filter((file) => /@temporalio|[\\/]zod[\\/]/.test(file))).toEqual([]);
  });
});
