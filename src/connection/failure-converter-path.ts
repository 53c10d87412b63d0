import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The path of toolgate's failure converter module (see `./failure-converter`), what workers and
 * clients take as `dataConverter.failureConverterPath` and the workflow bundle is built with: the
 * built module next to this one, or its source when running from the sources.
 */
export function toolGateFailureConverterPath(): string {
  const built = join(__dirname, 'failure-converter.js');
  return existsSync(built) ? built : join(__dirname, 'failure-converter.ts');
}
