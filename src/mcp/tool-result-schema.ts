// The JSON Schema of toolgate's answer to every call, written once: the `outputSchema` of every tool
// the MCP server lists, so an MCP client can check each `structuredContent` it gets back.
import { codePattern } from '../shared/codes';
import type { JsonSchema } from '../providers/json-schema';

/** Freezes a JSON value and everything in it, so a shared schema cannot be changed by one user of it. */
function deepFrozen<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFrozen(child);
    Object.freeze(value);
  }
  return value;
}

/**
 * The `ToolResult` envelope as JSON Schema (draft 2020-12, without `$schema`): every result toolgate
 * returns, success or rejection, validates against it. Frozen; copy it before changing it.
 */
export const toolResultJsonSchema: Readonly<JsonSchema> = deepFrozen({
  type: 'object',
  title: 'ToolResult',
  description:
    "toolgate's answer to one tool call. Read `code` and `message`: APPROVAL_PENDING means a human must decide " +
    'first (nothing happened yet; ask toolgate_call_status later), any other code than OK says what to fix.',
  properties: {
    ok: { type: 'boolean', description: 'true only when the call did what it was asked' },
    tool: { type: 'string', description: 'the tool the call named' },
    code: {
      type: 'string',
      pattern: codePattern.source,
      description:
        "OK, or a stable SCREAMING_SNAKE code: one of toolgate's own or a domain code the tool declares",
    },
    message: { type: 'string', description: 'what happened and what to do next' },
    effect: {
      type: 'string',
      enum: ['none', 'applied', 'unknown'],
      description: 'did the world change? `unknown` only when the backend itself could not tell',
    },
    data: {
      type: 'object',
      description: 'the result data, or details: accepted values, the expiry and preview of an approval',
    },
    callId: {
      type: 'string',
      description: 'the call id; the same call proposed again never applies twice',
    },
    replayed: { const: true, description: 'recorded earlier; nothing ran again' },
  },
  required: ['ok', 'tool', 'code', 'message', 'effect', 'callId'],
  additionalProperties: false,
});
