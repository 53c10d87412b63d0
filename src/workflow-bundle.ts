import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { BundleOptions } from '@temporalio/worker';
import { bundleWorkflowCode } from '@temporalio/worker';
import { toolGateFailureConverterPath } from './connection/failure-converter-path';

/**
 * How toolgate bundles workflow code: webpack's production optimisations (module concatenation,
 * used-exports and side-effects analysis), without minifying, so the bundle stays readable and keeps
 * its source map. The SDK evaluates every bundled module again for each workflow run; concatenated
 * modules cost about half as much per run. The inline source map (the SDK requires one) maps stack
 * traces to the sources but does not carry their text: only the enhanced stack-trace query reads it,
 * and only with the worker option `showStackTraceSources`, which toolgate never sets. Without it each
 * worker holds about 10 MB less.
 */
export const workflowBundlerOptions: Required<Pick<BundleOptions, 'webpackConfigHook'>> = {
  webpackConfigHook: (config) => ({
    ...config,
    mode: 'production',
    devtool: 'inline-nosources-source-map',
    // Web performance hints (asset size limits) mean nothing for a bundle the worker loads from disk.
    performance: { hints: false },
    optimization: {
      ...config.optimization,
      minimize: false,
      usedExports: true,
      sideEffects: true,
      concatenateModules: true,
    },
  }),
};

/** The prebuilt bundle's file name in the built package, next to this module. */
export const prebuiltBundleName = 'workflows.bundle.js';
/** The traced bundle's file name (OpenTelemetry's workflow interceptors built in), when prebuilt. */
export const prebuiltTracedBundleName = 'workflows.traced.bundle.js';

/** OpenTelemetry's workflow interceptors: bundled only into the traced bundle, so an untraced worker runs none. */
function tracingInterceptorModules(): string[] {
  return [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];
}

/**
 * toolgate's workflow bundle. The workflows hold no user code, so the package ships them prebuilt
 * (`npm run build` writes it next to this module) and every worker loads that file. Running from
 * the sources (this repository), the bundle is built once per change of `src/` and cached under
 * `.toolgate/cache`.
 */
export function toolGateWorkflowBundle(options: { traced?: boolean } = {}): { codePath: string } {
  const traced = options.traced === true;
  const prebuilt = join(__dirname, traced ? prebuiltTracedBundleName : prebuiltBundleName);
  if (existsSync(prebuilt)) return { codePath: prebuilt };
  // The traced bundle is built on first use when the package did not ship it (from its built workflows).
  const sources = ['workflows.ts', ...(traced ? ['workflows.js'] : [])].map((name) => join(__dirname, name));
  const workflowsPath = sources.find((path) => existsSync(path));
  if (workflowsPath === undefined) {
    throw new Error(`toolgate's workflow bundle is missing (${prebuilt}): reinstall the package`);
  }
  const sourceRoot = __dirname;
  const cache = join(
    dirname(sourceRoot),
    '.toolgate',
    'cache',
    `workflows-${traced ? 'traced-' : ''}${digestOfSources(sourceRoot)}.js`,
  );
  if (!existsSync(cache)) prebuildWorkflowBundle({ workflowsPath, outFile: cache, traced });
  return { codePath: cache };
}

/**
 * Bundles a workflows module in a short-lived child process (so the worker never holds webpack's
 * memory) and returns the bundle's path. Used by the build and by tests that run workflows of their own.
 */
export function prebuildWorkflowBundle(input: { workflowsPath: string; outFile: string; traced?: boolean }): {
  codePath: string;
} {
  // From the sources this module is TypeScript and needs tsx to run; built, it is plain JavaScript.
  const loader = __filename.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const traced = input.traced ? ['--traced'] : [];
  execFileSync(process.execPath, [...loader, __filename, input.workflowsPath, input.outFile, ...traced], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return { codePath: input.outFile };
}

/**
 * A digest of every source file under `src/` (the workflows, the failure converter the bundle is
 * built with, and this module's bundling options), so a cached bundle is never older than the code
 * it was built from.
 */
function digestOfSources(root: string): string {
  const hash = createHash('sha256');
  const walk = (directory: string): void => {
    for (const entry of readdirSync(directory, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) hash.update(path.slice(root.length)).update(readFileSync(path));
    }
  };
  walk(root);
  return hash.digest('hex').slice(0, 16);
}

async function bundleToFile(workflowsPath: string, outFile: string, traced: boolean): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: resolve(workflowsPath),
    // toolgate's failure converter, which workers' activities and every client toolgate opens load
    // too: the sandbox takes one only from the bundle.
    failureConverterPath: toolGateFailureConverterPath(),
    ...(traced ? { workflowInterceptorModules: tracingInterceptorModules() } : {}),
    ...workflowBundlerOptions,
  });
  mkdirSync(dirname(outFile), { recursive: true });
  // Written aside, then renamed: a worker in another process never loads half a bundle.
  const partial = `${outFile}.${process.pid}.partial`;
  writeFileSync(partial, code);
  renameSync(partial, outFile);
}

// Run as a child: `tsx src/workflow-bundle.ts <workflowsPath> <outFile> [--traced]`.
if (require.main === module) {
  const [workflowsPath, outFile, flag] = process.argv.slice(2);
  if (!workflowsPath || !outFile) {
    process.stderr.write('usage: workflow-bundle <workflowsPath> <outFile> [--traced]\n');
    process.exit(2);
  }
  bundleToFile(workflowsPath, outFile, flag === '--traced').catch((error: unknown) => {
    process.stderr.write(`bundling ${workflowsPath} failed: ${String(error)}\n`);
    process.exit(1);
  });
}
