import type { CallContext, ContextSource } from './call-context';
import { boundValues, isEmptyContext } from './call-context';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';

/** The longest tool name a proposal carries; longer names are cut and can match no tool. */
export const maxToolNameLength = 200;
/** The largest raw arguments text a proposal carries (UTF-8 bytes); larger ones are `INVALID_JSON`. */
export const maxArgumentsBytes = 256 * 1024;
/**
 * The deepest nesting of arrays and objects arguments may have; deeper ones are `INVALID_JSON`
 * before anything walks them. Tool arguments are a few levels deep; 64 leaves room for any schema.
 */
export const maxArgumentsDepth = 64;
/**
 * The largest user message a proposal carries (UTF-8 bytes); a longer one is cut to it (on a
 * character boundary) and flagged. It is context for a person (mining), never input to a decision.
 */
export const maxUserMessageBytes = 16 * 1024;

/**
 * One proposed call as it travels into the workflow: the model's raw text, capped so that no
 * proposal can make the start itself fail.
 */
export interface Proposal {
  session: string;
  caller: string;
  tool: string;
  /** The raw JSON text the model produced (an object given by the harness is serialised). */
  rawArguments: string;
  /** Set when the raw text was over `maxArgumentsBytes`; `rawArguments` is then empty. */
  argumentsTooLarge?: { bytes: number; sha256: string };
  /** Set when the model's tool name was longer than `maxToolNameLength` and was cut. */
  toolNameTruncated?: true;
  /**
   * Set when the harness gave an object that is not JSON (nested deeper than `maxArgumentsDepth`,
   * cyclic, a BigInt): why, for the model's `INVALID_JSON`. `rawArguments` is then empty.
   */
  argumentsUnreadable?: string;
  intentId?: string;
  /**
   * The user's message of the turn that led to this call, when the harness attached one: kept in the
   * call's audit record so that mining (`toolgate mine`) can show it. No step reads it, and it is not
   * part of the call id. Capped at `maxUserMessageBytes`.
   */
  userMessage?: string;
  /** Set when the user message was longer than `maxUserMessageBytes` and was cut. */
  userMessageTruncated?: true;
  /**
   * On whose behalf the agent acts, as the harness attached it (never the model): signed with the
   * proposal, fixed for its session, the source of the tool's bound parameters. Absent: none.
   */
  context?: CallContext;
}

/** The raw arguments as an audit record keeps them: the text, or the size and digest of one over the cap. */
export function auditedRawArguments(proposal: Proposal): string {
  return proposal.argumentsTooLarge
    ? `(${proposal.argumentsTooLarge.bytes} bytes, sha256 ${proposal.argumentsTooLarge.sha256})`
    : proposal.rawArguments;
}

/** The outcome of parsing raw arguments: a JSON object, or why it is not one. */
export type ParsedArguments =
  { ok: true; value: Record<string, unknown> } | { ok: false; message: string; parsedValue?: unknown };

/**
 * Parses raw arguments; an empty text means no arguments (`{}`), anything but an object is refused,
 * and so is nesting deeper than `maxArgumentsDepth` (checked on the text, before parsing).
 */
