import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApproverKeysView } from 'toolgate/protocol';
import { keyPaths } from 'toolgate';
import { defaultConsoleUrl, enrolApproverKey } from 'toolgate/admin';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { harnessCli } from '../support/cli-runner';

// `toolgate approvers invite|keys|revoke` and `keys generate --operator`, against a running harness.

let harness: ToolGateHarness;
const cli = harnessCli(() => harness);

beforeAll(async () => {
  harness = await startHarness({ address: temporalAddress() });
  cli.useHarnessFiles();
});

afterAll(async () => {
  await harness?.stop();
});

const run = (...argv: string[]) => cli.run(...argv);

describe('toolgate approvers', () => {
  it('writes an operator key pair with `keys generate --operator`', async () => {
    const { code } = await run('keys', 'generate', '--operator', 'oscar');
    expect(code).toBe(0);
    const paths = keyPaths({ directory: harness.keysDirectory, owner: { kind: 'operator', name: 'oscar' } });
    expect(existsSync(paths.privateKey) && existsSync(paths.publicKey)).toBe(true);
  });

  it('invites an approver with a one-time link whose secret is in the fragment, lists and revokes the enrolled key', async () => {
    const invited = await run('approvers', 'invite', 'bob', '--as', 'olivia', '--valid', '2h', '--json');
    expect(invited.code).toBe(0);
    const invite = JSON.parse(invited.out) as {
      inviteId: string;
      approver: string;
      link: string;
      expiresAt: string;
    };
    expect(invite.link).toMatch(
      new RegExp(`^${defaultConsoleUrl}/enrol/${invite.inviteId}#[A-Za-z0-9_-]{43}$`),
    );
    expect(Date.parse(invite.expiresAt) - Date.now()).toBeGreaterThan(110 * 60_000);

    const { outcome } = await enrolApproverKey({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      link: invite.link,
      privateKey: generateKeyPairSync('ed25519').privateKey,
      label: 'phone',
    });
    expect(outcome).toMatchObject({ accepted: true });
    if (!outcome.accepted || !outcome.keyId) throw new Error('not enrolled');

    const listed = await run('approvers', 'keys', '--approver', 'bob', '--json');
    const view = JSON.parse(listed.out) as ApproverKeysView;
    expect(view.keys).toEqual([
      expect.objectContaining({ keyId: outcome.keyId, label: 'phone', approver: 'bob' }),
    ]);
    expect((await run('approvers', 'keys')).out).toContain(`${outcome.keyId}  bob  "phone"  enrolled`);

    const revoked = await run(
      'approvers',
      'revoke',
      outcome.keyId,
      '--as',
      'olivia',
      '--reason',
      'phone lost',
    );
    expect(revoked).toMatchObject({ code: 0, out: `revoked ${outcome.keyId}\n` });
    expect((await run('approvers', 'keys', '--approver', 'bob')).out).toContain('phone lost');
    const again = await run('approvers', 'revoke', outcome.keyId, '--as', 'olivia', '--reason', 'again');
    expect(again.code).toBe(1);
    expect(again.error).toContain('KEY_REVOKED');
  });

  it('prints the link for the console given, and refuses an operator not in the policy or a validity above 7 days', async () => {
    const invited = await run(
      'approvers',
      'invite',
      'alice',
      '--as',
      'olivia',
      '--console-url',
      'https://approvals.example',
    );
    expect(invited.code).toBe(0);
    expect(invited.out).toMatch(/https:\/\/approvals\.example\/enrol\/inv-[0-9a-f-]+#[A-Za-z0-9_-]{43}/);
    const stranger = await run('approvers', 'invite', 'alice', '--as', 'mallory');
    expect(stranger.code).toBe(1);
    expect(stranger.error).toContain('OPERATOR_UNKNOWN');
    expect((await run('approvers', 'invite', 'alice', '--as', 'olivia', '--valid', '30d')).code).toBe(2);
    const keyless = await run('approvers', 'invite', 'alice', '--as', 'nobody');
    expect(keyless.code).toBe(2);
    expect(keyless.error).toContain('toolgate keys generate --operator nobody');
  });
});
