// The pure part of a call, in this process, with no Temporal around it: what toolgate's own
// decision costs before any round trip.
import type { LoadedPolicy, ToolRegistry } from 'toolgate';
import { capProposal, deriveCallId, parseArguments } from 'toolgate/protocol';
import { evaluatePolicy, validateArguments } from 'toolgate/testing';
import { benchCallers } from './bench-policy';

/** A pure-pipeline case: one proposal, and whether it should pass validation. */
export interface PureCase {
  id: string;
  label: string;
  caller: string;
  tool: string;
  arguments: string;
  valid: boolean;
}

/** The cases timed: the governed read's proposal, an allowed refund, and the rejected refund. */
export const pureCases: readonly PureCase[] = [
  {
    id: 'pure-read',
    label: 'get_order (read)',
    caller: benchCallers.reader,
    tool: 'get_order',
    arguments: '{"order_id":"ORD-1001"}',
    valid: true,
  },
  {
    id: 'pure-refund',
    label: 'refund_order (write)',
    caller: benchCallers.refunder,
    tool: 'refund_order',
    arguments: '{"order_id":"ORD-1001","amount_cents":2590,"currency":"BRL","reason":"damaged"}',
    valid: true,
  },
  {
    id: 'pure-reject',
    label: 'refund_order, INVALID_ARGUMENTS',
    caller: benchCallers.refunder,
    tool: 'refund_order',
    arguments: '{"order_id":"ORD-1001","amount_cents":25.9,"currency":"BRL","reason":"damaged"}',
    valid: false,
  },
];

/**
 * Times `iterations` runs of capProposal + parseArguments + validateArguments + deriveCallId +
 * evaluatePolicy (the last only for valid arguments, as in the workflow), each run on its own
 * session id; returns the microseconds of each run.
 */
export function timePurePipeline(input: {
  pureCase: PureCase;
  registry: ToolRegistry;
  policy: LoadedPolicy;
  iterations: number;
  sessionPrefix: string;
}): number[] {
  const { pureCase, registry } = input;
  const callerPolicy = input.policy.callerPolicy(pureCase.caller);
  if (!callerPolicy) throw new Error(`the bench policy has no caller ${pureCase.caller}`);
  const timings: number[] = [];
  let sink = 0;
  for (let index = 0; index < input.iterations; index++) {
    const session = `${input.sessionPrefix}-${index}`;
    const started = process.hrtime.bigint();
    const proposal = capProposal({
      session,
      caller: pureCase.caller,
      tool: pureCase.tool,
      arguments: pureCase.arguments,
    });
    const contract = registry.get(proposal.tool);
    if (!contract) throw new Error(`no tool ${proposal.tool}`);
    const parsed = parseArguments(proposal.rawArguments);
    if (!parsed.ok) throw new Error(parsed.message);
    const validation = validateArguments({ contract, value: parsed.value });
    const callId = deriveCallId({ proposal, idempotencyFields: contract.idempotencyFields });
    if (validation.ok) {
      const verdict = evaluatePolicy({
        contract,
        args: validation.args,
        caller: pureCase.caller,
        callerPolicy,
      });
      sink += verdict.ok ? 1 : 0;
    } else {
      sink += validation.message.length;
    }
    sink += callId.length;
    timings.push(Number(process.hrtime.bigint() - started) / 1000);
    if (validation.ok !== pureCase.valid) {
      throw new Error(`${pureCase.id}: validation ${validation.ok ? 'passed' : 'failed'} unexpectedly`);
    }
  }
  // Keeps the results observable, so that no work above can be optimised away.
  if (sink === -1) process.stderr.write('');
  return timings;
}