export function parseArguments(rawArguments: string): ParsedArguments {
  if (rawArguments.trim() === '') return { ok: true, value: {} };
  const depth = jsonNestingDepth(rawArguments);
  if (depth > maxArgumentsDepth) {
    return {
      ok: false,
      message:
        `The arguments are nested ${depth} levels deep; the limit is ${maxArgumentsDepth}. ` +
        "Send one JSON object with the tool's fields, as its schema nests them.",
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(rawArguments);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { ok: false, message: `The arguments are not valid JSON (${detail}). Send one JSON object.` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const kind = Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;
    return {
      ok: false,
      message: `The arguments are ${kind}, not a JSON object. Send one JSON object with the tool's fields.`,
      parsedValue: value,
    };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/**
 * How deeply arrays and objects nest in a JSON text (0 for a scalar), counted over the text without
 * parsing it, so it is linear and never recurses. Brackets inside strings do not count.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c)
        index++; // a backslash escapes the next character
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (code === 0x5d || code === 0x7d) depth--;
  }
  return deepest;
}

/**
 * The JSON text of arguments a harness gave as an object, or why it has none: nested deeper than
 * `maxArgumentsDepth` (measured with a stack, so any depth is safe, a cycle included), more values
 * than the byte cap can hold (an object that shares references would otherwise take exponential
 * time to walk), or not serialisable (a BigInt). Never throws.
 */
function argumentsText(value: Record<string, unknown>): { text: string } | { unreadable: string } {
  const pending: [unknown, number][] = [[value, 1]];
  let visited = 0;
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    // Every JSON value takes at least one byte of text: more values than bytes cannot fit the cap.
    if (++visited > maxArgumentsBytes) {
      return { unreadable: `they hold more than ${maxArgumentsBytes} values (the byte cap)` };
    }
    const [current, depth] = item;
    if (current === null || typeof current !== 'object') continue;
    if (depth > maxArgumentsDepth) {
      return { unreadable: `they are nested more than ${maxArgumentsDepth} levels deep (the limit)` };
    }
    for (const child of Object.values(current)) pending.push([child, depth + 1]);
  }
  try {
    return { text: JSON.stringify(value) ?? '' };
  } catch (error) {
    return { unreadable: `they are not JSON (${error instanceof Error ? error.message : String(error)})` };
  }
}

/** Builds the proposal the workflow receives, applying the caps; never throws on the model's input. */
export function capProposal(input: {
  session: string;
  caller: string;
  tool: string;
  arguments: string | Record<string, unknown>;
  intentId?: string;
  userMessage?: string;
  /** Already checked by the harness's client (`checkContext`); an empty one is left out. */
  context?: CallContext;
}): Proposal {
  const read =
    typeof input.arguments === 'string' ? { text: input.arguments } : argumentsText(input.arguments);
  const rawText = 'text' in read ? read.text : '';
  const proposal: Proposal = {
    session: input.session,
    caller: input.caller,
    tool: input.tool,
    rawArguments: rawText,
  };
  if ('unreadable' in read) proposal.argumentsUnreadable = read.unreadable;
  if (input.tool.length > maxToolNameLength) {
    proposal.tool = input.tool.slice(0, maxToolNameLength);
    proposal.toolNameTruncated = true;
  }
  const bytes = utf8Length(rawText);
  if (bytes > maxArgumentsBytes) {
    proposal.rawArguments = '';
    proposal.argumentsTooLarge = { bytes, sha256: sha256Hex(rawText) };
  }
  if (input.intentId !== undefined) proposal.intentId = input.intentId;
  if (!isEmptyContext(input.context)) proposal.context = input.context;
  // Only text: the harness's JavaScript callers may pass anything, and it is never worth a failed call.
  if (typeof input.userMessage === 'string') {
    const message = cutToUtf8Bytes({ text: input.userMessage, maxBytes: maxUserMessageBytes });
    proposal.userMessage = message.text;
    if (message.cut) proposal.userMessageTruncated = true;
  }
  return proposal;
}

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes, never splitting a character. */
function cutToUtf8Bytes(input: { text: string; maxBytes: number }): { text: string; cut: boolean } {
  const { text, maxBytes } = input;
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    const pair = code >= 0xd800 && code <= 0xdbff && index + 1 < text.length;
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > maxBytes) return { text: text.slice(0, index), cut: true };
    bytes += size;
    if (pair) index++;
  }
  return { text, cut: false };
}

function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * The arguments part of the idempotency key: the canonical parsed value restricted to the tool's
 * `idempotencyFields`, or the raw text when it does not parse; with the values the tool's bound
 * parameters take from the proposal's context, when it binds any.
 */
export function keyArguments(input: {
  proposal: Proposal;
  idempotencyFields?: readonly string[] | undefined;
  boundParameters?: Readonly<Record<string, ContextSource>> | undefined;
}): unknown {
  const args = modelKeyArguments(input);
  if (!input.boundParameters) return args;
  // The host's values win over anything the model sent under the same name (which is refused anyway).
  const bound = boundValues({ boundParameters: input.boundParameters, context: input.proposal.context });
  return args !== null && typeof args === 'object' && !Array.isArray(args)
    ? { ...(args as Record<string, unknown>), ...bound }
    : { arguments: args, bound };
}

function modelKeyArguments(input: {
  proposal: Proposal;
  idempotencyFields?: readonly string[] | undefined;
}): unknown {
  const { proposal } = input;
  if (proposal.argumentsTooLarge) return { tooLarge: proposal.argumentsTooLarge.sha256 };
  if (proposal.argumentsUnreadable !== undefined) return { unreadable: proposal.argumentsUnreadable };
  const parsed = parseArguments(proposal.rawArguments);
  if (!parsed.ok) return 'parsedValue' in parsed ? parsed.parsedValue : proposal.rawArguments;
  if (!input.idempotencyFields) return parsed.value;
  const restricted: Record<string, unknown> = {};
  for (const field of input.idempotencyFields) {
    if (Object.hasOwn(parsed.value, field)) restricted[field] = parsed.value[field];
  }
  return restricted;
}

/**
 * The call id: the workflow ID and the idempotency key of every attempt. The same proposal,
 * whatever its whitespace or key order, always yields the same id: `tc-<tool>-<sha256>`, so the
 * Temporal UI's list tells a refund from a read. The tool's name is in it only when it has a tool
 * name's shape (what `defineTool` accepts); any other text the model sent as a name gives `tc-<sha256>`.
 */
export function deriveCallId(input: {
  proposal: Proposal;
  idempotencyFields?: readonly string[] | undefined;
  boundParameters?: Readonly<Record<string, ContextSource>> | undefined;
}): string {
  const { proposal } = input;
  const key =
    proposal.intentId !== undefined
      ? [proposal.caller, proposal.tool, `intent:${proposal.intentId}`]
      : [proposal.caller, proposal.tool, `session:${proposal.session}`, keyArguments(input)];
  const readable = callIdToolPattern.test(proposal.tool) ? `${proposal.tool}-` : '';
  return `tc-${readable}${sha256Hex(canonicalJson(key))}`;
}

/** A tool name as `defineTool` accepts it: what may show in a call id. */
const callIdToolPattern = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;
const callIdPattern = /^tc-(?:[a-zA-Z][a-zA-Z0-9_-]{0,63}-)?[0-9a-f]{64}$/;

/**
 * True when `text` has the shape of a call id (`tc-`, maybe a tool's name and `-`, and 64 hex
 * digits; ids made before the name was added have none); anything else names no call.
 */
export function isCallId(text: string): boolean {
  return callIdPattern.test(text);
}

/**
 * Digest of what the proposal asks for (all arguments, and its context when it has one), used to
 * refuse an `intentId` reused with other arguments or for another end user.
 */
export function proposalArgumentsDigest(proposal: Proposal): string {
  const args = keyArguments({ proposal });
  return sha256Hex(canonicalJson(proposal.context ? { arguments: args, context: proposal.context } : args));
}
