import { generateKeyPairSync } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signEnrolment } from 'toolgate/admin';
import type { ApprovalsConsole } from 'toolgate/console';
import { startApprovalsConsole } from 'toolgate/console';
import { harnessPolicy } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// The routes that need no session (the enrolment page, posting an enrolment, answering a sign-in
// challenge) read one shared view of the registry, refuse locally what the registry would refuse,
// and are rate-limited per remote address.

let harness: ToolGateHarness;
let approvals: ApprovalsConsole;
const counted = { queries: 0, updates: 0 };
useHarness((started) => (harness = started));

/** The harness's Temporal client, counting the workflow queries and update-with-starts the console sends. */
function countingClient(client: Client): Client {
  const workflow = new Proxy(client.workflow, {
    get(target, property, receiver) {
      if (property === 'getHandle') {
        return (...args: Parameters<Client['workflow']['getHandle']>) =>
          new Proxy(target.getHandle(...args), {
            get(inner, name, innerReceiver) {
              if (name === 'query') counted.queries++;
              return Reflect.get(inner, name, innerReceiver) as unknown;
            },
          });
      }
      if (property === 'executeUpdateWithStart') counted.updates++;
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return new Proxy(client, {
    get(target, property, receiver) {
      return property === 'workflow' ? workflow : (Reflect.get(target, property, receiver) as unknown);
    },
  });
}

beforeAll(async () => {
  approvals = await startApprovalsConsole({
    client: countingClient(harness.temporal),
    taskQueue: harness.taskQueue,
    policy: harnessPolicy(harness),
    audit: harness.audit,
    port: 0,
    unauthenticatedRateLimit: { burst: 1000, perSecond: 1000 },
  });
});
afterAll(async () => {
  await approvals?.stop();
});

function forgedEnrolment(inviteId: string, seed: number) {
  return signEnrolment({
    inviteId,
    approver: 'alice',
    invitePrivateKey: Buffer.alloc(32, seed).toString('base64url'),
    privateKey: generateKeyPairSync('ed25519').privateKey,
    label: 'x'.repeat(200),
  });
}

describe('the console’s routes without a session', () => {
  it('answers two hundred enrolment pages for made-up invites from a shared view: ten registry queries a second at most', async () => {
    const before = counted.queries;
    const started = Date.now();
    const statuses = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        fetch(`${approvals.url}/enrol/inv-nobody-${index}`).then(async (response) => {
          await response.text();
          return response.status;
        }),
      ),
    );
    expect(new Set(statuses)).toEqual(new Set([404]));
    // A view misses a made-up invite, so it is looked for in one at most 100 ms old: shared by every
    // request meanwhile, whatever their number.
    expect(counted.queries - before).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 100) + 2);
    expect(counted.queries - before).toBeLessThan(50);
  });

  it('refuses enrolments for unknown invites itself: no registry update, no audit record', async () => {
    const auditedBefore = (await harness.audit.registryEvents()).length;
    const updatesBefore = counted.updates;
    const answers = await Promise.all(
      Array.from({ length: 60 }, async (_, index) => {
        const inviteId = `inv-flood-${index}`;
        const response = await fetch(`${approvals.url}/enrol/${inviteId}`, {
          method: 'POST',
          headers: { origin: approvals.url, 'content-type': 'application/json' },
          body: JSON.stringify({ enrolment: forgedEnrolment(inviteId, index + 1) }),
        });
        return `${response.status} ${((await response.json()) as { code?: string }).code}`;
      }),
    );
    expect(new Set(answers)).toEqual(new Set(['409 INVITE_UNKNOWN']));
    expect(counted.updates - updatesBefore).toBe(0);
    expect((await harness.audit.registryEvents()).length - auditedBefore).toBe(0);
  });

  it('checks a sign-in answer’s signature before asking the registry about its key', async () => {
    const challenges = await fetch(`${approvals.url}/login/challenge`, {
      method: 'POST',
      headers: { origin: approvals.url, 'content-type': 'application/json' },
      body: JSON.stringify({ approver: 'alice', keyId: '0123456789abcdef' }),
    });
    const { challenge } = (await challenges.json()) as { challenge: unknown };
    // Load the shared view once, then count what forged answers cost.
    await fetch(`${approvals.url}/enrol/inv-warm`).then((response) => response.text());
    const before = counted.queries;
    const answer = await fetch(`${approvals.url}/login`, {
      method: 'POST',
      headers: { origin: approvals.url, 'content-type': 'application/json' },
      body: JSON.stringify({ challenge, signature: 'AAAA' }),
    });
    expect(answer.status).toBe(401);
    expect(((await answer.json()) as { code: string }).code).toBe('KEY_UNKNOWN');
    expect(counted.queries - before).toBeLessThanOrEqual(1);
  });

  it('refuses one address beyond its burst with 429 RATE_LIMITED and a Retry-After', async () => {
    const limited = await startApprovalsConsole({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      policy: harnessPolicy(harness),
      port: 0,
      unauthenticatedRateLimit: { burst: 5, perSecond: 1 },
    });
    try {
      const answers = [];
      for (let index = 0; index < 8; index++) {
        const response = await fetch(`${limited.url}/enrol/inv-any-${index}`);
        answers.push({ status: response.status, retryAfter: response.headers.get('retry-after') });
        await response.text();
      }
      expect(answers.slice(0, 5).map((answer) => answer.status)).toEqual([404, 404, 404, 404, 404]);
      expect(answers[5]).toEqual({ status: 429, retryAfter: '1' });
      const refused = await fetch(`${limited.url}/enrol/inv-any`);
      expect(await refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
      // The sign-in page and the assets are not limited.
      expect((await fetch(`${limited.url}/login`)).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });
});
