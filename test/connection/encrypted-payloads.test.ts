import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import {
  decodeFailure,
  decodeOptionalFailureToOptionalError,
  encodeErrorToFailure,
  encodeFailure,
  loadDataConverter,
} from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  encryptedPayloadEncoding,
  PayloadEncryptionCodec,
  resolveTemporalConnection,
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
/** Checks that a raw history (the server's bytes) holds no trace of `secret`, as text or as base64. */
function expectNoTrace(
  { history, bytes }: { history: temporal.api.history.v1.IHistory; bytes: Buffer },
  secret: string,
  label: string,
): void {
  expect(bytes.includes(secret), label).toBe(false);
  expect(bytes.includes(Buffer.from(secret).toString('base64').slice(0, 24)), label).toBe(false);
  expect(JSON.stringify(history).includes(secret), label).toBe(false);
}

/** Every failure in a history: objects with a `message` and a failure's info (application, activity, ...). */
function failuresIn(message: unknown): temporal.api.failure.v1.IFailure[] {
  if (typeof message !== 'object' || message === null || ArrayBuffer.isView(message)) return [];
  const candidate = message as temporal.api.failure.v1.IFailure;
  const own = typeof candidate.message === 'string' && 'encodedAttributes' in candidate ? [candidate] : [];
  return [...own, ...Object.values(message).flatMap(failuresIn)];
}

async function rawHistory(
  workflowId: string,
): Promise<{ history: temporal.api.history.v1.IHistory; bytes: Buffer }> {
  const history = await withoutCodec.workflow.getHandle(workflowId).fetchHistory();
  return { history, bytes: Buffer.from(temporal.api.history.v1.History.encode(history).finish()) };
}

describe('failures with payload encryption configured', () => {
  it('keep their message and stack trace in an encoded payload the codec seals, which the keys open', async () => {
    const settings = resolveTemporalConnection({ config: { codec: { keys: [codecKey] } }, env: {} });
    // Workers, clients and the workflow bundle share toolgate's failure converter.
    expect(settings.dataConverter.failureConverterPath).toBeDefined();
    const loaded = loadDataConverter(settings.dataConverter);
    // What tool-call.ts throws when a call ends rejected: its message is the model-facing message.
    const secret = 'Order ORD-1001 is in BRL, not USD; alice denied refund 2590 BRL on ORD-1001';
    const error = ApplicationFailure.create({
      type: 'CURRENCY_MISMATCH',
      message: secret,
      details: [{ secret }],
      nonRetryable: true,
    });
    const sealed = await encodeFailure(loaded.payloadCodecs, await encodeErrorToFailure(loaded, error));
    expect(JSON.stringify(sealed)).not.toContain('ORD-1001');
    expect(sealed.message).toBe('Encoded failure');
    expect(sealed.stackTrace).toBe('');
    expect(sealed.encodedAttributes?.metadata?.encoding).toEqual(Buffer.from(encryptedPayloadEncoding));
    const opened = await decodeOptionalFailureToOptionalError(
      loaded,
      await decodeFailure(loaded.payloadCodecs, sealed),
    );
    expect(opened).toBeInstanceOf(ApplicationFailure);
    expect(opened).toMatchObject({ type: 'CURRENCY_MISMATCH', message: secret, details: [{ secret }] });

    // Without a codec the same converter applies: the message is a plain JSON payload, read as is.
    const plain = loadDataConverter(resolveTemporalConnection({ env: {} }).dataConverter);
    const unsealed = await encodeErrorToFailure(plain, error);
    expect(unsealed.message).toBe('Encoded failure');
    expect(Buffer.from(unsealed.encodedAttributes?.data ?? []).toString()).toContain(secret);
    expect(await decodeOptionalFailureToOptionalError(plain, unsealed)).toMatchObject({ message: secret });
  });

  it('keeps a denied call’s reason and message out of Temporal in plaintext, while the client with the keys reads them', async () => {
    const marker = `denial-secret-${randomUUID()}`;
    const session = `${harness.newSession()}:support-bot`;
    const pending = await harness.client.call({
      session,
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(pending).toMatchObject({ ok: false, code: 'APPROVAL_PENDING' });
    expect(
      await harness.admin.decide({
        callId: pending.callId,
        approver: 'bob',
        privateKey: harness.approverKey('bob'),
        decision: 'deny',
        reason: marker,
      }),
    ).toMatchObject({ accepted: true, state: 'denied' });
    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: false, code: 'APPROVAL_DENIED', effect: 'none' });
    expect(final?.message).toContain(marker);

    // The workflow's failure, as the client with the keys reads it: the very code and message.
    const failed: unknown = await harness.temporal.workflow
      .getHandle(pending.callId)
      .result()
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    expect((failed as WorkflowFailedError).cause).toMatchObject({
      type: 'APPROVAL_DENIED',
      message: final?.message,
    });

    for (const workflowId of [pending.callId]) {
      expectNoTrace(await rawHistory(workflowId), marker, workflowId);
    }
    // The call's history does hold failures: encoded, their message sealed in encodedAttributes.
    const failures = failuresIn((await rawHistory(pending.callId)).history);
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) expect(failure.message).toBe('Encoded failure');
  });

  it('keeps a backend’s rejection message (an activity’s failure) out of Temporal in plaintext', async () => {
    const session = `${harness.newSession()}:test-refunder`;
    const result = await harness.client.call({
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments({ currency: 'USD' }),
    });
    const message = 'Order ORD-1001 is in BRL, not USD. Use the order currency.';
    expect(result).toMatchObject({ ok: false, code: 'CURRENCY_MISMATCH', message });
    for (const workflowId of [result.callId]) {
      const raw = await rawHistory(workflowId);
      expectNoTrace(raw, 'is in BRL, not USD', workflowId);
      expectNoTrace(raw, 'ORD-1001', workflowId);
    }
    const failures = failuresIn((await rawHistory(result.callId)).history);
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) expect(failure.message).toBe('Encoded failure');
  });
});

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

    // The call's history, raw (a session is no workflow): no trace of the marker, as text or as base64.
    for (const workflowId of [result.callId]) {
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
      { workflowBundle: toolGateWorkflowBundle(), sinks: auditSinks, dataConverter },
      history,
      result.callId,
    );
  });
});
