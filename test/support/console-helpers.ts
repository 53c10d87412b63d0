import { generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import type { LoadedPolicy } from 'toolgate';
import type { DecisionEnvelope } from 'toolgate/protocol';
import { checkPolicy, createToolRegistry, resolveCodecKeys } from 'toolgate';
import { inviteApprover, parseInviteLink, signEnrolment } from 'toolgate/admin';
import { signValue } from 'toolgate/protocol';
import type { ApprovalsConsole } from 'toolgate/console';
import { startApprovalsConsole } from 'toolgate/console';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import type { ConsoleProcessPlan } from '../../examples/orders/start';
import { consoleProcessPlan } from '../../examples/orders/start';
import { temporalAddress } from './temporal';
import { testPolicy } from './test-policy';
import { testContracts } from './test-tools';
import type { ToolGateHarness } from './toolgate-harness';

/** The harness's policy as workers hold it, for the console's pages. */
export function harnessPolicy(harness: ToolGateHarness): LoadedPolicy {
  return checkPolicy({
    source: 'test policy',
    value: testPolicy,
    registry: createToolRegistry({ tools: [...ordersContracts, ...testContracts] }),
    keysDirectory: harness.keysDirectory,
  });
}

/** Starts a console on a free loopback port for the harness's task queue; the caller stops it. */
export function startHarnessConsole(harness: ToolGateHarness): Promise<ApprovalsConsole> {
  return startApprovalsConsole({
    client: harness.temporal,
    taskQueue: harness.taskQueue,
    policy: harnessPolicy(harness),
    audit: harness.audit,
    port: 0,
  });
}

/** The harness's audit store, as a file another process can open. */
export function harnessAuditPath(harness: ToolGateHarness): string {
  return join(dirname(harness.policyPath), 'audit.sqlite');
}

/**
 * The console process `npm start` runs (examples/orders/start.ts), planned for the harness's task
 * queue in a fresh folder of its own, on a free loopback port: the very plan, with the harness's policy
 * (and its audit store, or the PostgreSQL one `audit.url` names).
 */
export function harnessConsolePlan(
  harness: ToolGateHarness,
  audit: { url?: string } = {},
): ConsoleProcessPlan {
  return consoleProcessPlan({
    policy: harnessPolicy(harness),
    directory: mkdtempSync(join(tmpdir(), 'toolgate-console-')),
    temporal: {
      address: temporalAddress(),
      namespace: harness.temporal.options.namespace,
      taskQueue: harness.taskQueue,
    },
    ...(audit.url !== undefined ? { auditUrl: audit.url } : { auditPath: harnessAuditPath(harness) }),
    // The harness's payload codec, when it encrypts: as npm start hands over TOOLGATE_CODEC_KEYS.
    ...(harness.codec ? { codecKeys: resolveCodecKeys({ config: { codec: harness.codec }, env: {} }) } : {}),
    port: 0,
  });
}

/** A console's answer: the status and the JSON body. */
export interface ConsoleAnswer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * What an approver's browser does, done from Node with a key object instead of a WebCrypto key: the
 * same requests, the same signed bytes. It keeps the session cookie and the CSRF token as a browser
 * page would, and sends its console's origin unless told otherwise.
 */
export class ConsoleVisitor {
  cookie = '';
  csrfToken = '';
  keyId = '';
  readonly privateKey: KeyObject = generateKeyPairSync('ed25519').privateKey;

  constructor(
    readonly consoleUrl: string,
    readonly approver: string,
  ) {}

  /** A request as a page of `origin` (default: the console's own) would send it. */
  async request(
    path: string,
    init: { method?: string; json?: unknown; origin?: string | null; csrf?: string | null } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = {};
    const origin = init.origin === undefined ? this.consoleUrl : init.origin;
    if (origin !== null) headers.origin = origin;
    if (this.cookie) headers.cookie = this.cookie;
    const csrf = init.csrf === undefined ? this.csrfToken : init.csrf;
    if (csrf) headers['x-csrf-token'] = csrf;
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    return fetch(`${this.consoleUrl}${path}`, {
      method: init.method ?? (init.json === undefined ? 'GET' : 'POST'),
      headers,
      redirect: 'manual',
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    });
  }

  async post(path: string, json: unknown, init: { origin?: string | null; csrf?: string | null } = {}) {
    const response = await this.request(path, { json, ...init });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** Enrols this visitor's key through an invite Olivia signs; returns the key id. */
  async enrol(harness: ToolGateHarness, label = 'node'): Promise<string> {
    const { link } = await inviteApprover({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      approver: this.approver,
      operator: 'olivia',
      operatorKey: harness.operatorKey('olivia'),
      consoleUrl: this.consoleUrl,
    });
    const answer = await this.enrolWith(link, label);
    expect(answer).toMatchObject({ status: 200, body: { accepted: true } });
    this.keyId = answer.body.keyId as string;
    return this.keyId;
  }

  /** Posts an enrolment of this visitor's key through `link`, as the enrolment page does. */
  enrolWith(link: string, label = 'node'): Promise<ConsoleAnswer> {
    const { inviteId, invitePrivateKey } = parseInviteLink(link);
    const enrolment = signEnrolment({
      inviteId,
      approver: this.approver,
      invitePrivateKey,
      privateKey: this.privateKey,
      label,
    });
    return this.post(`/enrol/${encodeURIComponent(inviteId)}`, { enrolment });
  }

  /** Answers a sign-in challenge with this visitor's key; keeps the cookie and reads the CSRF token from a page. */
  async login(): Promise<ConsoleAnswer> {
    const issued = await this.post('/login/challenge', { approver: this.approver, keyId: this.keyId });
    const challenge = issued.body.challenge;
    const signature = signValue({ kind: 'login', value: challenge, privateKey: this.privateKey });
    const response = await this.request('/login', { json: { challenge, signature } });
    const answer = { status: response.status, body: (await response.json()) as Record<string, unknown> };
    const cookie = response.headers.get('set-cookie');
    if (cookie) this.cookie = cookie.split(';')[0]!;
    if (answer.status === 200) {
      const page = await (await this.request('/')).text();
      this.csrfToken = /<meta name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '';
    }
    return answer;
  }

  /** The envelope the page builds for the call's open round. */
  async envelope(
    harness: ToolGateHarness,
    callId: string,
    decision: 'approve' | 'deny' = 'approve',
    overrides: Partial<DecisionEnvelope> = {},
  ): Promise<DecisionEnvelope> {
    const approval = (await harness.admin.show(callId))?.approval;
    if (!approval) throw new Error(`call ${callId} has no approval round`);
    return {
      callId,
      runId: approval.runId,
      nonce: approval.nonce,
      argsDigest: approval.argsDigest,
      previewDigest: approval.previewDigest,
      contractDigest: approval.contractDigest,
      decision,
      approver: this.approver,
      reason: `${decision} by ${this.approver} in the console`,
      issuedAt: new Date().toISOString(),
      ...overrides,
    };
  }

  /** Signs `envelope` with this visitor's key (or `privateKey`) and posts it as the call page does. */
  decide(
    envelope: DecisionEnvelope,
    init: { origin?: string | null; csrf?: string | null; privateKey?: KeyObject; signature?: string } = {},
  ): Promise<ConsoleAnswer> {
    const signature =
      init.signature ??
      signValue({ kind: 'decision', value: envelope, privateKey: init.privateKey ?? this.privateKey });
    return this.post(
      `/calls/${encodeURIComponent(envelope.callId)}/decisions`,
      { envelope, signature, keyId: this.keyId },
      init,
    );
  }
}
