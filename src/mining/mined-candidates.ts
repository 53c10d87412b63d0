// What mining finds in recorded traffic: candidate cases for the selection suite, each with why, most
// valuable first. Pure: it reads records and session ends it is given, and never labels anything; a
// person decides what the model should have done (seed 003: automatic labels freeze the agent's own
// mistakes into the suite).
import type { AuditRecord } from '../audit/audit-store';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import { parseArguments } from '../calls/proposal';

/**
 * The kinds of candidate in their value order, the order mining ranks them in: a hand-off to a human
 * right after a tool call (the tool chosen was likely wrong), a denied approval (a person said no to
 * what the model asked), the same tool proposed again and again in one session (a loop, usually an
 * error the model could not act on), arguments or a tool name rejected (the model's payload is wrong).
 */
export const candidateKinds = ['handoff', 'denial', 'loop', 'rejected-arguments'] as const;

/** One kind of candidate; see {@link candidateKinds} for their value order. */
export type CandidateKind = (typeof candidateKinds)[number];

/** Codes that reject what the model sent (the tool it named or its arguments) before anything ran. */
export const rejectedArgumentCodes: readonly string[] = [
  'INVALID_JSON',
  'INVALID_ARGUMENTS',
  'UNKNOWN_TOOL',
  'TOOL_NOT_ALLOWED',
];

/**
 * How many proposals of one tool in one session make a loop, unless every one succeeded with arguments
 * of its own (three orders looked up for a user who asked about three orders).
 */
export const loopThreshold = 3;

/** How a session ended, as mining reads it: its reason (`handoff`, `idle`, ...) and when. */
export interface SessionEnd {
  session: string;
  caller?: string;
  reason: string;
  /** When its run closed (ISO 8601). */
  endedAt: string;
}

/** A candidate case for a person to label; it says why it was picked and never what the answer is. */
export interface MinedCandidate {
  /** Stable for the same finding (kind, tool, arguments and user message): a re-run finds the same id. */
  id: string;
  kind: CandidateKind;
  /** Why it was picked, in words: its own reason first, then those of findings folded into it. */
  why: string[];
  /** The tool the model named (as it named it). */
  tool: string;
  /** The code of the call the case is about. */
  code: string;
  caller: string;
  /** The arguments exactly as the model sent them (or the size and digest of a payload over the cap). */
  rawArguments: string;
  /** The turn's user message, when the harness attached one to a call of this finding. */
  userMessage?: string;
  /** How many times the same finding was seen (same kind, tool, arguments and user message). */
  occurrences: number;
  /** The sessions it was seen in, most recent first (at most 20). */
  sessions: string[];
  /** The calls involved, the case's own first (at most 20). */
  callIds: string[];
  /** When the most recent occurrence happened (ISO 8601). */
  lastSeenAt: string;
  /** For a denial: who denied and the reason they gave. */
  denial?: { approver: string; reason: string };
  /** For a hand-off: when the session ended, and how long after the call was proposed. */
  handoff?: { endedAt: string; afterMs: number };
  /** For a loop: how many proposals, the longest streak in a row, their codes, how many distinct arguments. */
  loop?: { times: number; inARow: number; codes: Record<string, number>; distinctArguments: number };
}

/** What a finding is before duplicates are merged: one occurrence, in one session. */
interface Finding {
  kind: CandidateKind;
  session: string;
  /** The record the case is about (its tool, arguments and code). */
  subject: AuditRecord;
  records: AuditRecord[];
  why: string[];
  at: string;
  userMessage?: string;
  denial?: MinedCandidate['denial'];
  handoff?: MinedCandidate['handoff'];
  loop?: MinedCandidate['loop'];
}

const keptPerCandidate = 20;

/**
 * The candidates in `records` (what was recorded in the window) and in the sessions that ended in it,
 * ranked by value (kind first, in {@link candidateKinds} order; then how often it was seen; then those
 * with a user message; then the most recent). A finding that shares a call with a more valuable one
 * of the same session is folded into it (its reason added), so one turn is one case; the same
 * finding seen again (same kind, tool, canonical arguments and user message) is one candidate with
 * its count. `recordsOfSession` gives a session's whole record, for the call a hand-off followed.
 */
export function findCandidates(input: {
  records: readonly AuditRecord[];
  sessionEnds: readonly SessionEnd[];
  recordsOfSession: (session: string) => readonly AuditRecord[];
  limit?: number;
}): { candidates: MinedCandidate[]; found: number } {
  const findings = [
    ...handoffFindings(input),
    ...denialFindings(input.records),
    ...loopFindings(input.records),
    ...rejectedArgumentFindings(input.records),
  ];
  const candidates = deduplicated(folded(findings)).sort(byValue);
  return { candidates: candidates.slice(0, input.limit ?? candidates.length), found: candidates.length };
}

