import type { CliOutput, MainOptions } from './main';

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
  const { main } = await import('./main.js');
  return output === undefined ? main(argv, undefined, options) : main(argv, output, options);
}
