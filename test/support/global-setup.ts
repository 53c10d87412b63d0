import { Connection } from '@temporalio/client';
import type { TestProject } from 'vitest/node' with { 'resolution-mode': 'import' };

import { prepareNamespace, startDevServer } from 'toolgate/testing';
import { ensureChromium } from './chromium';

declare module 'vitest' {
  export interface ProvidedContext {
    /** gRPC address of the run's shared Temporal dev server, `127.0.0.1:<port>`. */
    temporalAddress: string;
  }
}

/** Starts one in-memory Temporal dev server for the whole run with toolgate's namespace settings; the returned teardown stops it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The browser tests' Chromium: the system's, installed now when it can be; else their one-line reason.
  const chromium = ensureChromium({ log: (line) => process.stderr.write(`[chromium] ${line}\n`) });
  if (chromium.ok) process.env.CHROMIUM_PATH = chromium.executablePath;
  else process.stderr.write(`[chromium] the browser tests will fail: ${chromium.reason}\n`);
  const server = await startDevServer({
    projectRoot: project.config.root,
    headless: true,
    log: (line) => process.stderr.write(`[temporal] ${line}\n`),
  });
  try {
    const connection = await Connection.connect({ address: server.address });
    try {
      await prepareNamespace({ connection, namespace: server.namespace });
    } finally {
      await connection.close();
    }
  } catch (error) {
    await server.stop();
    throw error;
  }

  project.provide('temporalAddress', server.address);
  // For code that reads its configuration from the environment, as the worker and CLI do.
  process.env.TEMPORAL_ADDRESS = server.address;

  return async () => {
    await server.stop();
  };
}
