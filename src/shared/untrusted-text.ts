/**
 * Taint: what a conversation has read that came from outside (a customer's note, an email, a web
 * page). A tool's contract marks such outputs; once one entered a session, the caller's policy
 * decides what the session's writes need. Pure and sandbox-safe.
 */

/** One untrusted output a session read: which tool's field, in which call, when. */
export interface UntrustedRead {
  /** `<tool>.<field>`, or the tool's name when its whole output is untrusted. */
  source: string;
  callId: string;
  /** ISO 8601. */
  at: string;
}

/** The most untrusted reads a session keeps (the first of each source). */
export const maxUntrustedReads = 20;

/**
 * The untrusted sources in one tool output, as the contract marks them: the tool itself when its whole
 * output is untrusted, else each marked top-level field that holds text (an empty or null note is no
 * text from outside).
 */
export function untrustedSources(input: {
  tool: string;
  marked: true | readonly string[] | undefined;
  output: unknown;
}): string[] {
  const { tool, marked, output } = input;
  if (marked === undefined) return [];
  if (marked === true) return [tool];
  if (output === null || typeof output !== 'object') return [];
  return marked
    .filter((field) => {
      const value = Object.hasOwn(output, field) ? (output as Record<string, unknown>)[field] : undefined;
      return typeof value === 'string' ? value.trim() !== '' : value !== undefined && value !== null;
    })
    .map((field) => `${tool}.${field}`);
}

/** Adds reads to a session's list: the first of each source is kept, at most `maxUntrustedReads`. */
export function withUntrustedReads(
  known: readonly UntrustedRead[],
  reads: readonly UntrustedRead[],
): UntrustedRead[] {
  const kept = [...known];
  for (const read of reads) {
    if (kept.length >= maxUntrustedReads) break;
    if (!kept.some((seen) => seen.source === read.source)) kept.push(read);
  }
  return kept;
}

/** For approvers: `this conversation read untrusted text from get_order.note at 14:02`. */
export function describeUntrustedReads(reads: readonly UntrustedRead[]): string {
  const sources = reads.map((read) => `${read.source} at ${read.at.slice(11, 16)} UTC`).join(', ');
  return `this conversation read untrusted text from ${sources}`;
}