function handoffFindings(input: {
  sessionEnds: readonly SessionEnd[];
  recordsOfSession: (session: string) => readonly AuditRecord[];
}): Finding[] {
  const findings: Finding[] = [];
  for (const end of input.sessionEnds) {
    if (end.reason !== 'handoff') continue;
    const endedAt = Date.parse(end.endedAt);
    // The call proposed last before the end; a call still waiting then has its record once it ends.
    let last: AuditRecord | undefined;
    for (const record of input.recordsOfSession(end.session)) {
      if (Date.parse(record.startedAt) <= endedAt && (!last || record.startedAt >= last.startedAt)) {
        last = record;
      }
    }
    if (!last) continue; // a hand-off with no tool call says nothing about tool choice
    const afterMs = Math.max(0, endedAt - Date.parse(last.startedAt));
    findings.push({
      kind: 'handoff',
      session: end.session,
      subject: last,
      records: [last],
      why: [
        `the session was handed off to a human ${durationText(afterMs)} after this call (${last.tool}, ${last.code})`,
      ],
      at: end.endedAt,
      ...userMessageOf([last]),
      handoff: { endedAt: end.endedAt, afterMs },
    });
  }
  return findings;
}

function denialFindings(records: readonly AuditRecord[]): Finding[] {
  return records
    .filter((record) => record.code === 'APPROVAL_DENIED')
    .map((record) => {
      const denial = [...(record.decisions ?? [])].reverse().find((decision) => decision.decision === 'deny');
      const who = denial ? `${denial.approver} denied the approval` : 'the approval was denied';
      return {
        kind: 'denial' as const,
        session: record.session,
        subject: record,
        records: [record],
        why: [denial?.reason ? `${who}: "${denial.reason}"` : who],
        at: record.finishedAt,
        ...userMessageOf([record]),
        ...(denial ? { denial: { approver: denial.approver, reason: denial.reason } } : {}),
      };
    });
}

function loopFindings(records: readonly AuditRecord[]): Finding[] {
  const bySession = new Map<string, AuditRecord[]>();
  for (const record of records) {
    const list = bySession.get(record.session) ?? [];
    list.push(record);
    bySession.set(record.session, list);
  }
  const findings: Finding[] = [];
  for (const [session, sessionRecords] of bySession) {
    const ordered = [...sessionRecords].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    const byTool = new Map<string, AuditRecord[]>();
    for (const record of ordered) byTool.set(record.tool, [...(byTool.get(record.tool) ?? []), record]);
    for (const [tool, calls] of byTool) {
      if (calls.length < loopThreshold) continue;
      const codes: Record<string, number> = {};
      for (const call of calls) codes[call.code] = (codes[call.code] ?? 0) + 1;
      const distinctArguments = new Set(calls.map(argumentsKey)).size;
      // Work that went well, each call on something else: nothing to learn from it.
      if (distinctArguments === calls.length && calls.every((call) => call.ok)) continue;
      const inARow = longestStreak({ ordered, tool });
      const codeText = Object.entries(codes)
        .map(([code, count]) => `${code} x${count}`)
        .join(', ');
      const argumentsText =
        distinctArguments === 1 ? 'the same arguments each time' : `${distinctArguments} distinct arguments`;
      findings.push({
        kind: 'loop',
        session,
        // The first proposal: the turn that started the loop.
        subject: calls[0]!,
        records: calls,
        why: [
          `${tool} was proposed ${calls.length} times in one session (${inARow} in a row; ${codeText}; ${argumentsText})`,
        ],
        at: calls[calls.length - 1]!.finishedAt,
        ...userMessageOf(calls),
        loop: { times: calls.length, inARow, codes, distinctArguments },
      });
    }
  }
  return findings;
}

function rejectedArgumentFindings(records: readonly AuditRecord[]): Finding[] {
  return records
    .filter((record) => rejectedArgumentCodes.includes(record.code))
    .map((record) => ({
      kind: 'rejected-arguments' as const,
      session: record.session,
      subject: record,
      records: [record],
      why: [`rejected with ${record.code}: ${firstLine(record.result.message)}`],
      at: record.finishedAt,
      ...userMessageOf([record]),
    }));
}

