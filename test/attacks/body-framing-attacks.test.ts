import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodecServer } from 'toolgate';
import { PayloadEncryptionCodec, startCodecServer } from 'toolgate';
import type { ApprovalsConsole } from 'toolgate/console';
import { startHarnessConsole } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// A request body is judged the same whatever its framing: sent with a Content-Length or chunked
// (Transfer-Encoding: chunked, no length), the approvals console and the codec server give the same
// answer, refuse the same bodies as too large, and never answer 500.

let harness: ToolGateHarness;
let approvals: ApprovalsConsole;
let codecServer: CodecServer;
const token = randomBytes(24).toString('base64url');
const codec = new PayloadEncryptionCodec({ keys: [{ id: 'framing-key', key: randomBytes(32) }] });

useHarness((started) => (harness = started));

beforeAll(async () => {
  approvals = await startHarnessConsole(harness);
  codecServer = await startCodecServer({ codec, token, host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await approvals?.stop();
  await codecServer?.stop();
});

type Framing = 'content-length' | 'chunked';

/** POSTs `body` framed as asked (chunked: written in 1 KiB pieces, no length); the status and the body. */
function post(input: {
  url: string;
  body: string;
  framing: Framing;
  headers?: Record<string, string>;
}): Promise<{ status: number; body: string }> {
  const bytes = Buffer.from(input.body);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      input.url,
      {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          ...input.headers,
          ...(input.framing === 'content-length'
            ? { 'Content-Length': String(bytes.byteLength) }
            : { 'Transfer-Encoding': 'chunked' }),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    // A refused body may be cut off mid-write: the answer is what counts.
    outgoing.on('error', (error) => (outgoing.writableEnded ? undefined : reject(error)));
    // A write the server reset after it answered fails on the socket once the request let go of it;
    // the request's own handler above has already seen any error that matters.
    outgoing.on('socket', (socket) => socket.on('error', () => undefined));
    for (let offset = 0; offset < bytes.byteLength; offset += 1024) {
      outgoing.write(bytes.subarray(offset, offset + 1024));
    }
    outgoing.end();
  });
}

const framings: Framing[] = ['content-length', 'chunked'];

describe('the approvals console', () => {
  const login = (body: string, framing: Framing) =>
    post({ url: `${approvals.url}/login`, body, framing, headers: { Origin: approvals.url } });

  it('answers a sign-in body the same, framed either way', async () => {
    const [withLength, chunked] = await Promise.all(framings.map((framing) => login('{}', framing)));
    expect(withLength!.status).toBeLessThan(500);
    expect(chunked).toEqual(withLength);
  });

  it('refuses a body over 64 KiB as too large, framed either way', async () => {
    const large = JSON.stringify({ approver: 'alice', padding: 'x'.repeat(70 * 1024) });
    for (const framing of framings) {
      const answer = await login(large, framing);
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'BAD_REQUEST' });
    }
  });
});

describe('the codec server', () => {
  const decode = (body: string, framing: Framing) =>
    post({
      url: `${codecServer.url}/decode`,
      body,
      framing,
      headers: { Authorization: `Bearer ${token}`, 'X-Namespace': 'default' },
    });

  it('decodes the same payloads sent chunked as with a length', async () => {
    const [sealed] = await codec.encode([defaultPayloadConverter.toPayload({ order: 'ORD-1001' })]);
    const body = JSON.stringify({
      payloads: [
        {
          metadata: Object.fromEntries(
            Object.entries(sealed!.metadata ?? {}).map(([name, value]) => [
              name,
              Buffer.from(value).toString('base64'),
            ]),
          ),
          data: Buffer.from(sealed!.data ?? []).toString('base64'),
        },
      ],
    });
    const [withLength, chunked] = await Promise.all(framings.map((framing) => decode(body, framing)));
    expect(withLength!.status).toBe(200);
    expect(chunked).toEqual(withLength);
    const [payload] = (JSON.parse(chunked!.body) as { payloads: { data: string }[] }).payloads;
    expect(JSON.parse(Buffer.from(payload!.data, 'base64').toString())).toEqual({ order: 'ORD-1001' });
  });

  it('refuses a chunked body over 16 MiB as too large, as it does one with a length', async () => {
    const large = JSON.stringify({ payloads: [], padding: 'x'.repeat(16 * 1024 * 1024 + 1) });
    for (const framing of framings) {
      expect(await decode(large, framing)).toEqual({
        status: 413,
        body: JSON.stringify({ error: 'body too large' }),
      });
    }
  });
});
