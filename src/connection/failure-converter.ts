// toolgate's failure converter: loaded by module path (it must export `failureConverter`) by every
// worker's activities, every client toolgate opens, and, baked into the prebuilt workflow bundle,
// the workflow sandbox. It runs inside the sandbox, so it imports nothing but the SDK's common module.
import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Failures with their message and stack trace moved into `encodedAttributes`, a payload the payload
 * codec (when configured) encrypts like any other. A failure's message carries customer data (the
 * model-facing message of a rejected call, an approver's reason, a backend's domain message); left as
 * the failure's `message` it would sit in history in plaintext whatever the codec.
 *
 * Encoded always, codec or not. The sandbox takes its failure converter only from the bundle, which
 * toolgate prebuilds once and ships; encoding only with a codec would double the prebuilt bundles
 * (plain and traced, each with and without encoding) and make workers pick among them, with clients
 * and workers that could disagree. Encoding unconditionally keeps one bundle and one rule, and costs
 * nothing in readability: without a codec the message sits in a plain JSON payload, which the Web
 * UI and `temporal workflow show` display, and every SDK client decodes `encodedAttributes` whether
 * or not it encodes them itself, so a client of either form reads the same message.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
