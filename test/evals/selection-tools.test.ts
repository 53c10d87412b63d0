import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import {
  callerContracts,
  checkPolicy,
  createToolRegistry,
  openAIChatTools,
  selectionToolDefinitions,
  ToolGateClient,
} from 'toolgate';
import { describe, expect, it } from 'vitest';
import { ordersContracts } from '../../examples/orders/orders-contracts';

// What the suite offers the model is what a live agent is offered: the caller's tools in toolgate's
// own OpenAI format, read from the policy's allowlist without keys or Temporal.

const policyPath = join(__dirname, '..', '..', 'examples', 'orders', 'policy.json');

/** The orders policy with inline public keys, so a client can be built without key files. */
function inlinePolicy() {
  const value = JSON.parse(readFileSync(policyPath, 'utf8'), (key, entry: unknown) =>
    key === 'publicKey' ? `ed25519:${'ab'.repeat(32)}` : entry,
  ) as unknown;
  return checkPolicy({ source: policyPath, value, registry: createToolRegistry({ tools: ordersContracts }) });
}

describe("the selection suite's tools", () => {
  it.each(['support-bot', 'readonly-bot'])('are the definitions openAIChatTools sends for %s', (caller) => {
    const client = new ToolGateClient({
      // toolsFor reads the policy only; no call reaches Temporal here.
      client: {} as Client,
      tools: ordersContracts,
      policy: inlinePolicy(),
      callerKey: () => undefined,
    });
    const contracts = callerContracts({ tools: ordersContracts, policyPath, caller });
    expect(selectionToolDefinitions({ contracts })).toEqual(openAIChatTools({ client, caller }));
  });

  it('offers readonly-bot only get_order, from the allowlist, without reading a key file', () => {
    const contracts = callerContracts({ tools: ordersContracts, policyPath, caller: 'readonly-bot' });
    expect(contracts.map((contract) => contract.name)).toEqual(['get_order']);
  });

  it('names the callers when asked for one the policy does not have', () => {
    expect(() => callerContracts({ tools: ordersContracts, policyPath, caller: 'nobody' })).toThrow(
      `caller "nobody" is not in the policy ${policyPath}; use one of: support-bot, readonly-bot`,
    );
  });
});
