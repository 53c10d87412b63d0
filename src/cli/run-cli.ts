import type { CliOutput, MainOptions } from './main';
import type * as CliMain from './main';

/**
 * Runs the CLI and resolves to its exit code, as `main` does. The CLI's commands (and what they load:
 * the MCP SDK, commander, the console) load on the first call, so a process that imports `toolgate`
 * for its worker or its client does not hold them.
 */
export async function runCli(
  argv: readonly string[],
  output?: CliOutput,
  options: MainOptions = {},
): Promise<number> {
  const { main } = await loadMain();
  return output === undefined ? main(argv, undefined, options) : main(argv, output, options);
}

/**
 * Built, the CLI loads by `require`, which every CommonJS host runs (a test runner evaluating modules
 * in a vm has no dynamic import); from the sources, by `import()`, which TypeScript loaders resolve.
 */
async function loadMain(): Promise<typeof CliMain> {
  if (!__filename.endsWith('.js')) return import('./main.js');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above: the built module is CommonJS
  return require('./main.js') as typeof CliMain;
}
