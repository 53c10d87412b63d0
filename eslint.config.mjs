// Lint rules of the house style (docs/style.md, "What the lint rules enforce"); `npm run lint` also runs tsc and prettier.
import { builtinModules } from 'node:module';

import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

// Workflow code runs in Temporal's deterministic sandbox: no Node APIs, no client, worker or activity code.
const nodeBuiltins = builtinModules.filter((name) => !name.startsWith('_'));
const workflowSandboxMessage =
  'Workflow code runs in the deterministic sandbox: do I/O in an activity and import activities as types only.';

// Outside src/ (examples, bench, tests, scripts, root configs) code uses toolgate as a user does: through
// its public entries, which resolve to src/ here by the source condition. A unit test that needs a
// module's internals sits next to it in src/.
const publicEntriesMessage =
  "import toolgate's public entries ('toolgate', 'toolgate/admin', 'toolgate/protocol', 'toolgate/backend', 'toolgate/testing'), as a user does";

export default defineConfig(
  {
    ignores: ['node_modules/', '.toolgate/', 'test-results/', 'dist/', 'coverage/', 'bench/results.json'],
  },
  { ignores: ['test/package/ticketing/'] }, // a project of its own, checked by test/package/packed-package.test.ts
  js.configs.recommended,
  {
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        __filename: 'readonly',
      },
    },
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      // no-cycle follows imports into other .ts files: it must resolve extensionless paths and parse TypeScript.
      'import-x/extensions': ['.ts', '.js', '.mjs', '.cjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      // `toolgate` and its entries resolve to src/ through the source condition (package.json `exports`).
      'import-x/resolver-next': [
        createNodeResolver({
          extensions: ['.ts', '.js', '.json', '.node'],
          conditionNames: ['toolgate-source', 'import', 'require', 'default'],
        }),
      ],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      // A switch without `default` must name every member; an explicit `default` is a deliberate catch-all.
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      'import-x/no-cycle': 'error',
      // Implementations of async interfaces often have nothing to await; that is not a bug.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['examples/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts', '*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        // Any relative path into src/: `../src/index`, `../../src/sessions/session`, `./src/config`.
        { patterns: [{ regex: '^(\\.\\.?/)+src(/|$)', message: publicEntriesMessage }] },
      ],
    },
  },
  {
    // What runs in the workflow sandbox: each entity's workflow side and the protocol its clients share.
    files: [
      'src/workflows.ts',
      'src/*/workflow.ts',
      'src/*/workflow-*.ts',
      'src/*/protocol.ts',
      'src/shared/refusal.ts',
    ],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({
              name,
              message: workflowSandboxMessage,
              allowTypeImports: true,
            })),
            ...['@temporalio/client', '@temporalio/worker', '@temporalio/activity'].map((name) => ({
              name,
              message: workflowSandboxMessage,
              allowTypeImports: true,
            })),
          ],
          patterns: [
            { group: ['node:*'], message: workflowSandboxMessage, allowTypeImports: true },
            {
              group: ['@temporalio/client/*', '@temporalio/worker/*', '@temporalio/activity/*'],
              message: workflowSandboxMessage,
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
);
