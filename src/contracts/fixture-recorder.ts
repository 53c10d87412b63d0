// `toolgate contract record`: asks the running backend for each tool's scenarios through the tool's own
// request (or the scenario's) and keeps the answer as it came, as a fixture. What it sends is what a
// call would send, so a write's success applies a real effect: the plan skips a write's scenarios
// unless the run allows writes or the tool's recordings name a sandbox. No file I/O here.
import { randomUUID } from 'node:crypto';
import type {
  BackendResponse,
  ImplementedTool,
  RecordingScenario,
} from '../tools/define-tool-implementation';
import { recordingScenarios } from '../tools/define-tool-implementation';
import type { ContractFixture, ShapeChange } from './contract-fixtures';
import { answerFits, contractFixtureVersion, keepVolatileValues, shapeChanges } from './contract-fixtures';

/** One scenario of one tool to record, or why it is skipped. */
export interface RecordingStep {
  tool: ImplementedTool;
  scenario: RecordingScenario;
  /** Why it is not recorded this run; absent when it is. */
  skipped?: string;
}

/**
 * The scenarios to record, reads before writes (so a write's effect never changes what a read
 * records), each tool's in the order success, empty, business error, unavailable. For a write, every
 * scenario but `unavailable` reaches the backend and may change it: skipped unless `writes` or the
 * tool's recordings say `sandbox`. `tools` and `scenarios` narrow the run when given.
 */
export function recordingPlan(input: {
  tools: readonly ImplementedTool[];
  writes: boolean;
  only?: { tools?: readonly string[]; scenarios?: readonly RecordingScenario[] };
}): RecordingStep[] {
  const chosen = input.tools.filter(
    (tool) =>
      tool.implementation.recordings !== undefined &&
      (input.only?.tools === undefined || input.only.tools.includes(tool.contract.name)),
  );
  const ordered = [
    ...chosen.filter((tool) => tool.contract.effect === 'read'),
    ...chosen.filter((tool) => tool.contract.effect === 'write'),
  ];
  return ordered.flatMap((tool) => {
    const recordings = tool.implementation.recordings!;
    return recordingScenarios
      .filter((scenario) => recordings.scenarios[scenario] !== undefined)
      .filter((scenario) => input.only?.scenarios === undefined || input.only.scenarios.includes(scenario))
      .map((scenario): RecordingStep => {
        const guarded = tool.contract.effect === 'write' && scenario !== 'unavailable';
        if (!guarded || input.writes || recordings.sandbox === true) return { tool, scenario };
        return {
          tool,
          scenario,
          skipped:
            `a write: recording its ${scenario} sends a real request that may change ${recordings.source}; ` +
            'pass --writes to record it against a backend whose data does not matter (or declare recordings.sandbox)',
        };
      });
  });
}

/** A recorded scenario (with how its shape differs from the previous recording), or why it was not. */
export type RecordingResult =
  | {
      ok: true;
      fixture: ContractFixture;
      changes: ShapeChange[];
      previous: boolean;
      /** True when the scenario's own request answered (e.g. a closed port), not the tool's. */
      ownRequest: boolean;
    }
  | { ok: false; message: string };

/** How long one scenario's request may take before the recording gives up on it. */
export const defaultRecordingTimeoutMs = 30_000;

/**
 * Sends one scenario's request as a call would (a fresh idempotency key, attempt 1, no credential)
 * and returns the answer as a fixture. The answer must fit the scenario by its status (a 2xx for a
 * success, ...), else nothing is recorded and the message says what came instead. Volatile values
 * are kept from `previous`. Never throws.
 */
export async function recordScenario(input: {
  tool: ImplementedTool;
  scenario: RecordingScenario;
  recordedAt: string;
  /** Overrides the recordings' `source` in the fixture. */
  source?: string;
  previous?: ContractFixture;
  timeoutMs?: number;
}): Promise<RecordingResult> {
  const { tool, scenario, previous } = input;
  const recordings = tool.implementation.recordings;
  const declared = recordings?.scenarios[scenario];
  const request = declared?.request ?? tool.implementation.output?.request;
  if (!recordings || !declared || !request) {
    return { ok: false, message: `declares no ${scenario} recording (recordings.scenarios.${scenario})` };
  }
  const key = `contract-record-${randomUUID()}`;
  let response: BackendResponse;
  try {
    response = await withTimeout(
      request({ args: declared.args, callId: key, idempotencyKey: key, attempt: 1, context: {} }),
      input.timeoutMs ?? defaultRecordingTimeoutMs,
    );
  } catch (error) {
    return {
      ok: false,
      message:
        `the request threw (${error instanceof Error ? error.message : String(error)}); a request resolves ` +
        'to the answer whatever its status, and to { status: null, body: null, error } when none arrives',
    };
  }
  const checked = plainResponse(response);
  if (!checked.ok) return checked;
  const fits = answerFits({ scenario, response: checked.response });
  if (!fits.ok) {
    // toolgate's credentials are minted for a call; a recording has none to send.
    const refusedCredential = checked.response.status === 401 || checked.response.status === 403;
    const hint = refusedCredential
      ? '; the backend wants a credential, and a recording sends none: record against one that does not check them'
      : '';
    return { ok: false, message: `${fits.message}${hint}; the fixture is left as it was` };
  }
  const body =
    previous && recordings.volatile?.length
      ? keepVolatileValues({
          previous: previous.response.body,
          next: checked.response.body,
          paths: recordings.volatile,
        })
      : checked.response.body;
  const fixture: ContractFixture = {
    version: contractFixtureVersion,
    tool: tool.contract.name,
    scenario,
    recordedAt: input.recordedAt,
    source: input.source ?? recordings.source,
    request: { args: JSON.parse(JSON.stringify(declared.args)) as Record<string, unknown> },
    response: { ...checked.response, body },
  };
  return {
    ok: true,
    fixture,
    changes: previous ? shapeChanges(previous.response, fixture.response) : [],
    previous: previous !== undefined,
    ownRequest: declared.request !== undefined,
  };
}

/** The answer as plain JSON, or why it cannot be one. */
function plainResponse(
  response: unknown,
): { ok: true; response: BackendResponse } | { ok: false; message: string } {
  const candidate = response as Partial<BackendResponse> | null;
  const status = candidate?.status;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    !(status === null || (Number.isInteger(status) && status! >= 100 && status! <= 599))
  ) {
    return {
      ok: false,
      message: 'the request resolved to something other than { status (100-599, or null), body, error? }',
    };
  }
  let body: unknown;
  try {
    body = JSON.parse(JSON.stringify(candidate.body ?? null)) as unknown;
  } catch (error) {
    return { ok: false, message: `the answer's body is not JSON (${(error as Error).message})` };
  }
  return {
    ok: true,
    response: {
      status: status as number | null,
      body,
      ...(typeof candidate.error === 'string' ? { error: candidate.error } : {}),
    },
  };
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
