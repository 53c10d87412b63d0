import { describe, expect, it } from 'vitest';
import { signWebhookPayload, verifyWebhookSignature } from './webhook-signature';

const secret = 'test-webhook-secret';
const body = JSON.stringify({ event: 'approval-requested', eventId: 'tc-1:run:1:approval-requested' });
const nowMs = 1_800_000_000_000;
const timestamp = String(nowMs / 1000);
const signature = signWebhookPayload({ secret, timestamp, body });

describe('webhook signatures', () => {
  it('signs timestamp.body with HMAC-SHA256 as sha256=<hex>', () => {
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('accepts the signature of the exact body within the tolerance', () => {
    expect(verifyWebhookSignature({ secret, timestamp, body, signature, nowMs: nowMs + 60_000 })).toEqual({
      ok: true,
    });
  });

  it('refuses a tampered body, another secret, or a timestamp moved to look fresh', () => {
    const tampered = body.replace('requested', 'decided');
    expect(verifyWebhookSignature({ secret, timestamp, body: tampered, signature, nowMs })).toEqual({
      ok: false,
      reason: 'signature-mismatch',
    });
    expect(verifyWebhookSignature({ secret: 'other', timestamp, body, signature, nowMs }).ok).toBe(false);
    const moved = String(nowMs / 1000 + 600);
    expect(
      verifyWebhookSignature({ secret, timestamp: moved, body, signature, nowMs: nowMs + 600_000 }),
    ).toEqual({
      ok: false,
      reason: 'signature-mismatch',
    });
  });

  it('refuses a genuine request replayed after the tolerance', () => {
    expect(verifyWebhookSignature({ secret, timestamp, body, signature, nowMs: nowMs + 301_000 })).toEqual({
      ok: false,
      reason: 'timestamp-out-of-range',
    });
    expect(
      verifyWebhookSignature({
        secret,
        timestamp,
        body,
        signature,
        nowMs: nowMs + 3_000,
        toleranceSeconds: 2,
      }),
    ).toEqual({ ok: false, reason: 'timestamp-out-of-range' });
  });

  it('refuses malformed headers without comparing', () => {
    expect(verifyWebhookSignature({ secret, timestamp: 'soon', body, signature, nowMs }).ok).toBe(false);
    expect(verifyWebhookSignature({ secret, timestamp, body, signature: 'sha1=abc', nowMs })).toEqual({
      ok: false,
      reason: 'malformed',
    });
  });
});
