import type { z } from 'zod';
import type { CallContext } from '../calls/call-context';
import type { AnyToolContract, ToolContract, ToolInputSchema } from './define-tool';
import { declaresDomainCode, ToolDefinitionError } from './define-tool';

/**
 * What every implementation function receives: validated arguments (bound parameters filled), the
 * call id (the idempotency key), and on whose behalf the agent acts (`{}` when the harness said nothing).
 */
export interface ToolCallContext<Args> {
  args: Args;
  callId: string;
  context: CallContext;
}

/** What `execute` (and an output adapter's `request`) receives on each attempt. */
export type ExecutionContext<Args> = ToolCallContext<Args> & {
  idempotencyKey: string;
  attempt: number;
  /** For a write: the credential minted for this attempt; send it to the backend. */
  credential?: string;
};

/**
 * A backend's answer as it came, before any mapping: what an output adapter reads and what
 * `toolgate contract record` writes into a fixture. Plain JSON.
 */
export interface BackendResponse {
  /** The HTTP status (or the backend's own equivalent); null when no answer arrived (refused, reset, timed out). */
  status: number | null;
  /** The body: parsed JSON, the text when it is not JSON, null when there was none. */
  body: unknown;
  /** When no answer arrived: what happened instead (`ECONNREFUSED`, `no answer within 5000 ms`). */
  error?: string;
}

/**
 * An output adapter: the request that fetches the backend's answer as it came, and the pure mapping
 * from that answer to the tool's output, so a vendor's rename stops in `adapt` instead of reaching the
 * model, and `toolgate contract test` can run `adapt` on recorded answers with no backend at all.
 * Declared as `output`, it replaces `execute`: `defineToolImplementation` builds `execute` as
 * `adapt({ response: await request(context), args })`, so retries, idempotency and the output
 * contract (step 9) apply exactly as they do to a hand-written `execute`.
 */
export interface OutputAdapter<Args, Output> {
  /**
   * Sends the request (for a write, with the idempotency key and the credential) and resolves to the
   * answer whatever its status; an answer that never arrived resolves to `{ status: null, body: null,
   * error }` rather than throwing, so that `adapt` alone decides what every answer means.
   */
  request: (context: ExecutionContext<Args>) => Promise<BackendResponse>;
  /**
   * Pure, no I/O: maps an answer to the tool's output. It throws `toolRejection(...)` with a domain
   * code for a business refusal and `transientToolError(...)` for an outage (no answer, a 5xx), and
   * never validates a success: it maps the fields it knows, and one the backend no longer sends stays
   * out, so the output schema names it (`OUTPUT_CONTRACT_VIOLATION` at run time; the field's path in
   * `toolgate contract test`).
   */
  adapt: (input: { response: BackendResponse; args: Args }) => Output;
}

/** The four answers `toolgate contract record` captures per tool, in the order it records them. */
export const recordingScenarios = ['success', 'empty', 'business-error', 'unavailable'] as const;

/**
 * What a recorded answer stands for: `success` (a 2xx with every field), `empty` (a 2xx as empty as
 * the backend answers: nothing found, nulls, zeros), `business-error` (a 4xx refusal the adapter must
 * map to a domain code), `unavailable` (no answer or a 5xx the adapter must map to a transient error).
 */
export type RecordingScenario = (typeof recordingScenarios)[number];

/** How one scenario is recorded. */
export interface ScenarioRecording<Args> {
  /** The arguments, as the model would send them; checked against the input schema at definition time. */
  args: Args;
  /** For `business-error`: the domain code the adapter must answer with (default: any declared one). */
  code?: string;
  /**
   * Sends this scenario's request instead of `output.request`, e.g. to a closed port for `unavailable`;
   * it resolves like `output.request` does.
   */
  request?: (context: ExecutionContext<Args>) => Promise<BackendResponse>;
}

