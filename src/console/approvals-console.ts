import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { getRequestListener } from '@hono/node-server';
import type { Client } from '@temporalio/client';
import { Hono } from 'hono';
import type { Context, MiddlewareHandler } from 'hono';
import { limitBody } from '../connection/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApprovalAdmin } from '../approvals/client';
import { listApproverKeys, readApproverKeyStatus, sendEnrolment } from '../approver-keys/client';
import { listGrants, submitGrantRevocation } from '../grants/client';
import type { AuditStore } from '../audit/audit-store';
import { authorityOf, defaultAllowedOrigins, isLoopbackHost, originAllowed } from '../mcp/http-access';
import type { SignedDecision, SignedEdit } from '../approvals/protocol';
import type { ApproverKeysView, ApproverKeyView } from '../approver-keys/protocol';
import {
  inviteStatusIn,
  isSignedEnrolment,
  memoisedKeyChainVerifier,
  verifyEnrolment,
  verifyKeyChain,
} from '../approver-keys/protocol';
import type { ConsoleRefusalCode, RegistryRefusalCode } from '../shared/codes';
import { decisionShapeProblem, editShapeProblem } from '../approvals/decision-rules';
import type { SignedGrantRevocation } from '../grants/protocol';
import { revocationShapeProblem, revokerName } from '../grants/protocol';
import { ownValue } from '../shared/own-records';
import { verifySignature } from '../shared/signatures';
import { defaultTaskQueue } from '../shared/temporal';
import { approvalHistory, callState, pendingCalls } from './approval-queue';
import type { PendingQueue, QueueFilter } from './approval-queue';
import { decisionPermission } from './approver-permissions';
import type { ConsoleHostRule } from './console-host';
import { consoleHostAllowed, isWildcardHost } from './console-host';
import type { SignedIn } from './console-pages';
import {
  callPage,
  enrolPage,
  grantsPage,
  historyPage,
  loginPage,
  problemPage,
  queueEntries,
  queuePage,
  sessionPage,
} from './console-pages';
import type { ConsolePolicy } from './console-policy';
import type { ConsoleSession } from './console-sessions';
import { createSessionStore } from './console-sessions';
import { createRateLimiter } from './rate-limit';
import { createSharedCache } from './shared-cache';

/** How to start the approvals console. */
export interface ApprovalsConsoleOptions {
  /** A Temporal client on the namespace the workers run in. */
  client: Client;
  /** The task queue whose calls and approver-key registry it serves (default `toolgate`). */
  taskQueue?: string;
  /**
   * The policy the workers hold (or a console's own copy, `loadConsolePolicy`): who the approvers are
   * and what each may approve (for the pages), the operators' public keys (for sign-in).
   */
  policy: ConsolePolicy;
  /** The audit store: the history page reads it, and every relayed decision is logged to it. */
  audit?: AuditStore;
  /** The address to listen on (default 127.0.0.1: this machine only; elsewhere, put it behind TLS). */
  host?: string;
  /** The port (default 4300; 0 picks a free one). */
  port?: number;
  /**
   * The URL browsers use when it is not the listening address (a reverse proxy): its origin is
   * accepted, and its host is the only name (besides loopback names on loopback) the console answers to.
   */
  publicUrl?: string;
  /** How long a session lasts from sign-in (default 15 minutes). */
  sessionTtlMs?: number;
  /** How long a sign-in challenge may be answered (default 60 seconds). */
  challengeTtlMs?: number;
  /** How many pending calls the queue shows, newest first (default 50); it says how many wait in all. */
  queueLimit?: number;
  /**
   * The routes that need no session and read the registry (answering a sign-in challenge, the
   * enrolment page and posting an enrolment): how many requests one remote address may
   * send at once (`burst`, default 60) and a second after that (`perSecond`, default 20); beyond, 429.
   */
  unauthenticatedRateLimit?: { burst: number; perSecond: number };
  log?: (line: string) => void;
}

/** The running console. */
export interface ApprovalsConsole {
  /** Where it listens, e.g. `http://127.0.0.1:4300` (invite links point at `<url>/enrol/...`). */
  url: string;
  /** Stops listening and closes every connection; signs everybody out. */
  stop(): Promise<void>;
}

