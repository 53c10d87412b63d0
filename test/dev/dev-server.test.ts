import { acceptsConnections } from '../support/accepts-connections';
import path from 'node:path';

import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { searchAttributes } from 'toolgate/protocol';
import type { DevServer } from 'toolgate/testing';
import { prepareNamespace, startDevServer } from 'toolgate/testing';

const projectRoot = path.resolve(__dirname, '..', '..');
const thirtyDaysInMilliseconds = 30 * 86_400_000;

describe('the local Temporal dev server', () => {
  let server: DevServer;
  let connection: Connection;

  beforeAll(async () => {
    server = await startDevServer({ projectRoot, headless: true, log: () => {} });
    connection = await Connection.connect({ address: server.address });
  });

  afterAll(async () => {
    await connection?.close();
    await server?.stop();
  });

  it('listens on loopback, in memory, without a Web UI', () => {
    expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(server.uiUrl).toBeUndefined();
    expect(server.namespace).toBe('default');
  });

  it('keeps closed calls for 30 days and lists the six toolgate search attributes after preparing twice', async () => {
    await prepareNamespace({ connection, namespace: server.namespace });
    await prepareNamespace({ connection, namespace: server.namespace });

    const description = await connection.workflowService.describeNamespace({ namespace: server.namespace });
    expect(optionalTsToMs(description.config?.workflowExecutionRetentionTtl)).toBe(thirtyDaysInMilliseconds);

    const { customAttributes } = await connection.operatorService.listSearchAttributes({
      namespace: server.namespace,
    });
    expect(customAttributes).toEqual(
      expect.objectContaining({
        ToolName: encodeSearchAttributeIndexedValueType('KEYWORD'),
        Caller: encodeSearchAttributeIndexedValueType('KEYWORD'),
        SessionId: encodeSearchAttributeIndexedValueType('KEYWORD'),
        ToolCode: encodeSearchAttributeIndexedValueType('KEYWORD'),
        ApprovalState: encodeSearchAttributeIndexedValueType('KEYWORD'),
        RiskLevel: encodeSearchAttributeIndexedValueType('INT'),
      }),
    );
    expect(Object.keys(searchAttributes)).toHaveLength(6);
  });

  it('frees its port once stopped', async () => {
    await connection.close();
    expect(await acceptsConnections(server.address)).toBe(true);

    await server.stop();

    expect(await acceptsConnections(server.address)).toBe(false);
  });
});