/**
 * How `toolgate contract record` reaches a tool's backend and which arguments make each scenario.
 * For a write, every scenario but `unavailable` reaches the backend and may apply a real effect there
 * (a success does, by definition): they are recorded only with `--writes`, or when `sandbox` is true.
 */
export interface ToolRecordings<Args> {
  /** Written into every fixture as `source`: the backend's base URL or a name (`orders-staging`). */
  source: string;
  /** The backend is a sandbox whose data nobody needs: a write's scenarios are recorded without `--writes`. */
  sandbox?: boolean;
  /**
   * Paths in the answer's body whose values differ on every recording (ids, timestamps): `refund_id`,
   * `items[].id`. A re-recording keeps the previous fixture's value there when its JSON type is the
   * same, so the fixtures' diff shows only what really changed.
   */
  volatile?: readonly string[];
  /** The scenarios to record; one the backend cannot produce is left out. */
  scenarios: Partial<Record<RecordingScenario, ScenarioRecording<Args>>>;
}

/**
 * What the backend recorded under a call's idempotency key: the effect it applied (with the output
 * `execute` would have returned), a business refusal (with one of the tool's domain codes), or
 * nothing. `not-seen` must mean the backend never saw the key: the call then reports nothing applied.
 */
export type RecordedOutcome<Output> =
  | { status: 'applied'; output: Output }
  | { status: 'refused'; code: string; message: string; data?: Record<string, unknown> }
  | { status: 'not-seen' };

/**
 * The I/O half of a tool, registered by workers as activities. `execute` performs the call; a tool
 * whose backend answers in its own format declares `output` (an {@link OutputAdapter}) instead, from
 * which `defineToolImplementation` builds `execute`, and may declare `recordings`, the scenarios
 * `toolgate contract record` captures so `toolgate contract test` can run the adapter on them.
 */
export interface ToolImplementation<Args = unknown, Output = unknown> {
  /** Read-only business checks; throw `toolRejection(...)` with a domain code to refuse. */
  check?: (context: ToolCallContext<Args>) => Promise<void>;
  /**
   * Performs the call. For a write, the backend must honour `idempotencyKey` (the call id) like a
   * payment gateway: the same key never applies twice.
   */
  execute: (context: ExecutionContext<Args>) => Promise<Output>;
  /** The output adapter `execute` was built from, when the tool declared one. */
  output?: OutputAdapter<Args, Output>;
  /** The scenarios `toolgate contract record` captures; only with `output`, whose adapter they test. */
  recordings?: ToolRecordings<Args>;
  /**
   * For a write: asks the backend what it recorded under the key, so a lost response is never
   * reported as not applied and a refusal whose answer was lost keeps its domain code. Throw when
   * the backend cannot say: the call then reports its effect as unknown.
   */
  findApplied?: (
    context: ToolCallContext<Args> & { idempotencyKey: string },
  ) => Promise<RecordedOutcome<Output>>;
  /** The exact effect, computed from the validated arguments, for an approver to read. */
  preview?: (context: ToolCallContext<Args>) => Promise<Record<string, unknown>>;
  /** Reads the effect back after execution; throw to report `VERIFICATION_FAILED`. */
  verify?: (context: ToolCallContext<Args> & { output: Output }) => Promise<void>;
}

/** A contract with its implementation, as a worker registers it. */
export interface ImplementedTool {
  readonly contract: AnyToolContract;
  readonly implementation: ToolImplementation;
}

/** What a tool author declares: everything in {@link ToolImplementation}, with `execute` or `output`, never both. */
export type ToolImplementationDefinition<Args, Output> = Omit<
  ToolImplementation<Args, Output>,
  'execute' | 'output'
> &
  (
    | { execute: ToolImplementation<Args, Output>['execute']; output?: undefined }
    | { output: OutputAdapter<Args, Output>; execute?: undefined }
  );