/** A signed-in request's approver, their live key and their session. */
interface Authenticated {
  session: ConsoleSession;
  key: ApproverKeyView;
  signedIn: SignedIn;
}

type ConsoleEnv = { Variables: { authenticated: Authenticated } };

const sessionCookie = 'toolgate_console';
/** The queue shows the newest this many pending calls unless told otherwise, and says how many there are. */
const defaultQueueLimit = 50;
/** The history shows this many closed calls a page, up to this many pages, and this many refused attempts. */
const historyPageSize = 25;
const historyPages = 40;
/** A session id longer than this is no session's (the proposal caps them far below). */
const maxSessionIdShown = 1_000;
/** A session's page lists its newest calls, at most this many. */
const sessionCallsShown = 200;
const refusedShown = 100;
const assetFiles: Record<string, string> = {
  'console.mjs': 'text/javascript; charset=utf-8',
  'canonical-json.mjs': 'text/javascript; charset=utf-8',
  'signing-keys.mjs': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

/**
 * Starts the approvals console: server-rendered pages for the queue, a call, the history, the
 * standing grants, sign-in and key enrolment. It holds no key that can decide: the approver's browser
 * signs every decision, grant revocation and enrolment with its own non-extractable key, and the
 * console checks the session, the CSRF token and the origin, then relays what was signed to the
 * workflow (or the registry), which alone judges it.
 */
export async function startApprovalsConsole(options: ApprovalsConsoleOptions): Promise<ApprovalsConsole> {
  const host = options.host ?? '127.0.0.1';
  const taskQueue = options.taskQueue ?? defaultTaskQueue;
  const log = options.log ?? (() => undefined);
  const assets = new Map(
    Object.entries(assetFiles).map(([name, type]) => [
      name,
      { type, body: readFileSync(join(__dirname, 'assets', name), 'utf8') },
    ]),
  );
  // Filled in once the port is bound (port 0 picks one); requests only arrive after that.
  let allowedOrigins: ReadonlySet<string> = new Set();
  let hostRule: ConsoleHostRule = { boundHost: host, port: 0 };
  const app = createConsoleApp({
    ...options,
    host,
    taskQueue,
    log,
    assets,
    allowedOrigins: () => allowedOrigins,
    hostRule: () => hostRule,
  });
  const listener = getRequestListener(app.fetch, { hostname: 'localhost', overrideGlobalObjects: false });
  const server = createServer((request, response) => void listener(request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4300, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  hostRule = { boundHost: host, port, ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}) };
  allowedOrigins = new Set([
    ...defaultAllowedOrigins({ host, port }),
    ...(options.publicUrl ? [new URL(options.publicUrl).origin] : []),
  ]);
  if (!isLoopbackHost(host)) {
    log(
      `warning: the approvals console listens on ${host}, reachable from other machines: serve it over ` +
        'HTTPS (a reverse proxy) and pass publicUrl, or listen on 127.0.0.1',
    );
  }
  if (isWildcardHost(host) && !options.publicUrl) {
    log(
      `warning: the approvals console listens on every interface (${host}) with no publicUrl: it answers ` +
        'to loopback names only; pass publicUrl to name the host browsers use',
    );
  }
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${authorityOf({ host, port })}`,
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections and the pages' polling would hold close() open.
        server.closeAllConnections();
      })),
  };
}

/** The console's routes; `allowedOrigins` is read per request (known once the port is bound). */
function createConsoleApp(input: {
  client: Client;
  taskQueue: string;
  policy: ConsolePolicy;
  audit?: AuditStore;
  host: string;
  publicUrl?: string;
  sessionTtlMs?: number;
  challengeTtlMs?: number;
  queueLimit?: number;
  unauthenticatedRateLimit?: { burst: number; perSecond: number };
  log: (line: string) => void;
  assets: Map<string, { type: string; body: string }>;
  allowedOrigins: () => ReadonlySet<string>;
  hostRule: () => ConsoleHostRule;
}): Hono<ConsoleEnv> {
  const { client, taskQueue, policy, log } = input;
  const sessionTtlMs = input.sessionTtlMs ?? 15 * 60 * 1000;
  const sessions = createSessionStore({ sessionTtlMs, challengeTtlMs: input.challengeTtlMs ?? 60 * 1000 });
  const admin = new ApprovalAdmin({ client, taskQueue, ...(input.audit ? { audit: input.audit } : {}) });
  const registry = { client, taskQueue, ...(input.audit ? { audit: input.audit } : {}) };
  const secureCookie = input.publicUrl?.startsWith('https:') ?? false;
  const callers = Object.keys(policy.file.callers).sort();
  const tools = [...new Set(Object.values(policy.file.callers).flatMap((caller) => caller.tools))].sort();
  const app = new Hono<ConsoleEnv>();

  const refuse = (c: Context, status: ContentfulStatusCode, code: ConsoleRefusalCode, message: string) =>
    c.json({ accepted: false, code, message: `${code}: ${message}` }, status);
  /** A refusal the registry would have answered, given before relaying anything to it. */
  const refuseAsRegistry = (c: Context, code: RegistryRefusalCode, message: string) =>
    c.json({ accepted: false, code, message: `${code}: ${message}` }, 409);

  // The registry as the routes without a session read it: one listing shared by every request, at
  // most a second old. An invite or key not in it is looked for in a listing begun after the request
  // arrived (so an invite made a moment before is found), shared by every request waiting for one and
  // begun at most every 100 ms, so a flood of made-up ids costs the registry ten queries a second at most.
  let registryView: { at: number; view: Promise<ApproverKeysView> } | undefined;
  const loadRegistryView = (): Promise<ApproverKeysView> => {
    const loading = { at: Date.now(), view: listApproverKeys(registry) };
    registryView = loading;
    loading.view.catch(() => {
      if (registryView === loading) registryView = undefined;
    });
    return loading.view;
  };
  const viewOfRegistry = (maxAgeMs: number): Promise<ApproverKeysView> =>
    registryView && Date.now() - registryView.at <= maxAgeMs ? registryView.view : loadRegistryView();
  const viewBegunSince = async (since: number): Promise<ApproverKeysView> => {
    if (registryView && registryView.at > since) return registryView.view;
    const gap = registryView ? registryView.at + 100 - Date.now() : 0;
    if (gap > 0) await new Promise((resolveAfter) => setTimeout(resolveAfter, gap));
    if (registryView && registryView.at > since) return registryView.view;
    return loadRegistryView();
  };
  const freshViewUnless = async (found: (view: ApproverKeysView) => boolean): Promise<ApproverKeysView> => {
    const arrived = Date.now();
    const view = await viewOfRegistry(1000);
    return found(view) ? view : viewBegunSince(arrived);
  };
  const verifyChain = memoisedKeyChainVerifier();

  // The routes that need no session, per remote address: a token bucket each.
  const limiter = createRateLimiter(input.unauthenticatedRateLimit ?? { burst: 60, perSecond: 20 });
  const rateLimited: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
    const verdict = limiter.take(remoteAddressOf(c));
    if (verdict.ok) return next();
    log(`refused ${c.req.method} ${c.req.path}: too many requests from ${remoteAddressOf(c)}`);
    c.header('Retry-After', String(verdict.retryAfterSeconds));
    const code: ConsoleRefusalCode = 'RATE_LIMITED';
    return c.json(
      {
        accepted: false,
        code,
        message: 'RATE_LIMITED: too many requests; try again shortly',
      },
      429,
    );
  };

  app.use(async (c, next) => {
    await next();
    c.header(
      'Content-Security-Policy',
      "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('X-Frame-Options', 'DENY');
    c.header('Cross-Origin-Opener-Policy', 'same-origin');
    if (!c.res.headers.has('Cache-Control')) c.header('Cache-Control', 'no-store');
  });

  // A page of another site must not reach this server through DNS rebinding, nor post to it.
  app.use(async (c, next) => {
    if (!consoleHostAllowed({ hostHeader: c.req.header('host'), rule: input.hostRule() })) {
      log(
        `refused ${c.req.method} ${c.req.path}: Host ${c.req.header('host') ?? '(none)'} is not this console`,
      );
      return c.text('This console answers to its own address only.', 403);
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const origin = c.req.header('origin');
      if (origin === undefined || !originAllowed({ origin, allowed: input.allowedOrigins() })) {
        log(`refused ${c.req.method} ${c.req.path}: origin ${origin ?? '(none)'}`);
        return refuse(
          c,
          403,
          'ORIGIN_NOT_ALLOWED',
          'requests that change anything come from this console’s own pages',
        );
      }
    }
    return next();
  });
  app.use(
    limitBody({
      maxBytes: 64 * 1024,
      onTooLarge: (c) => refuse(c, 413, 'BAD_REQUEST', 'the body is too large'),
    }),
  );

  // A challenge costs a MAC and stores nothing; answering one, and enrolling, read the registry.
  app.post('/login', rateLimited);
  app.use('/enrol/*', rateLimited);

  app.get('/assets/:name', (c) => {
    const asset = input.assets.get(c.req.param('name'));
    if (!asset) return c.text('not found', 404);
    c.header('Cache-Control', 'no-cache');
    return c.body(asset.body, 200, { 'Content-Type': asset.type });
  });

  /** The session of the request's cookie, its key still enrolled and its approver still in the policy. */
  const authenticate = async (c: Context): Promise<Authenticated | undefined> => {
    const session = sessions.find(getCookie(c, sessionCookie));
    if (!session) return undefined;
    const status = await readApproverKeyStatus({ ...registry, keyId: session.keyId });
    if (status.status !== 'enrolled' || status.key.approver !== session.approver) {
      // A revoked key ends its sessions at once.
      sessions.close(session.id);
      return undefined;
    }
    return {
      session,
      key: status.key,
      signedIn: {
        approver: session.approver,
        keyId: session.keyId,
        keyLabel: status.key.label,
        csrfToken: session.csrfToken,
        grant: ownValue(policy.approvers, session.approver),
      },
    };
  };

  /** Pages: a visitor who is not signed in is sent to the sign-in page. */
  const page: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
    const authenticated = await authenticate(c);
    if (!authenticated) {
      if (c.req.path.startsWith('/queue/')) return refuse(c, 401, 'NOT_SIGNED_IN', 'sign in again');
      return c.redirect('/login', 303);
    }
    c.set('authenticated', authenticated);
    return next();
  };

  /** Changes: a session, and its CSRF token in the `X-CSRF-Token` header. */
  const change: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
    const authenticated = await authenticate(c);
    if (!authenticated) return refuse(c, 401, 'NOT_SIGNED_IN', 'no live session: sign in again');
    if (!sessions.csrfMatches(authenticated.session, c.req.header('x-csrf-token'))) {
      log(`refused ${c.req.method} ${c.req.path}: no valid CSRF token (${authenticated.session.approver})`);
      return refuse(c, 403, 'CSRF_TOKEN_INVALID', 'the request carries no valid CSRF token');
    }
    c.set('authenticated', authenticated);
    return next();
  };

  const filterOf = (c: Context): QueueFilter => {
    const tool = c.req.query('tool');
    const caller = c.req.query('caller');
    return { ...(tool ? { tool } : {}), ...(caller ? { caller } : {}) };
  };
  // Every page polls every two seconds: one listing per filter at most every 1.5 s, whoever asks. The
  // filters a request may name are the policy's tools and callers, so the cache holds a bounded
  // number of keys; another name matches no call and loads nothing.
  const queueCache = createSharedCache<PendingQueue>({
    ttlMs: 1_500,
    maxKeys: (tools.length + 1) * (callers.length + 1),
  });
  const pendingQueue = (filter: QueueFilter): Promise<PendingQueue> => {
    if (
      (filter.tool && !tools.includes(filter.tool)) ||
      (filter.caller && !callers.includes(filter.caller))
    ) {
      return Promise.resolve({ entries: [], matching: 0, complete: true });
    }
    return queueCache.get(JSON.stringify([filter.tool ?? '', filter.caller ?? '']), () =>
      pendingCalls({ client, taskQueue, filter, limit: input.queueLimit ?? defaultQueueLimit }),
    );
  };

  app.get('/', page, async (c) => {
    const filter = filterOf(c);
    const queue = await pendingQueue(filter);
    return c.html(
      queuePage({
        signedIn: c.get('authenticated').signedIn,
        queue,
        filter,
        tools,
        callers,
        now: Date.now(),
      }),
    );
  });

  app.get('/queue/entries', page, async (c) => {
    const queue = await pendingQueue(filterOf(c));
    return c.html(queueEntries({ queue, now: Date.now() }));
  });

  app.get('/calls/:callId', page, async (c) => {
    const { signedIn } = c.get('authenticated');
    const callId = c.req.param('callId');
    // After an edit, the page waits (briefly) for the round that asks for the edited arguments.
    const after = Number(c.req.query('after'));
    if (Number.isSafeInteger(after) && after > 0) {
      await admin.waitForRound({ callId, after, timeoutMs: 5_000 }).catch(() => null);
    }
    const state = await callState({ client, callId });
    if (!state) {
      return c.html(
        problemPage({
          signedIn,
          title: 'No such call',
          message: `CALL_NOT_FOUND: no call ${callId} is visible to you.`,
        }),
        404,
      );
    }
    const approval = state.approval;
    const permission = approval
      ? decisionPermission({
          approver: signedIn.approver,
          grant: signedIn.grant,
          round: { ...approval, caller: state.caller },
        })
      : undefined;
    return c.html(callPage({ signedIn, callId, state, permission, now: Date.now() }));
  });

  app.get('/history', page, async (c) => {
    const requested = Number(c.req.query('page') ?? '1');
    const pageNumber = Number.isInteger(requested) ? Math.min(Math.max(requested, 1), historyPages) : 1;
    const open = await pendingQueue({});
    const history = input.audit
      ? await approvalHistory({
          audit: input.audit,
          openCallIds: open.entries.map((entry) => entry.callId),
          limit: historyPageSize,
          offset: (pageNumber - 1) * historyPageSize,
          refusedLimit: refusedShown,
        })
      : { closed: [], refused: [], refusedTotal: 0, more: false };
    return c.html(
      historyPage({
        signedIn: c.get('authenticated').signedIn,
        ...history,
        page: pageNumber,
        more: history.more && pageNumber < historyPages,
      }),
    );
  });

  app.post('/calls/:callId/decisions', change, async (c) => {
    const { session } = c.get('authenticated');
    const callId = c.req.param('callId');
    const body = await jsonBody(c);
    const candidate = { envelope: body?.envelope, signature: body?.signature };
    const problem = decisionShapeProblem(candidate);
    if (problem !== undefined) {
      return refuse(c, 400, 'BAD_REQUEST', `expected {envelope, signature, keyId}: ${problem}`);
    }
    const { envelope, signature } = candidate as SignedDecision;
    if (envelope.approver !== session.approver || body?.keyId !== session.keyId) {
      log(`refused a decision on ${callId}: session of ${session.approver} sent one as ${envelope.approver}`);
      return refuse(
        c,
        403,
        'SESSION_APPROVER_MISMATCH',
        `you are signed in as ${session.approver} with key ${session.keyId}; the decision names ${envelope.approver}`,
      );
    }
    if (envelope.callId !== callId) {
      return refuse(c, 400, 'BAD_REQUEST', `the decision names call ${envelope.callId}, not ${callId}`);
    }
    // The chain is public (the registry's); attaching it lets the workflow verify the key without trusting us.
    const { key } = c.get('authenticated');
    const decision: SignedDecision = {
      envelope,
      signature,
      key: { invite: key.invite, enrolment: key.enrolment },
    };
    const outcome = await admin.send({ callId, decision });
    log(
      `relayed ${envelope.decision} on ${callId} by ${envelope.approver}: ${outcome.accepted ? outcome.state : outcome.code}`,
    );
    return c.json(outcome, outcome.accepted ? 200 : 409);
  });

  // An edit the approver's browser signed with its enrolled key, relayed with the key's chain: the
  // workflow judges it (the round, the key, the edited arguments by the contract and the policy).
  app.post('/calls/:callId/edits', change, async (c) => {
    const { session } = c.get('authenticated');
    const callId = c.req.param('callId');
    const body = await jsonBody(c);
    const candidate = { envelope: body?.envelope, signature: body?.signature };
    const problem = editShapeProblem(candidate);
    if (problem !== undefined) {
      return refuse(c, 400, 'BAD_REQUEST', `expected {envelope, signature, keyId}: ${problem}`);
    }
    const { envelope, signature } = candidate as SignedEdit;
    if (envelope.approver !== session.approver || body?.keyId !== session.keyId) {
      log(`refused an edit on ${callId}: session of ${session.approver} sent one as ${envelope.approver}`);
      return refuse(
        c,
        403,
        'SESSION_APPROVER_MISMATCH',
        `you are signed in as ${session.approver} with key ${session.keyId}; the edit names ${envelope.approver}`,
      );
    }
    if (envelope.callId !== callId) {
      return refuse(c, 400, 'BAD_REQUEST', `the edit names call ${envelope.callId}, not ${callId}`);
    }
    const { key } = c.get('authenticated');
    const edit: SignedEdit = { envelope, signature, key: { invite: key.invite, enrolment: key.enrolment } };
    const outcome = await admin.sendEdit({ callId, edit });
    log(
      `relayed an edit on ${callId} by ${envelope.approver}: ${outcome.accepted ? 'accepted' : outcome.code}`,
    );
    return c.json(outcome, outcome.accepted ? 200 : 409);
  });

  app.get('/sessions/:session', page, async (c) => {
    const { signedIn } = c.get('authenticated');
    const session = c.req.param('session');
    const notFound = (message: string) =>
      c.html(problemPage({ signedIn, title: 'No such session', message }), 404);
    if (!input.audit) {
      return notFound(
        'SESSION_NOT_FOUND: this console reads sessions from the audit store; start it with one.',
      );
    }
    if (session.length > maxSessionIdShown)
      return notFound(`SESSION_NOT_FOUND: no session ${session.slice(0, 40)}…`);
    // The limits the session was judged by are kept with its state: the page shows those.
    const stats = await input.audit.sessions.stats({ session });
    // Only the owner's records are the session's calls: a proposal another caller (or nobody) sent
    // into it was refused and recorded under its id, but it is not this session's.
    const newest = await input.audit.recordsOfSession(session, { limit: sessionCallsShown + 1 });
    const owned = newest.filter((record) => record.caller === stats.caller);
    if (stats.caller === undefined || owned.length === 0) {
      return notFound(`SESSION_NOT_FOUND: no session ${session} is in the audit store.`);
    }
    const more = newest.length > sessionCallsShown;
    const calls = more ? owned.slice(-sessionCallsShown) : owned;
    return c.html(sessionPage({ signedIn, stats, calls, more }));
  });

  app.get('/grants', page, async (c) => {
    const view = await listGrants({ client, taskQueue });
    return c.html(
      grantsPage({ signedIn: c.get('authenticated').signedIn, grants: view.grants, now: Date.now() }),
    );
  });

  // A revocation the approver's browser signed with its enrolled key, relayed with the key's chain:
  // the workers judge it (a signer of the grant, the chain, the key enrolled and not revoked).
  app.post('/grants/:grantId/revocations', change, async (c) => {
    const { session, key } = c.get('authenticated');
    const grantId = c.req.param('grantId');
    const body = await jsonBody(c);
    const candidate = { revocation: body?.revocation, signature: body?.signature };
    const problem = revocationShapeProblem(candidate);
    const fields = Object.keys(body?.revocation ?? {})
      .sort()
      .join(',');
    if (problem || fields !== 'by,grantId,issuedAt,reason,revocationId') {
      return refuse(
        c,
        400,
        'BAD_REQUEST',
        `expected {revocation: {revocationId, grantId, by, reason, issuedAt}, signature, keyId}${problem ? `: ${problem}` : ''}`,
      );
    }
    const { revocation, signature } = candidate as SignedGrantRevocation;
    // Operators revoke with their key file (the CLI), never through an approver's session.
    const { by } = revocation;
    if (!('approver' in by) || by.approver !== session.approver || body?.keyId !== session.keyId) {
      log(
        `refused a revocation of grant ${grantId}: session of ${session.approver} sent one as ${revokerName(by)}`,
      );
      return refuse(
        c,
        403,
        'SESSION_APPROVER_MISMATCH',
        `you are signed in as ${session.approver} with key ${session.keyId}; the revocation names ${revokerName(by)}`,
      );
    }
    if (revocation.grantId !== grantId) {
      return refuse(
        c,
        400,
        'BAD_REQUEST',
        `the revocation names grant ${revocation.grantId}, not ${grantId}`,
      );
    }
    // The chain is public (the registry's); it lets the workers verify the key without trusting us.
    const outcome = await submitGrantRevocation({
      client,
      taskQueue,
      signed: { revocation, signature, key: { invite: key.invite, enrolment: key.enrolment } },
    });
    log(
      `relayed a revocation of grant ${grantId} by ${session.approver}: ${outcome.accepted ? outcome.grant.state : outcome.code}`,
    );
    return c.json(outcome, outcome.accepted ? 200 : 409);
  });

  app.get('/login', async (c) => {
    if (await authenticate(c)) return c.redirect('/', 303);
    return c.html(loginPage({}));
  });

  app.post('/login/challenge', async (c) => {
    const body = await jsonBody(c);
    const approver = body?.approver;
    const keyId = body?.keyId;
    if (
      typeof approver !== 'string' ||
      typeof keyId !== 'string' ||
      approver.length > 200 ||
      keyId.length > 200
    ) {
      return refuse(c, 400, 'BAD_REQUEST', 'expected {approver, keyId}');
    }
    const origin = (c.req.header('origin') ?? '').toLowerCase().replace(/\/$/, '');
    return c.json({ challenge: sessions.issueChallenge({ approver, keyId, origin }) });
  });

  app.post('/login', async (c) => {
    const body = await jsonBody(c);
    const signature = body?.signature;
    const challenge = sessions.checkChallenge(body?.challenge);
    const invalid = (why: string) => {
      log(`refused a sign-in: ${why}`);
      return refuse(c, 401, 'LOGIN_INVALID', why);
    };
    if (!challenge || typeof signature !== 'string') return invalid('unknown, used or expired challenge');
    const origin = (c.req.header('origin') ?? '').toLowerCase().replace(/\/$/, '');
    if (challenge.origin !== origin) return invalid('the challenge was issued to another origin');
    const grant = ownValue(policy.approvers, challenge.approver);
    if (!grant) return invalid(`the policy names no approver ${challenge.approver}`);
    // The signature first, against the shared view of the registry: an unsigned or forged answer
    // costs no registry query of its own.
    const seen = (
      await freshViewUnless((view) => view.keys.some((key) => key.keyId === challenge.keyId))
    ).keys.find((key) => key.keyId === challenge.keyId);
    if (!seen) return refuse(c, 401, 'KEY_UNKNOWN', 'this key is not enrolled');
    const seenChain = verifyChain({
      chain: { invite: seen.invite, enrolment: seen.enrolment },
      operators: policy.operators,
      approver: challenge.approver,
    });
    if (!seenChain.ok) {
      return invalid(`the key's chain does not hold for ${challenge.approver}: ${seenChain.reason}`);
    }
    if (
      !verifySignature({
        kind: 'login',
        value: challenge,
        signature,
        publicKeyHex: seenChain.key.publicKeyHex,
      })
    ) {
      return invalid("the challenge is not signed with the approver's enrolled key");
    }
    // Then the registry's answer now, cross-checked with the audit store: revoked since, or never.
    const status = await readApproverKeyStatus({ ...registry, keyId: challenge.keyId });
    if (status.status === 'unknown') return refuse(c, 401, 'KEY_UNKNOWN', 'this key is not enrolled');
    if (status.status === 'revoked') return refuse(c, 401, 'KEY_REVOKED', 'this key was revoked');
    const { key } = status;
    const chain = verifyKeyChain({
      chain: { invite: key.invite, enrolment: key.enrolment },
      operators: policy.operators,
      approver: challenge.approver,
    });
    if (!chain.ok) return invalid(`the key's chain does not hold for ${challenge.approver}: ${chain.reason}`);
    if (
      !verifySignature({ kind: 'login', value: challenge, signature, publicKeyHex: chain.key.publicKeyHex })
    ) {
      return invalid("the challenge is not signed with the approver's enrolled key");
    }
    // Checked again now, after the awaits above: of two sign-ins racing with one answer, one counts.
    if (!sessions.consumeChallenge(challenge)) return invalid('unknown, used or expired challenge');
    const session = sessions.open({ approver: challenge.approver, keyId: challenge.keyId });
    setCookie(c, sessionCookie, session.id, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      maxAge: Math.floor(sessionTtlMs / 1000),
      secure: secureCookie,
    });
    log(`${challenge.approver} signed in with key ${challenge.keyId}`);
    return c.json({ ok: true, approver: session.approver, keyId: session.keyId });
  });

  app.post('/logout', change, (c) => {
    sessions.close(c.get('authenticated').session.id);
    deleteCookie(c, sessionCookie, { path: '/' });
    return c.json({ ok: true });
  });

  app.get('/enrol/:inviteId', async (c) => {
    const inviteId = c.req.param('inviteId');
    const view = await freshViewUnless(
      (candidate) => inviteStatusIn(candidate, inviteId, Date.now()).status !== 'unknown',
    );
    const held = view.invites.find((candidate) => candidate.invite.invite.inviteId === inviteId);
    const used = held?.usedBy !== undefined || view.keys.some((key) => key.inviteId === inviteId);
    const expired = held !== undefined && Date.parse(held.invite.invite.expiresAt) <= Date.now();
    const problem = used
      ? 'INVITE_USED: this invite was used; ask an operator for a new one'
      : !held
        ? 'INVITE_UNKNOWN: no such invite'
        : expired
          ? 'INVITE_EXPIRED: this invite has expired; ask an operator for a new one'
          : undefined;
    return c.html(
      enrolPage({ inviteId, invite: held, ...(problem ? { problem } : {}) }),
      problem ? 404 : 200,
    );
  });

  app.post('/enrol/:inviteId', async (c) => {
    const body = await jsonBody(c);
    const enrolment = body?.enrolment;
    if (!isSignedEnrolment(enrolment) || enrolment.enrolment.inviteId !== c.req.param('inviteId')) {
      return refuse(c, 400, 'BAD_REQUEST', 'expected {enrolment} signed for this invite');
    }
    // Checked first against the shared view: an unknown, used or expired invite, or an enrolment its
    // invite's key did not sign, is refused without a registry update (nor an audit record).
    const inviteId = enrolment.enrolment.inviteId;
    const view = await freshViewUnless(
      (candidate) => inviteStatusIn(candidate, inviteId, Date.now()).status !== 'unknown',
    );
    const invite = inviteStatusIn(view, inviteId, Date.now());
    if (invite.status === 'unknown') return refuseAsRegistry(c, 'INVITE_UNKNOWN', 'no such invite');
    if (invite.status === 'used') return refuseAsRegistry(c, 'INVITE_USED', 'this invite was used');
    if (invite.status === 'expired') return refuseAsRegistry(c, 'INVITE_EXPIRED', 'this invite has expired');
    const held = view.invites.find((candidate) => candidate.invite.invite.inviteId === inviteId);
    const verdict = held ? verifyEnrolment({ invite: held.invite.invite, enrolment }) : undefined;
    if (verdict && !verdict.ok) return refuseAsRegistry(c, 'SIGNATURE_INVALID', verdict.reason);
    // Relayed as signed: the registry checks both signatures and that the invite is unused.
    const outcome = await sendEnrolment({ ...registry, enrolment });
    // The registry changed (or said why not): the next page or sign-in reads it afresh.
    registryView = undefined;
    log(
      `relayed an enrolment for ${enrolment.enrolment.approver}: ${outcome.accepted ? 'accepted' : outcome.code}`,
    );
    return c.json(outcome, outcome.accepted ? 200 : 409);
  });

  app.notFound((c) => c.html(problemPage({ title: 'Not found', message: 'There is no such page.' }), 404));
  app.onError((error, c) => {
    log(`error on ${c.req.method} ${c.req.path}: ${error.message}`);
    return c.text('The console could not answer; see its log.', 500);
  });
  return app;
}

/** The address the request came from (the TCP peer: a reverse proxy's, behind one). */
function remoteAddressOf(c: Context): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? 'unknown';
}

/** The request's JSON object body, or undefined when it is not one. */
async function jsonBody(c: Context): Promise<Record<string, unknown> | undefined> {
  try {
    const value: unknown = await c.req.json();
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
