import { createHmac, timingSafeEqual } from 'node:crypto';

/** How old a webhook's timestamp may be before a receiver refuses it (default of `verifyWebhookSignature`). */
export const defaultWebhookToleranceSeconds = 300;

/**
 * The `X-Toolgate-Signature` value for a webhook body: `sha256=` and the hex HMAC-SHA256, keyed by
 * the channel's secret, of `timestamp + "." + body` (the timestamp is `X-Toolgate-Timestamp`, in
 * seconds). Binding the timestamp lets a receiver refuse an old request replayed to it.
 */
export function signWebhookPayload(input: { secret: string; timestamp: string; body: string }): string {
  const hmac = createHmac('sha256', input.secret).update(`${input.timestamp}.${input.body}`).digest('hex');
  return `sha256=${hmac}`;
}

/** A webhook's check: it holds, or why not. */
export type WebhookVerification =
  { ok: true } | { ok: false; reason: 'malformed' | 'signature-mismatch' | 'timestamp-out-of-range' };

/**
 * For a receiver of toolgate's webhooks: whether `signature` (the `X-Toolgate-Signature` header) is
 * toolgate's HMAC of this exact body and timestamp under `secret`, and the timestamp (the
 * `X-Toolgate-Timestamp` header, seconds) within `toleranceSeconds` of now (default 300). Compares in
 * constant time; pass the body exactly as received, before any JSON parsing.
 */
export function verifyWebhookSignature(input: {
  secret: string;
  timestamp: string;
  body: string;
  signature: string;
  toleranceSeconds?: number;
  /** Now, in milliseconds (default `Date.now()`), for tests. */
  nowMs?: number;
}): WebhookVerification {
  if (!/^\d{1,12}$/.test(input.timestamp) || !/^sha256=[0-9a-f]{64}$/.test(input.signature)) {
    return { ok: false, reason: 'malformed' };
  }
  const expected = Buffer.from(signWebhookPayload(input));
  const given = Buffer.from(input.signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { ok: false, reason: 'signature-mismatch' };
  }
  const ageSeconds = Math.abs((input.nowMs ?? Date.now()) / 1000 - Number(input.timestamp));
  if (ageSeconds > (input.toleranceSeconds ?? defaultWebhookToleranceSeconds)) {
    return { ok: false, reason: 'timestamp-out-of-range' };
  }
  return { ok: true };
}
