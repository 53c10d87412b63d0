/**
 * On whose behalf an agent acts: the context a harness (never the model) attaches to a session and
 * every proposal in it. It travels inside the proposal, so the caller's signature covers it; the
 * worker checks its shape again (a raw client may send anything), a session fixes it at its first
 * admission, and a tool's bound parameters are filled from it. Pure and sandbox-safe.
 */
import { canonicalJson } from '../shared/canonical-json';

/** Who the agent acts for, where, and what else the host vouches for. */
export interface CallContext {
  /** The end user the agent acts for (a customer id, an employee id), as the host authenticated them. */
  onBehalfOf?: string;
  /** The tenant (a shop, an organisation) the conversation belongs to. */
  tenant?: string;
  /** Where the conversation happens, e.g. `end-user-chat`, `internal-console`. */
  channel?: string;
  /** Further facts the host vouches for, name to text (`plan: "gold"`, `region: "eu"`). */
  claims?: Record<string, string>;
}

/** Where a bound parameter takes its value from: a field of the context, or one of its claims. */
export type ContextSource = 'onBehalfOf' | 'tenant' | 'channel' | `claims.${string}`;

/** The longest identifier (`onBehalfOf`, `tenant`) a context carries, in characters. */
export const maxContextIdLength = 128;
/** The most claims a context carries. */
export const maxContextClaims = 16;
/** The longest claim value, in characters. */
export const maxClaimValueLength = 256;

const idPattern = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+$/u;
const channelPattern = /^[a-z][a-z0-9-]{0,63}$/;
/** A claim's name: a letter, then letters, digits, `_`, `-` or `.`: never `__proto__`. */
const claimNamePattern = /^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/;
const contextFields = new Set(['onBehalfOf', 'tenant', 'channel', 'claims']);

/** A context as the harness gave it: checked, copied, its claims in a record without a prototype. */
export type ContextCheck = { ok: true; context: CallContext } | { ok: false; problem: string };

/**
 * Checks a context's shape: known fields only, identifiers of printable text within
 * `maxContextIdLength`, a channel in kebab-case, at most `maxContextClaims` claims named like
 * identifiers with text values. Returns a copy (no prototype on `claims`) or the first problem.
 * Never throws, whatever it is given.
 */
export function checkContext(value: unknown): ContextCheck {
  if (value === undefined) return { ok: true, context: {} };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return {
      ok: false,
      problem: 'the context must be an object { onBehalfOf?, tenant?, channel?, claims? }',
    };
  }
  const given = value as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!contextFields.has(key)) {
      return { ok: false, problem: `the context has an unknown field "${key.slice(0, 64)}"` };
    }
  }
  const context: CallContext = {};
  for (const field of ['onBehalfOf', 'tenant'] as const) {
    if (!Object.hasOwn(given, field) || given[field] === undefined) continue;
    const text = given[field];
    if (
      typeof text !== 'string' ||
      text.length === 0 ||
      text.length > maxContextIdLength ||
      !idPattern.test(text)
    ) {
      return {
        ok: false,
        problem: `context.${field} must be text of 1 to ${maxContextIdLength} printable characters`,
      };
    }
    context[field] = text;
  }
  if (Object.hasOwn(given, 'channel') && given.channel !== undefined) {
    if (typeof given.channel !== 'string' || !channelPattern.test(given.channel)) {
      return {
        ok: false,
        problem: 'context.channel must be kebab-case, 1 to 64 characters (for example "end-user-chat")',
      };
    }
    context.channel = given.channel;
  }
  if (Object.hasOwn(given, 'claims') && given.claims !== undefined) {
    const claims = given.claims;
    if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) {
      return { ok: false, problem: 'context.claims must be an object of name to text' };
    }
    const names = Object.keys(claims);
    if (names.length > maxContextClaims) {
      return {
        ok: false,
        problem: `context.claims holds ${names.length} claims; at most ${maxContextClaims}`,
      };
    }
    const checked = Object.create(null) as Record<string, string>;
    for (const name of names) {
      const claim = (claims as Record<string, unknown>)[name];
      if (!claimNamePattern.test(name)) {
        return {
          ok: false,
          problem: `context.claims names "${name.slice(0, 64)}": a claim's name is a letter, then letters, digits, "_", "-" or "."`,
        };
      }
      if (typeof claim !== 'string' || claim.length > maxClaimValueLength || !idPattern.test(claim)) {
        return {
          ok: false,
          problem: `context.claims.${name} must be text of 1 to ${maxClaimValueLength} printable characters`,
        };
      }
      checked[name] = claim;
    }
    if (names.length > 0) context.claims = checked;
  }
  return { ok: true, context };
}

/** True when a context says nothing at all. */
export function isEmptyContext(context: CallContext | undefined): boolean {
  return (
    context === undefined ||
    context === null ||
    (context.onBehalfOf === undefined &&
      context.tenant === undefined &&
      context.channel === undefined &&
      context.claims === undefined)
  );
}

/** The canonical text of a context (`{}` for none): two proposals act for the same end user when theirs are equal. */
export function contextKey(context: CallContext | undefined): string {
  return canonicalJson(context ?? {});
}

/** The value a context gives a source, or undefined when it has none. */
export function contextValue(context: CallContext | undefined, source: ContextSource): string | undefined {
  if (!context) return undefined;
  if (source.startsWith('claims.')) {
    const claims = context.claims;
    const name = source.slice('claims.'.length);
    return claims !== undefined && Object.hasOwn(claims, name) ? claims[name] : undefined;
  }
  return context[source as 'onBehalfOf' | 'tenant' | 'channel'];
}

/** True when `source` names a context field or a claim a context can carry. */
export function isContextSource(source: unknown): source is ContextSource {
  if (typeof source !== 'string') return false;
  if (source === 'onBehalfOf' || source === 'tenant' || source === 'channel') return true;
  return source.startsWith('claims.') && claimNamePattern.test(source.slice('claims.'.length));
}

/**
 * The values a tool's bound parameters take from a context: field to value, only for the sources
 * the context has. What the call id and the validated arguments include.
 */
export function boundValues(input: {
  boundParameters: Readonly<Record<string, ContextSource>> | undefined;
  context: CallContext | undefined;
}): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [field, source] of Object.entries(input.boundParameters ?? {})) {
    const value = contextValue(input.context, source);
    if (value !== undefined) values[field] = value;
  }
  return values;
}

/** One line for a person: `for CUS-1 (tenant shop-1, end-user-chat)`; empty for no context. */
export function describeContext(context: CallContext | undefined): string {
  // A raw client's call keeps what it sent in its state: only text is shown, never an object's conversion.
  if (!context || typeof context !== 'object' || isEmptyContext(context)) return '';
  const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
  const tenant = text(context.tenant);
  const channel = text(context.channel);
  const onBehalfOf = text(context.onBehalfOf);
  const where = [
    ...(tenant !== undefined ? [`tenant ${tenant}`] : []),
    ...(channel !== undefined ? [channel] : []),
  ];
  const who = onBehalfOf !== undefined ? `for ${onBehalfOf}` : 'for no end user';
  return where.length > 0 ? `${who} (${where.join(', ')})` : who;
}
