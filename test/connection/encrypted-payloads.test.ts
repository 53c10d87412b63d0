import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  encryptedPayloadEncoding,
  PayloadEncryptionCodec,
  resolveTemporalConnection,
  sessionWorkflowId,
  toolGateWorkflowBundle,
} from 'toolgate';
import type { ToolResult } from 'toolgate';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { temporalAddress } from '../support/temporal';

const codecKey = { id: 'test-key-1', key: randomBytes(32).toString('base64') };
const codec = new PayloadEncryptionCodec({
  keys: [{ id: codecKey.id, key: Buffer.from(codecKey.key, 'base64') }],
});
const auditSinks = {
  audit: {
    decisionAttempt: { fn: () => undefined, callDuringReplay: false },
    admissionRefusal: { fn: () => undefined, callDuringReplay: false },
    registryEvent: { fn: () => undefined, callDuringReplay: false },
  },
};

let harness: ToolGateHarness;
let plainConnection: Connection;
/** A client of the same namespace without the codec: what Temporal itself, or anyone without the keys, sees. */
let withoutCodec: Client;

beforeAll(async () => {
  harness = await startHarness({ address: temporalAddress(), codec: { keys: [codecKey] } });
  plainConnection = await Connection.connect({ address: temporalAddress() });
  withoutCodec = new Client({ connection: plainConnection });
});

afterAll(async () => {
  await plainConnection?.close();
  await harness?.stop();
});

/** Every payload in a history (or any message): objects with an `encoding` in their metadata. */
function payloadsIn(message: unknown): Payload[] {
  if (typeof message !== 'object' || message === null) return [];
  if (ArrayBuffer.isView(message)) return [];
  const candidate = message as Payload;
  if (candidate.metadata && typeof candidate.metadata === 'object' && 'encoding' in candidate.metadata) {
    return [candidate];
  }
  return Object.values(message).flatMap(payloadsIn);
}

/** The history as the server stores it, in protobuf's wire format: every byte Temporal keeps. */
async function rawHistory(
  workflowId: string,
): Promise<{ history: temporal.api.history.v1.IHistory; bytes: Buffer }> {
  const history = await withoutCodec.workflow.getHandle(workflowId).fetchHistory();
  return { history, bytes: Buffer.from(temporal.api.history.v1.History.encode(history).finish()) };
}

describe('a call with payload encryption configured', () => {
  it('keeps its arguments and result out of Temporal in plaintext, while a client with the keys reads them', async () => {
    const marker = `customer-secret-${randomUUID()}`;
    const session = `${harness.newSession()}:test-refunder`;
    const result = await harness.client.call({
      session,
      caller: 'test-refunder',
      tool: 'echo_shape',
      arguments: JSON.stringify({ broken: false, label: marker }),
    });
    expect(result).toMatchObject({ ok: true, code: 'OK', data: { value: 7, label: marker } });

    // The call's and its session's histories, raw: no trace of the marker, as text or as base64.
    for (const workflowId of [result.callId, sessionWorkflowId(session)]) {
      const { bytes, history } = await rawHistory(workflowId);
      expect(history.events?.length, workflowId).toBeGreaterThan(3);
      expect(bytes.includes(encryptedPayloadEncoding), workflowId).toBe(true);
      expect(bytes.includes(marker), workflowId).toBe(false);
      expect(bytes.includes(Buffer.from(marker).toString('base64').slice(0, 24)), workflowId).toBe(false);
      expect(JSON.stringify(history).includes(marker), workflowId).toBe(false);
    }
    // The control: the marker is in the call's history, sealed; opened with the keys, it shows.
    const { history: callHistory } = await rawHistory(result.callId);
    const opened = await codec.decode(payloadsIn(callHistory));
    expect(opened.some((payload) => Buffer.from(payload.data ?? []).includes(marker))).toBe(true);
    // Nor in what visibility keeps (memo, search attributes, summaries).
    const description = await withoutCodec.workflowService.describeWorkflowExecution({
      namespace: 'default',
      execution: { workflowId: result.callId },
    });
    const describedBytes = Buffer.from(
      temporal.api.workflowservice.v1.DescribeWorkflowExecutionResponse.encode(description).finish(),
    );
    expect(describedBytes.includes(encryptedPayloadEncoding)).toBe(true);
    expect(describedBytes.includes(marker)).toBe(false);

    // Without the keys the result cannot be read; with them it is the call's result.
    await expect(withoutCodec.workflow.getHandle(result.callId).result()).rejects.toThrow(
      /binary\/encrypted/,
    );
    const decoded = (await harness.temporal.workflow.getHandle(result.callId).result()) as ToolResult;
    expect(decoded.data).toMatchObject({ label: marker });
  });

  it('replays its encrypted history deterministically with the codec, as the replay test does when configured', async () => {
    const result = await harness.call({
      caller: 'test-refunder',
      tool: 'echo_shape',
      arguments: JSON.stringify({ broken: false, label: `replayed-${randomUUID()}` }),
    });
    const { history } = await rawHistory(result.callId);
    const { dataConverter } = resolveTemporalConnection({ config: { codec: { keys: [codecKey] } }, env: {} });
    await Worker.runReplayHistory(
      {
        workflowBundle: toolGateWorkflowBundle(),
        sinks: auditSinks,
        ...(dataConverter ? { dataConverter } : {}),
      },
      history,
      result.callId,
    );
  });
});
