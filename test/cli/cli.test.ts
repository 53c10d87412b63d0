import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main';
import type { ToolResult } from '../../src/index';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';

let harness: ToolGateHarness;

beforeAll(async () => {
  harness = await startHarness({ address: temporalAddress() });
  process.env.TOOLGATE_TEST_POLICY = harness.policyPath;
  process.env.TOOLGATE_TEST_KEYS = harness.keysDirectory;
  process.env.TOOLGATE_TEST_AUDIT = join(harness.keysDirectory, '..', 'cli-audit.sqlite');
});

afterAll(async () => {
  await harness?.stop();
});

async function run(...argv: string[]): Promise<{ code: number; out: string; error: string }> {
  let out = '';
  let error = '';
  const common = [
    '--config',
    join(__dirname, '../support/test-toolgate.config.ts'),
    '--address',
    temporalAddress(),
  ];
  const code = await main([...argv, ...common, '--task-queue', harness.taskQueue], {
    out: (text) => (out += `${text}\n`),
    error: (text) => (error += `${text}\n`),
  });
  return { code, out, error };
}

/** `toolgate call` for one caller and tool; `extra` adds options such as `--session` or `--json`. */
function call(caller: string, tool: string, args: string, ...extra: string[]) {
  return run('call', '--caller', caller, '--tool', tool, '--args', args, ...extra);
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
    expect(usage.error).toContain('call needs --caller, --args');
    let error = '';
    const unreachable = await main(
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

  it('shows, resets and ends a session', async () => {
    const session = `cli-session-${Date.now()}`;
    await call('readonly-bot', 'get_order', '{"order_id":"ORD-1001"}', '--session', session);
    const show = await run('sessions', 'show', session, '--json');
    expect(JSON.parse(show.out)).toMatchObject({ caller: 'readonly-bot', steps: 1, closed: false });
    expect((await run('sessions', 'reset', session)).code).toBe(0);
    expect((await run('sessions', 'end', session)).code).toBe(0);
    const after = await call('readonly-bot', 'get_order', '{"order_id":"ORD-1001"}', '--session', session);
    expect(after.out).toContain('SESSION_CLOSED');
  });
});