/** Folds each finding into a more valuable one of its session that shares a call with it: one turn, one case. */
function folded(findings: readonly Finding[]): Finding[] {
  const kept: { finding: Finding; keys: Set<string> }[] = [];
  const ranked = [...findings].sort((a, b) => kindRank(a.kind) - kindRank(b.kind));
  for (const finding of ranked) {
    const keys = finding.records.map(recordKey);
    const into = kept.find(
      (entry) =>
        entry.finding.session === finding.session &&
        kindRank(entry.finding.kind) < kindRank(finding.kind) &&
        keys.some((key) => entry.keys.has(key)),
    );
    if (!into) {
      kept.push({
        finding: { ...finding, why: [...finding.why], records: [...finding.records] },
        keys: new Set(keys),
      });
      continue;
    }
    for (const line of finding.why) if (!into.finding.why.includes(line)) into.finding.why.push(line);
    for (const record of finding.records) {
      if (!into.keys.has(recordKey(record))) into.finding.records.push(record);
      into.keys.add(recordKey(record));
    }
    into.finding.userMessage ??= finding.userMessage;
    if (finding.loop) into.finding.loop ??= finding.loop;
  }
  return kept.map((entry) => entry.finding);
}

/** One candidate per kind, tool, canonical arguments and user message, with its count; the newest occurrence speaks. */
function deduplicated(findings: readonly Finding[]): MinedCandidate[] {
  const byKey = new Map<string, MinedCandidate>();
  const newestFirst = [...findings].sort((a, b) => b.at.localeCompare(a.at));
  for (const finding of newestFirst) {
    const { subject } = finding;
    const key = canonicalJson([
      finding.kind,
      subject.tool,
      argumentsKey(subject),
      finding.userMessage ?? null,
    ]);
    const callIds = unique([subject.callId, ...finding.records.map((record) => record.callId)]);
    const existing = byKey.get(key);
    if (existing) {
      existing.occurrences++;
      existing.sessions = unique([...existing.sessions, finding.session]).slice(0, keptPerCandidate);
      existing.callIds = unique([...existing.callIds, ...callIds]).slice(0, keptPerCandidate);
      continue;
    }
    byKey.set(key, {
      id: `${finding.kind}-${sha256Hex(key).slice(0, 12)}`,
      kind: finding.kind,
      why: finding.why,
      tool: subject.tool,
      code: subject.code,
      caller: subject.caller,
      rawArguments: subject.rawArguments,
      ...(finding.userMessage !== undefined ? { userMessage: finding.userMessage } : {}),
      occurrences: 1,
      sessions: [finding.session],
      callIds: callIds.slice(0, keptPerCandidate),
      lastSeenAt: finding.at,
      ...(finding.denial ? { denial: finding.denial } : {}),
      ...(finding.handoff ? { handoff: finding.handoff } : {}),
      ...(finding.loop ? { loop: finding.loop } : {}),
    });
  }
  return [...byKey.values()];
}

function byValue(a: MinedCandidate, b: MinedCandidate): number {
  return (
    kindRank(a.kind) - kindRank(b.kind) ||
    b.occurrences - a.occurrences ||
    Number(b.userMessage !== undefined) - Number(a.userMessage !== undefined) ||
    b.lastSeenAt.localeCompare(a.lastSeenAt) ||
    a.id.localeCompare(b.id)
  );
}

function kindRank(kind: CandidateKind): number {
  return candidateKinds.indexOf(kind);
}

/** The arguments as one key: canonical JSON when they parse (whitespace and key order do not count), else the raw text. */
function argumentsKey(record: AuditRecord): string {
  const parsed = parseArguments(record.rawArguments);
  return parsed.ok ? canonicalJson(parsed.value) : record.rawArguments;
}

function recordKey(record: AuditRecord): string {
  return `${record.callId}/${record.runId}`;
}

/** The user message of the first record that carries one (a raw client could send anything: text only). */
function userMessageOf(records: readonly AuditRecord[]): { userMessage?: string } {
  const found = records.find((record) => typeof record.userMessage === 'string' && record.userMessage !== '');
  return found?.userMessage !== undefined ? { userMessage: found.userMessage } : {};
}

/** The longest run of consecutive proposals of `tool` in a session's records. */
function longestStreak(input: { ordered: readonly AuditRecord[]; tool: string }): number {
  let longest = 0;
  let current = 0;
  for (const record of input.ordered) {
    current = record.tool === input.tool ? current + 1 : 0;
    longest = Math.max(longest, current);
  }
  return longest;
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 240 ? `${line.slice(0, 239)}…` : line;
}

function durationText(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1_000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
