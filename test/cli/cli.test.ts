import { acceptsConnections } from '../support/accepts-connections';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import { runCli } from 'toolgate';
import { searchAttributes } from 'toolgate/protocol';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { harnessCli, runCliCapturing } from '../support/cli-runner';

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

/** `toolgate call` for one caller and tool; `extra` adds options such as `--session` or `--json`. */
function call(caller: string, tool: string, args: string, ...extra: string[]) {
  return run('call', '--caller', caller, '--tool', tool, '--args', args, ...extra);
}

/** Runs the CLI with exactly `argv`, nothing added. */
const runAlone = (...argv: string[]) => runCliCapturing(argv);

/** Polls `read` until it returns a value (or throws), for at most `timeoutMs`. */
async function waitFor<T>(read: () => T | undefined, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${timeoutMs} ms`);
    await delay(100);
  }
}

describe('toolgate CLI', () => {
  it('runs a governed read with `call --json` and exits 0', async () => {
    const { code, out } = await call('readonly-bot', 'get_order', '{"order_id":"ORD-1002"}', '--json');
    expect(code).toBe(0);
    const result = JSON.parse(out) as ToolResult;
    expect(result).toMatchObject({ ok: true, code: 'OK', data: { order_id: 'ORD-1002', currency: 'USD' } });
  });

  it('runs a refund under a policy that lets it, then shows it with `status`', async () => {
    const refund = await call(
      'test-refunder',
      'refund_order',
      '{"order_id":"ORD-1002","amount_cents":500,"currency":"USD","reason":"damaged"}',
      '--session',
      `cli-${Date.now()}`,
      '--json',
    );
    expect(refund.code).toBe(0);
    const result = JSON.parse(refund.out) as ToolResult;
    expect(result).toMatchObject({ ok: true, effect: 'applied' });
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1002' })).toBe(1);
    const status = await run('status', result.callId, '--wait');
    expect(status.code).toBe(0);
    expect(status.out).toContain('OK  refund_order');
    expect(status.out).toContain('effect:  applied');
  });

  it('cancels a waiting call with `cancel`, as its caller or as an operator, and says CANCEL_TOO_LATE after', async () => {
    const refundsBefore = await harness.orders.api.refundCount();
    const waiting = async (amount: number) => {
      const proposed = await call(
        'support-bot',
        'refund_order',
        harness.refundArguments({ amount_cents: amount }),
        '--session',
        `cancel-${amount}`,
        '--json',
      );
      const result = JSON.parse(proposed.out) as ToolResult;
      expect(result.code).toBe('APPROVAL_PENDING');
      return result.callId;
    };
    const asCaller = await waiting(1_111);
    const cancelled = await run('cancel', asCaller, '--caller', 'support-bot', '--reason', 'withdrawn');
    expect([cancelled.code, cancelled.out]).toEqual([0, `cancelled ${asCaller} (caller support-bot)\n`]);
    const again = await run('cancel', asCaller, '--caller', 'support-bot', '--reason', 'twice');
    expect([again.code, again.error]).toEqual([1, expect.stringContaining('CANCEL_TOO_LATE: ')]);
    const asOperator = await waiting(1_112);
    const byOlivia = await run('cancel', asOperator, '--as', 'olivia', '--reason', 'stop', '--json');
    expect(byOlivia.code).toBe(0);
    expect(JSON.parse(byOlivia.out)).toEqual({
      cancelled: true,
      callId: asOperator,
      cancelledBy: 'operator olivia',
    });
    const neither = await run('cancel', asOperator, '--reason', 'who?');
    expect([neither.code, neither.error]).toEqual([2, expect.stringContaining('exactly one of --caller')]);
    expect(await harness.orders.api.refundCount()).toBe(refundsBefore);
  });

  it('turns a tool off and on with `disable` and `enable` as an operator, and lists it with `switches`', async () => {
    const off = await run(
      'disable',
      '--tool',
      'get_order',
      '--caller',
      'readonly-bot',
      '--reason',
      'cli test',
      '--as',
      'olivia',
    );
    expect([off.code, off.out]).toEqual([
      0,
      'get_order for readonly-bot is off; 0 waiting call(s) told to close\n',
    ]);
    const listed = await run('switches', '--json');
    expect(JSON.parse(listed.out)).toMatchObject({
      disabled: [{ tool: 'get_order', caller: 'readonly-bot', operator: 'olivia', reason: 'cli test' }],
    });
    const refused = await call(
      'readonly-bot',
      'get_order',
      '{"order_id":"ORD-1001"}',
      '--session',
      `switch-${Date.now()}`,
      '--json',
    );
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.out)).toMatchObject({ code: 'TOOL_DISABLED', data: { disabledBy: 'olivia' } });
    // Another caller's reads run on.
    const other = await call(
      'support-bot',
      'get_order',
      '{"order_id":"ORD-1001"}',
      '--session',
      `switch-${Date.now()}`,
    );
    expect([other.code, other.out]).toEqual([0, expect.stringContaining('OK  get_order')]);
    const forged = await run('disable', '--tool', 'get_order', '--reason', 'x', '--as', 'mallory');
    expect([forged.code, forged.error]).toEqual([1, expect.stringContaining('OPERATOR_UNKNOWN')]);
    const on = await run(
      'enable',
      '--tool',
      'get_order',
      '--caller',
      'readonly-bot',
      '--reason',
      'done',
      '--as',
      'olivia',
    );
    expect([on.code, on.out]).toEqual([0, 'get_order for readonly-bot is on\n']);
    expect((await run('switches')).out).toBe('every tool is on\n');
    const again = await call(
      'readonly-bot',
      'get_order',
      '{"order_id":"ORD-1001"}',
      '--session',
      `switch-on-${Date.now()}`,
    );
    expect(again.code).toBe(0);
  });

  it('exits 1 with the code for a rejected call', async () => {
    const { code, out } = await call('readonly-bot', 'refund_order', '{}');
    expect(code).toBe(1);
    expect(out).toContain('TOOL_NOT_ALLOWED  refund_order');
  });

  it('answers arguments nested 3,000 levels deep with INVALID_JSON and exits 1, without a stack overflow', async () => {
    const deep = `{"order_id":${'['.repeat(3_000)}1${']'.repeat(3_000)}}`;
    const { code, out, error } = await call('readonly-bot', 'get_order', deep, '--json');
    expect(error).toBe('');
    expect(code).toBe(1);
    const result = JSON.parse(out) as ToolResult;
    expect(result).toMatchObject({ ok: false, code: 'INVALID_JSON', effect: 'none' });
    expect(result.message).toContain('nested 3001 levels deep; the limit is 64');
  });

  it('exits 2 with the usage for a call missing its arguments, and 3 when Temporal is unreachable', async () => {
    const usage = await run('call', '--tool', 'get_order');
    expect(usage.code).toBe(2);
    expect(usage.error).toContain("error: required option '--caller <name>' not specified");
    let error = '';
    const unreachable = await runCli(
      [
        'call',
        '--caller',
        'readonly-bot',
        '--tool',
        'get_order',
        '--args',
        '{}',
        '--address',
        '127.0.0.1:1',
        '--config',
        join(__dirname, '../support/test-toolgate.config.ts'),
      ],
      { out: () => undefined, error: (text) => (error += text) },
    );
    expect(unreachable).toBe(3);
    expect(error).toContain('cannot reach Temporal at 127.0.0.1:1');
  });

  it('prints the definitions a caller may see, from the schema that validates', async () => {
    const { code, out } = await run('definitions', '--caller', 'readonly-bot');
    expect(code).toBe(0);
    expect((JSON.parse(out) as { name: string }[]).map((definition) => definition.name)).toEqual([
      'get_order',
    ]);
  });

  it('lists a pending approval, approves it as alice with her key, and the refund runs once', async () => {
    const pending = await call(
      'support-bot',
      'refund_order',
      '{"order_id":"ORD-1003","amount_cents":700,"currency":"BRL","reason":"damaged"}',
      '--session',
      `cli-approve-${Date.now()}`,
      '--json',
    );
    expect(pending.code).toBe(1);
    const { callId } = JSON.parse(pending.out) as ToolResult;
    const list = await run('approvals', 'list', '--json');
    const listed = (JSON.parse(list.out) as { callId: string; riskLevel: string; timeLeftMs: number }[]).find(
      (call) => call.callId === callId,
    );
    expect(listed).toMatchObject({ riskLevel: 'irreversible' });
    expect(listed!.timeLeftMs).toBeGreaterThan(0);
    const show = await run('approvals', 'show', callId, '--json');
    expect((JSON.parse(show.out) as { approvalRule: string }).approvalRule).toContain('above support-bot');
    // For a person: the round first, with the tool contract its decisions must name.
    const shown = await run('approvals', 'show', callId);
    expect(shown.out).toMatch(
      /^round 1: pending, 0\/1 approvals, expires .+\n {2}contract: [0-9a-f]{12} \([0-9a-f]{64}\)\n/,
    );
    const approve = await run('approvals', 'approve', callId, '--as', 'alice', '--reason', 'receipt checked');
    expect(approve.code).toBe(0);
    expect(approve.out).toContain('accepted: approve by alice');
    const status = await run('status', callId, '--wait', '--json');
    expect(JSON.parse(status.out)).toMatchObject({ ok: true, effect: 'applied' });
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1003' })).toBe(1);
    const again = await run('approvals', 'deny', callId, '--as', 'alice');
    expect(again.code).toBe(1);
    expect(again.out).toContain('ALREADY_DECIDED');
  });

  it('edits a waiting refund with --set and approves it, and the edited refund runs once', async () => {
    const pending = await call(
      'support-bot',
      'refund_order',
      '{"order_id":"ORD-1003","amount_cents":900,"currency":"BRL","reason":"damaged"}',
      '--session',
      `cli-edit-${Date.now()}`,
      '--json',
    );
    const { callId } = JSON.parse(pending.out) as ToolResult;
    const before = (await harness.orders.api.listRefunds({ orderId: 'ORD-1003' })).length;
    // A value that breaks the schema is refused with its code, and nothing changes.
    const bad = await run(
      'approvals',
      'edit',
      callId,
      '--as',
      'alice',
      '--reason',
      'typo',
      '--set',
      'amount_cents="800"',
    );
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('INVALID_ARGUMENTS');
    const edited = await run(
      'approvals',
      'edit',
      callId,
      '--as',
      'alice',
      '--reason',
      'the customer asked for 800',
      '--set',
      'amount_cents=800',
      '--approve',
    );
    expect(edited.code).toBe(0);
    expect(edited.out).toContain('accepted: edited and approved by alice; the call is approved (1/1)');
    const status = await run('status', callId, '--wait', '--json');
    expect(JSON.parse(status.out)).toMatchObject({
      ok: true,
      effect: 'applied',
      edited: { by: ['alice'], changes: [{ field: 'amount_cents', proposed: 900, edited: 800 }] },
    });
    const refunds = await harness.orders.api.listRefunds({ orderId: 'ORD-1003' });
    expect(refunds.slice(before).map((refund) => refund.amountCents)).toEqual([800]);
  });

  it('lifts a remembered denial as an approver; the same refund is asked again', async () => {
    const session = `cli-lift-${Date.now()}`;
    const refund = '{"order_id":"ORD-1003","amount_cents":650,"currency":"BRL","reason":"damaged"}';
    const propose = () => call('support-bot', 'refund_order', refund, '--session', session, '--json');
    const { callId } = JSON.parse((await propose()).out) as ToolResult;
    expect((await run('approvals', 'deny', callId, '--as', 'alice', '--reason', 'no receipt')).code).toBe(0);
    await run('status', callId, '--wait', '--json');
    expect(JSON.parse((await propose()).out)).toMatchObject({ code: 'APPROVAL_DENIED', replayed: true });
    const usage = await run('approvals', 'lift', callId, '--reason', 'receipt arrived');
    expect(usage.code).toBe(2);
    const lifted = await run('approvals', 'lift', callId, '--as', 'bob', '--reason', 'receipt arrived');
    expect(lifted.code).toBe(0);
    expect(lifted.out).toContain(`lifted: the denial of ${callId}, by bob`);
    const asked = JSON.parse((await propose()).out) as ToolResult;
    expect(asked).toMatchObject({ code: 'APPROVAL_PENDING', callId });
    expect(asked.replayed).toBeUndefined();
  });

  it('lists, shows, resets and ends a session; a reset is an operator’s, signed', async () => {
    const session = `cli-session-${Date.now()}`;
    await call('readonly-bot', 'get_order', '{"order_id":"ORD-1001"}', '--session', session);
    const show = await run('sessions', 'show', session, '--json');
    expect(JSON.parse(show.out)).toMatchObject({ caller: 'readonly-bot', steps: 1, closed: false });
    const list = await run('sessions', 'list', '--json');
    expect(list.code).toBe(0);
    expect(JSON.parse(list.out)).toContainEqual(
      expect.objectContaining({ session, caller: 'readonly-bot', steps: 1 }),
    );
    // Without an operator, no reset; mallory is not the policy's; olivia's is kept with the session.
    expect((await run('sessions', 'reset', session)).code).toBe(2);
    const forged = await run('sessions', 'reset', session, '--as', 'mallory', '--reason', 'x');
    expect(forged.code).toBe(1);
    expect(forged.error).toContain('NOT_AN_OPERATOR');
    const reset = await run(
      'sessions',
      'reset',
      session,
      '--as',
      'olivia',
      '--reason',
      'schema fixed',
      '--json',
    );
    expect(reset.code).toBe(0);
    expect(JSON.parse(reset.out)).toMatchObject({ resets: [{ operator: 'olivia', reason: 'schema fixed' }] });
    expect((await run('sessions', 'end', session)).code).toBe(0);
    const after = await call('readonly-bot', 'get_order', '{"order_id":"ORD-1001"}', '--session', session);
    expect(after.out).toContain('SESSION_CLOSED');
  });
});

describe('toolgate CLI usage', () => {
  it('prints the overall help with its commands and exit codes for --help, and exits 0', async () => {
    const { code, out } = await runAlone('--help');
    expect(code).toBe(0);
    expect(out).toContain('Usage: toolgate [options] [command]');
    for (const command of [
      'call',
      'status',
      'definitions',
      'worker',
      'dev',
      'sessions',
      'keys',
      'approvals',
    ]) {
      expect(out).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    }
    expect(out).toContain('2  bad usage or config');
    expect(out).toContain('3  Temporal unreachable');
  });

  it("prints the help of `call` with call's own options and the global ones, and exits 0", async () => {
    const { code, out, error } = await run('call', '--help');
    expect(code).toBe(0);
    expect(error).toBe('');
    expect(out).toContain('Usage: toolgate call [options]');
    for (const option of [
      '--caller <name>',
      '--tool <name>',
      '--args <json>',
      '--session <id>',
      '--intent <id>',
    ]) {
      expect(out).toContain(option);
    }
    expect(out).toContain('Global Options:');
    expect(out).toContain('--task-queue <name>');
    expect(out).not.toContain('--as <approver>');
  });

  it('prints the help of `approvals approve` with its argument and options, and exits 0', async () => {
    const { code, out } = await run('approvals', 'approve', '--help');
    expect(code).toBe(0);
    expect(out).toContain('Usage: toolgate approvals approve [options] <call-id>');
    for (const option of ['--as <approver>', '--reason <text>', '--key <file>'])
      expect(out).toContain(option);
    expect(out).not.toContain('--caller <name>');
  });

  it('prints the overall help on stderr and exits 2 when no command is given', async () => {
    const { code, out, error } = await runAlone();
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(error).toContain('Usage: toolgate [options] [command]');
    expect(error).toContain('approvals');
  });

  it('exits 2 and names an unknown command', async () => {
    const { code, error } = await run('refund');
    expect(code).toBe(2);
    expect(error).toContain("error: unknown command 'refund'");
  });

  it('exits 2 and names an unknown option, before contacting Temporal', async () => {
    const { code, out, error } = await call('readonly-bot', 'get_order', '{}', '--amount', '5');
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(error).toContain("error: unknown option '--amount'");
  });

  it('exits 2 and names the missing --as of `approvals approve`, and the missing call id of `status`', async () => {
    const approve = await run('approvals', 'approve', 'tc-anything');
    expect(approve.code).toBe(2);
    expect(approve.error).toContain("error: required option '--as <approver>' not specified");
    const status = await run('status');
    expect(status.code).toBe(2);
    expect(status.error).toContain("error: missing required argument 'call-id'");
  });

  it('exits 2 and names the config file when it does not exist', async () => {
    const { code, error } = await runAlone('definitions', '--config', join(__dirname, 'no-such-config.ts'));
    expect(code).toBe(2);
    expect(error).toContain('no-such-config.ts: not found');
  });
});

describe('toolgate dev', () => {
  it('starts a Temporal dev server with the namespace prepared for toolgate, prints its address, and stops it when aborted', async () => {
    const namespace = `toolgate-dev-${Date.now()}`;
    const stop = new AbortController();
    let out = '';
    let error = '';
    let exitCode: number | undefined;
    const exited = runCli(
      ['dev', '--headless', '--namespace', namespace],
      { out: (text) => (out += `${text}\n`), error: (text) => (error += `${text}\n`) },
      { signal: stop.signal },
    ).then((code) => (exitCode = code));
    let address: string;
    try {
      address = await waitFor(() => {
        if (exitCode !== undefined) {
          throw new Error(`toolgate dev exited with ${exitCode} before it printed an address:\n${error}`);
        }
        return /^export TEMPORAL_ADDRESS=(\S+)$/m.exec(out)?.[1];
      });
      expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(out).toContain(`export TEMPORAL_NAMESPACE=${namespace}`);
      const connection = await Connection.connect({ address });
      try {
        const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
        expect(customAttributes).toMatchObject(
          Object.fromEntries(
            Object.values(searchAttributes).map((key) => [
              key.name,
              encodeSearchAttributeIndexedValueType(key.type),
            ]),
          ),
        );
        const description = await connection.workflowService.describeNamespace({ namespace });
        expect(optionalTsToMs(description.config?.workflowExecutionRetentionTtl)).toBe(30 * 86_400_000);
      } finally {
        await connection.close();
      }
    } finally {
      // Stops the server whatever happened above, and waits until it has.
      stop.abort();
      await exited;
    }
    expect(exitCode).toBe(0);
    expect(await acceptsConnections(address)).toBe(false);
  }, 120_000);
});
