// The case file a mining run writes for a person to complete, in the selection suite's case format
// (`toolgate eval --cases`). Nothing in it is a label: the expected tool is a TODO marker that the
// suite refuses as "not offered" until someone writes a tool name (or null), so an unlabelled case can
// never pass for a labelled one; the observed call is in the note, as evidence, never as the answer.
import type { MinedCandidate } from './mined-candidates';
import type { MiningReport } from './mine-cases';

/** What `expectedTool` holds until a person labels the case. */
export const unlabelledToolMarker = 'TODO: a tool name, or null when no tool should be called';
/** What `userMessage` holds when no user message was attached to the mined call. */
export const missingUserMessageMarker = 'TODO: the user message (none was attached to the call)';

/** One case of the skeleton, in the selection suite's case format. */
export interface SkeletonCase {
  id: string;
  userMessage: string;
  expectedTool: string | null;
  /** Empty: the person adds the arguments that must be right. */
  criticalArguments: Record<string, unknown>;
  tags: string[];
  /** Why it was mined and what was observed, for the person labelling it. */
  note: string;
}

/** A case file skeleton: the selection suite's format, with every case still to label. */
export interface CaseFileSkeleton {
  description: string;
  /** The caller whose tools the cases are for, when every candidate came from one. */
  caller?: string;
  cases: SkeletonCase[];
}

const shownArgumentsLength = 500;

/**
 * The case file skeleton of a mining run's candidates, in their order. Pure; labels nothing (see
 * {@link unlabelledToolMarker}).
 */
export function caseFileSkeleton(input: { report: MiningReport }): CaseFileSkeleton {
  const { report } = input;
  const callers = new Set(report.candidates.map((candidate) => candidate.caller));
  const [onlyCaller] = callers;
  return {
    description:
      `Mined by toolgate mine from ${report.since} to ${report.until}: ${report.candidates.length} candidate(s), ` +
      'most valuable first. Label each: write the user message where it is a TODO, set expectedTool to the ' +
      'tool the model should have called first (or null when it should have answered without one), add ' +
      'the criticalArguments that must be right, and delete the cases not worth keeping.',
    ...(callers.size === 1 && onlyCaller !== undefined ? { caller: onlyCaller } : {}),
    cases: report.candidates.map(skeletonCase),
  };
}

function skeletonCase(candidate: MinedCandidate): SkeletonCase {
  const shown =
    candidate.rawArguments.length > shownArgumentsLength
      ? `${candidate.rawArguments.slice(0, shownArgumentsLength)}… (${candidate.rawArguments.length} characters)`
      : candidate.rawArguments;
  const seen =
    candidate.occurrences > 1
      ? ` Seen ${candidate.occurrences} times, in ${candidate.sessions.length} session(s).`
      : '';
  return {
    id: `mined-${candidate.id}`,
    userMessage: candidate.userMessage ?? missingUserMessageMarker,
    expectedTool: unlabelledToolMarker,
    criticalArguments: {},
    tags: ['mined', candidate.kind],
    note:
      `Mined (${candidate.kind}): ${candidate.why.join('; ').replace(/\.$/, '')}. ` +
      `Observed: ${candidate.caller} called ${candidate.tool} with ${shown || '(no arguments)'}, answered ${candidate.code} ` +
      `(call ${candidate.callIds[0] ?? '?'}, session ${candidate.sessions[0] ?? '?'}).${seen}`,
  };
}