/**
 * Binds an implementation to its contract and checks it at start-up: exactly one of `execute` and
 * `output`; a write without `findApplied` is refused, because a lost response could then only be
 * reported as `unknown`; recordings need an adapter, arguments that pass the input schema, and a
 * business error's code among the tool's domain codes.
 */
export function defineToolImplementation<Input extends ToolInputSchema, Output extends z.ZodType>(
  contract: ToolContract<Input, Output>,
  implementation: ToolImplementationDefinition<z.output<Input>, z.output<Output>>,
): ImplementedTool {
  const fail = (problem: string): never => {
    throw new ToolDefinitionError(`tool "${contract.name}": ${problem}`);
  };
  const { output } = implementation;
  if (output !== undefined && implementation.execute !== undefined) {
    fail('declare execute or output ({ request, adapt }), not both: execute is built from the adapter');
  }
  let execute = implementation.execute;
  if (output !== undefined) {
    if (typeof output.request !== 'function' || typeof output.adapt !== 'function') {
      fail("output needs request(context) (the backend's answer as it came) and adapt({ response, args })");
    }
    execute = async (context) =>
      output.adapt({ response: await output.request(context), args: context.args });
  }
  if (typeof execute !== 'function')
    fail('the implementation needs an execute function, or an output adapter');
  if (contract.effect === 'write' && typeof implementation.findApplied !== 'function') {
    fail('a write needs findApplied({ idempotencyKey }) so a lost response can be resolved');
  }
  const recordings = implementation.recordings && checkRecordings({ contract, implementation, fail });
  return Object.freeze({
    contract: contract,
    implementation: {
      ...implementation,
      execute,
      ...(recordings ? { recordings } : {}),
    } as ToolImplementation,
  });
}

/** The recordings, each scenario's arguments parsed by the input schema, once every rule holds. */
function checkRecordings<Args>(input: {
  contract: AnyToolContract;
  implementation: { output?: unknown; recordings?: ToolRecordings<Args> };
  fail: (problem: string) => never;
}): ToolRecordings<Args> {
  const { contract, fail } = input;
  const recordings = input.implementation.recordings!;
  if (input.implementation.output === undefined) {
    fail('recordings need an output adapter (output: { request, adapt }): the recorder sends its request');
  }
  if (typeof recordings.source !== 'string' || recordings.source.trim() === '') {
    fail('recordings.source must name the backend (its base URL, or a name such as "orders-staging")');
  }
  const scenarios: Partial<Record<RecordingScenario, ScenarioRecording<Args>>> = {};
  for (const [name, scenario] of Object.entries(recordings.scenarios ?? {})) {
    if (!(recordingScenarios as readonly string[]).includes(name)) {
      fail(`recordings.scenarios.${name}: not a scenario; use ${recordingScenarios.join(', ')}`);
    }
    if (scenario === undefined) continue;
    const parsed = contract.input.safeParse(scenario.args);
    if (!parsed.success) {
      const problems = parsed.error.issues
        .map((issue) => `${issue.path.length ? issue.path.join('.') : '(arguments)'}: ${issue.message}`)
        .join('; ');
      fail(`recordings.scenarios.${name}.args do not pass the input schema (${problems})`);
    }
    if (scenario.code !== undefined) {
      if (name !== 'business-error')
        fail(`recordings.scenarios.${name}.code: only a business error has a code`);
      if (!declaresDomainCode(contract, scenario.code)) {
        fail(`recordings.scenarios.${name}.code "${scenario.code}" is not one of the tool's domain codes`);
      }
    }
    if (scenario.request !== undefined && typeof scenario.request !== 'function') {
      fail(`recordings.scenarios.${name}.request must be a function like output.request`);
    }
    scenarios[name as RecordingScenario] = { ...scenario, args: parsed.data as Args };
  }
  if (Object.keys(scenarios).length === 0)
    fail(`recordings declare no scenario; use ${recordingScenarios.join(', ')}`);
  return Object.freeze({ ...recordings, scenarios: Object.freeze(scenarios) });
}
