import { describeContext } from '../calls/call-context';
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { ApproverView } from '../policy/load-policy';
import type { InviteView } from '../approver-keys/protocol';
import type { GrantView } from '../grants/protocol';
import type { CallState, ChainView } from '../calls/protocol';
import { argumentChanges } from '../shared/argument-changes';
import type { AuditRecord } from '../audit/audit-store';
import type { SessionStats } from '../sessions/session';
import type { HistoryEntry, PendingQueue, QueueFilter, RefusedAttempt } from './approval-queue';
import type { DecisionPermission } from './approver-permissions';

/*
 * The console's pages, rendered on the server with hono/html (every interpolated value escaped). No
 * inline script or style: the CSP allows this origin's files only. The page's behaviour (signing,
 * live updates) lives in assets/console.mjs and reads what it needs from data attributes and, on a
 * call's page, from one JSON data block (`<script type="application/json">`, which runs nothing):
 * what the approver sees and what their key signs both come from it.
 */

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** Who is signed in, as every page's header shows it. */
export interface SignedIn {
  approver: string;
  keyId: string;
  keyLabel: string;
  csrfToken: string;
  grant: ApproverView | undefined;
}

/** The whole document around a page's content. */
export function layout(input: { title: string; page: string; signedIn?: SignedIn; content: Html }): Html {
  const { signedIn } = input;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${input.title} · toolgate approvals</title>
        <link rel="stylesheet" href="/assets/console.css" />
        ${signedIn ? html`<meta name="csrf-token" content="${signedIn.csrfToken}" />` : ''}
        <script type="module" src="/assets/console.mjs"></script>
      </head>
      <body
        data-page="${input.page}"
        data-approver="${signedIn?.approver ?? ''}"
        data-key-id="${signedIn?.keyId ?? ''}"
      >
        <header class="top">
          <a class="brand" href="/">toolgate approvals</a>
          ${
            signedIn
              ? html`<nav>
                  <a href="/">Queue</a>
                  <a href="/history">History</a>
                  <a href="/grants">Grants</a>
                  <span class="who" title="key ${signedIn.keyId}"
                    >${signedIn.approver} · ${signedIn.keyLabel}</span
                  >
                  <button type="button" id="logout">Sign out</button>
                </nav>`
              : ''
          }
        </header>
        <main>${input.content}</main>
      </body>
    </html>`;
}

/** What the signed-in approver may approve, shown on the queue and call pages. */
export function grantPanel(signedIn: SignedIn): Html {
  const { grant } = signedIn;
  if (!grant) {
    return html`<section class="grant" id="grant">
      <p>The policy names no approver <strong>${signedIn.approver}</strong>: you can look, not decide.</p>
    </section>`;
  }
  return html`<section class="grant" id="grant">
    <p>
      You may approve calls up to <strong class="risk risk-${grant.maxLevel}">${grant.maxLevel}</strong>.
      ${
        grant.operates.length
          ? html`You operate <strong>${grant.operates.join(', ')}</strong>: its calls are not yours to approve
              (self-approval).`
          : 'You operate no caller.'
      }
      A critical call needs distinct approvers up to its quorum; each counts once.
    </p>
  </section>`;
}

/** The queue page: filters, then the pending calls (refreshed by the page script). */
export function queuePage(input: {
  signedIn: SignedIn;
  queue: PendingQueue;
  filter: QueueFilter;
  tools: string[];
  callers: string[];
  now: number;
}): Html {
  const query = new URLSearchParams();
  if (input.filter.tool) query.set('tool', input.filter.tool);
  if (input.filter.caller) query.set('caller', input.filter.caller);
  const options = (values: string[], selected: string | undefined) =>
    values.map(
      (value) => html`<option value="${value}" ${value === selected ? 'selected' : ''}>${value}</option>`,
    );
  return layout({
    title: 'Queue',
    page: 'queue',
    signedIn: input.signedIn,
    content: html`${grantPanel(input.signedIn)}
      <h1>Waiting for approval</h1>
      <form class="filters" method="get" action="/">
        <label
          >Tool
          <select name="tool">
            <option value="">all</option>
            ${options(input.tools, input.filter.tool)}
          </select></label
        >
        <label
          >Caller
          <select name="caller">
            <option value="">all</option>
            ${options(input.callers, input.filter.caller)}
          </select></label
        >
        <button type="submit">Filter</button>
      </form>
      <section id="queue" aria-live="polite" data-source="/queue/entries?${query.toString()}">
        ${queueEntries({ queue: input.queue, now: input.now })}
      </section>`,
  });
}

/** The pending calls as cards: the fragment the page script fetches to update the queue live. */
export function queueEntries(input: { queue: PendingQueue; now: number }): Html {
  const { entries, matching, complete } = input.queue;
  if (!entries.length && matching === 0) {
    return html`<p class="empty">Nothing is waiting for approval.</p>`;
  }
  const total = complete ? `${matching}` : `more than ${matching}`;
  return html`${
      entries.length < matching || !complete
        ? html`<p class="note" id="queue-count">
            Showing the newest ${entries.length} of ${total} waiting calls; filter by tool or caller to see
            others.
          </p>`
        : ''
    }
    <ol class="cards">
      ${entries.map(
        (entry) =>
          html`<li class="card" data-call-id="${entry.callId}">
            <div class="card-head">
              <a href="/calls/${encodeURIComponent(entry.callId)}"><strong>${entry.tool}</strong></a>
              <span class="risk risk-${entry.riskLevel}">${entry.riskLevel}</span>
            </div>
            <p class="action">${previewHeadline(entry.preview)}</p>
            ${previewList(entry.preview)}
            <p class="meta">
              caller <strong>${entry.caller}</strong>${
                entry.context
                  ? html` · <span class="acting-for">${describeContext(entry.context)}</span>`
                  : ''
              }
              · session <code>${entry.session}</code><br />
              approvals
              ${entry.approvals.length}/${entry.quorum}${
                entry.approvals.length ? html` (${entry.approvals.join(', ')})` : ''
              }
              · ${timeLeft({ expiresAt: entry.expiresAt, now: input.now })}
              ${expiringBadge({ remindAt: entry.remindAt, now: input.now })}
            </p>
          </li>`,
      )}
    </ol>`;
}

/** A call's page: what it will do, why it asks, who approved, its steps, and the decision form. */
export function callPage(input: {
  signedIn: SignedIn;
  callId: string;
  state: CallState;
  permission: DecisionPermission | undefined;
  now: number;
}): Html {
  const { state, callId, permission } = input;
  const approval = state.approval;
  return layout({
    title: `${state.tool} ${callId.slice(0, 12)}`,
    page: 'call',
    signedIn: input.signedIn,
    content: html`${grantPanel(input.signedIn)}
      <h1>
        ${state.tool}
        <span class="risk risk-${approval?.riskLevel ?? state.riskLevel ?? 'none'}"
          >${approval?.riskLevel ?? state.riskLevel ?? ''}</span
        >
      </h1>
      <p class="meta">
        call <code class="wrap">${callId}</code><br />
        caller <strong>${state.caller}</strong>${
          state.context ? html` · <span class="acting-for">${describeContext(state.context)}</span>` : ''
        }
        · session
        <a href="/sessions/${encodeURIComponent(state.session)}" id="call-session"
          ><code>${state.session}</code></a
        >
      </p>
      ${
        approval
          ? html`<section id="effect">
              <h2>Effect</h2>
              <p class="action" id="effect-action">${previewHeadline(approval.preview)}</p>
              ${previewList(approval.preview, 'effect-preview')}
            </section>`
          : ''
      }
      <section>
        <h2>Validated arguments</h2>
        <pre id="arguments">${JSON.stringify(state.validatedArguments ?? null, null, 2)}</pre>
      </section>
      <section>
        <h2>Why it asks</h2>
        <p id="rule">${state.approvalRule ?? 'no approval rule applied'}</p>
      </section>
      ${
        approval
          ? html`<section id="round">
              <h2>Approvals</h2>
              <p>
                Round ${approval.round}: <strong>${approval.state}</strong>, ${approval.approvals.length} of
                ${approval.quorum}
                ${approval.approvals.length ? html`(${approval.approvals.join(', ')})` : ''} ·
                ${approval.state === 'pending' ? timeLeft({ expiresAt: approval.expiresAt, now: input.now }) : ''}
                ${approval.state === 'pending' ? expiringBadge({ remindAt: approval.remindAt, now: input.now }) : ''}
              </p>
              <p class="meta" id="round-turn">
                Whose turn: ${approval.chain ? chainTurnWords(approval.chain) : ''}
                ${Math.max(0, turnQuorum(approval) - turnApprovals(approval).length)} more approval(s)
                ${
                  (approval.eligible ?? []).filter((name) => !approval.approvals.includes(name)).length
                    ? html`from
                      ${(approval.eligible ?? []).filter((name) => !approval.approvals.includes(name)).join(', ')}`
                    : ''
                }
              </p>
              ${approval.chain ? chainSteps(approval.chain, approval.state === 'pending') : ''}
              <p class="meta" id="round-contract" title="${approval.contractDigest}">
                contract <code>${approval.contractDigest.slice(0, 12)}</code>
              </p>
              ${
                approval.supersedes
                  ? html`<p class="note" id="round-supersedes">
                      Opened in place of round ${approval.supersedes.round}: ${approval.supersedes.reason}.
                    </p>`
                  : ''
              }
              ${
                approval.supersededBecause !== undefined
                  ? html`<p class="refusal" id="round-superseded">
                      This round no longer holds: ${approval.supersededBecause}.
                    </p>`
                  : ''
              }
            </section>`
          : ''
      }
      <section>
        <h2>Steps</h2>
        ${stepList(state.stage)}
      </section>
      ${
        state.decisions.length
          ? html`<section>
              <h2>Decisions</h2>
              <ul class="decisions">
                ${state.decisions.map(
                  (decision) =>
                    html`<li>
                      <strong>${decision.approver}</strong> ${decision.decision} (round ${decision.round}):
                      <span
                        class="outcome outcome-${decision.outcome === 'accepted' ? 'accepted' : 'refused'}"
                        >${decision.outcome}</span
                      >
                      · <time datetime="${decision.at}">${decision.at}</time><br />“${decision.reason}”
                    </li>`,
                )}
              </ul>
            </section>`
          : ''
      }
      ${
        state.edits?.length
          ? html`<section id="edits">
              <h2>Edits</h2>
              <ul class="decisions">
                ${state.edits.map(
                  (edit) =>
                    html`<li>
                      <strong>${edit.approver}</strong> edited round ${edit.round}:
                      ${argumentChanges(edit.proposedArguments, edit.editedArguments).map(
                        (change) =>
                          html`<code>${change.field}</code> ${shownValue(change.proposed)} →
                            <strong>${shownValue(change.edited)}</strong> `,
                      )}
                      · <time datetime="${edit.at}">${edit.at}</time><br />“${edit.reason}”
                    </li>`,
                )}
              </ul>
            </section>`
          : ''
      }
      ${
        state.result
          ? html`<section>
              <h2>Result</h2>
              <p><strong>${state.result.code}</strong> (${state.result.effect}): ${state.result.message}</p>
            </section>`
          : ''
      }
      ${
        approval && permission
          ? decisionForm({
              callId,
              approval,
              permission,
              validatedArguments: state.validatedArguments ?? null,
              inputSchema: approval.state === 'pending' ? state.inputSchema : undefined,
            })
          : ''
      }`,
  });
}

/**
 * What a call's page shows and its script signs: the round's binding with the validated arguments
 * and the preview themselves. The script renders the arguments and the effect from these, computes
 * their digests and refuses to sign when they are not the round's.
 */
export interface CallPageData {
  callId: string;
  runId: string;
  nonce: string;
  argsDigest: string;
  previewDigest: string;
  /** The tool's contract the round is bound to: signed as it is (the browser cannot recompute it). */
  contractDigest: string;
  arguments: Record<string, unknown> | null;
  preview: Record<string, unknown>;
}

/**
 * JSON for a `<script type="application/json">` block: `<`, `>`, `&` and the two line separators
 * escaped as \u sequences, so no value can close the element or start markup; JSON.parse reads the
 * same value back.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function decisionForm(input: {
  callId: string;
  approval: NonNullable<CallState['approval']>;
  permission: DecisionPermission;
  validatedArguments: Record<string, unknown> | null;
  inputSchema: Record<string, unknown> | undefined;
}): Html {
  const { approval, permission } = input;
  const disabled = permission.ok ? '' : 'disabled';
  const data: CallPageData = {
    callId: input.callId,
    runId: approval.runId,
    nonce: approval.nonce,
    argsDigest: approval.argsDigest,
    previewDigest: approval.previewDigest,
    contractDigest: approval.contractDigest,
    arguments: input.validatedArguments,
    preview: approval.preview,
  };
  return html`<section id="decide">
    <h2>Your decision</h2>
    <script type="application/json" id="call-data">
      ${raw(jsonForScript(data))}
    </script>
    ${permission.notes.map((note) => html`<p class="note">${note}</p>`)}
    ${permission.ok ? '' : html`<p class="refusal" id="not-allowed">${permission.reason}</p>`}
    <form id="decision-form" data-call-id="${input.callId}">
      <label for="reason">Reason (a denial's reason is told to the model)</label>
      <textarea id="reason" name="reason" rows="3" maxlength="2000" ${disabled}></textarea>
      <div class="buttons">
        <button type="submit" name="decision" value="approve" id="approve" ${disabled}>Approve</button>
        <button type="submit" name="decision" value="deny" id="deny" class="deny" ${disabled}>Deny</button>
      </div>
      <p id="decision-outcome" role="status"></p>
    </form>
    <details id="signed-envelope">
      <summary>What your key signs</summary>
      <p class="note">
        Your key signs <code>toolgate/v1/decision</code>, a new line, then this envelope as canonical JSON
        (keys sorted, no spaces). <code>decision</code> is the button you press and <code>issuedAt</code> the
        moment you press it; the digests are computed in this browser from the arguments and effect shown
        above, and nothing is signed when they are not the round's. <code>contractDigest</code> names the
        tool's definition the round was opened under: a deploy that changes it refuses your decision.
      </p>
      <pre id="envelope" class="wrap"></pre>
    </details>
    ${
      permission.ok && input.inputSchema && input.validatedArguments
        ? editForm({ schema: input.inputSchema, args: input.validatedArguments })
        : ''
    }
  </section>`;
}

/** One field of a tool's input, as the edit form shows it. */
interface EditField {
  name: string;
  kind: 'enum' | 'integer' | 'number' | 'boolean' | 'string' | 'json';
  options: string[];
  required: boolean;
  description: string;
}

/** The fields of a tool's input JSON Schema, each as the control that edits it. */
export function editFields(schema: Record<string, unknown>): EditField[] {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  return Object.entries(properties).map(([name, property]) => {
    const options = Array.isArray(property.enum)
      ? property.enum.filter((option) => typeof option === 'string')
      : [];
    const type = property.type;
    const kind: EditField['kind'] =
      options.length > 0
        ? 'enum'
        : type === 'integer' || type === 'number' || type === 'boolean' || type === 'string'
          ? type
          : 'json';
    return {
      name,
      kind,
      options,
      required: required.has(name),
      description: typeof property.description === 'string' ? property.description : '',
    };
  });
}

/**
 * Edit, then approve: a form made from the tool's input schema (enums as selects, integers as whole
 * numbers), filled with the validated arguments. The script builds the edited arguments from it, shows
 * the difference field by field, and signs the edit only then; bound parameters are not in the schema,
 * so they stay as they are.
 */
function editForm(input: { schema: Record<string, unknown>; args: Record<string, unknown> }): Html {
  const controls = editFields(input.schema).map((field) => {
    const id = `edit-${field.name}`; // the edit's own reason is #edit-why: a field may be called reason
    const value = input.args[field.name];
    const text = value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
    const attributes = html`id="${id}" name="${field.name}" data-field="${field.name}"
    data-kind="${field.kind}" data-required="${field.required ? 'yes' : 'no'}"`;
    const control =
      field.kind === 'enum'
        ? html`<select ${attributes}>
            ${field.required ? '' : html`<option value="">(none)</option>`}
            ${field.options.map(
              (option) =>
                html`<option value="${option}" ${option === value ? raw('selected') : ''}>${option}</option>`,
            )}
          </select>`
        : field.kind === 'boolean'
          ? html`<input type="checkbox" ${attributes} ${value === true ? raw('checked') : ''} />`
          : field.kind === 'integer' || field.kind === 'number'
            ? html`<input
                type="number"
                step="${field.kind === 'integer' ? '1' : 'any'}"
                inputmode="${field.kind === 'integer' ? 'numeric' : 'decimal'}"
                value="${text}"
                ${attributes}
              />`
            : field.kind === 'string'
              ? html`<input type="text" value="${text}" ${attributes} />`
              : html`<textarea rows="3" ${attributes}>${text}</textarea>`;
    return html`<div class="edit-field">
      <label for="${id}">${field.name}${field.required ? '' : ' (optional)'}</label>
      ${control} ${field.description ? html`<small>${field.description}</small>` : ''}
    </div>`;
  });
  return html`<details id="edit">
    <summary>Edit the arguments, then approve</summary>
    <p class="note">
      The edited arguments are judged again by the tool's contract and the policy, checked and previewed
      again, and asked in a new round: you approve them there, with the new effect in front of you. An edit
      that raises the risk level needs that level's approvers.
    </p>
    <form id="edit-form">
      ${controls}
      <label for="edit-why">Why you edit (the model is told)</label>
      <textarea id="edit-why" rows="2" maxlength="2000"></textarea>
      <div class="buttons">
        <button type="button" id="edit-review">Review the edit</button>
        <button type="submit" id="edit-sign" disabled>Sign the edit</button>
      </div>
      <div id="edit-diff"></div>
      <p id="edit-outcome" role="status"></p>
    </form>
  </details>`;
}

function shownValue(value: unknown): string {
  return value === undefined ? '(absent)' : JSON.stringify(value);
}

const stages: CallState['stage'][] = [
  'validating',
  'checking',
  'awaiting-approval',
  'executing',
  'verifying',
  'recording',
  'done',
];

function stepList(stage: CallState['stage']): Html {
  const current = stages.indexOf(stage);
  return html`<ol class="steps">
    ${stages.map((name, index) => {
      const status = index < current || stage === 'done' ? 'done' : index === current ? 'current' : 'later';
      return html`<li class="step step-${status}">${name}</li>`;
    })}
  </ol>`;
}

/** Decided, expired and refused decisions, from the audit store. */
export function historyPage(input: {
  signedIn: SignedIn;
  closed: HistoryEntry[];
  refused: RefusedAttempt[];
  /** How many refused attempts there were on the page's calls and the open ones. */
  refusedTotal: number;
  /** The page number, from 1 (newest). */
  page: number;
  /** True when an older page follows. */
  more: boolean;
}): Html {
  return layout({
    title: 'History',
    page: 'history',
    signedIn: input.signedIn,
    content: html`<h1>History</h1>
      <nav class="pages" id="history-pages">
        ${input.page > 1 ? html`<a href="/history?page=${input.page - 1}" rel="prev">Newer</a>` : ''}
        <span>page ${input.page}</span>
        ${input.more ? html`<a href="/history?page=${input.page + 1}" rel="next">Older</a>` : ''}
      </nav>
      <section id="closed">
        <h2>Decided and expired</h2>
        ${
          input.closed.length
            ? html`<ol class="cards">
                ${input.closed.map(
                  ({ record }) =>
                    html`<li class="card">
                      ${closedCallHead(record)}
                      <p class="meta">
                        caller <strong>${record.caller}</strong> · ${record.riskLevel ?? ''} · closed
                        <time datetime="${record.finishedAt}">${record.finishedAt}</time>
                      </p>
                      ${
                        (record.decisions ?? []).length
                          ? html`<ul class="decisions">
                              ${(record.decisions ?? []).map(
                                (decision) =>
                                  html`<li>
                                    <strong>${decision.approver}</strong> ${decision.decision} at
                                    <time datetime="${decision.at}">${decision.at}</time>:
                                    “${decision.reason}”
                                  </li>`,
                              )}
                            </ul>`
                          : html`<p class="meta">
                              ${record.code === 'APPROVAL_EXPIRED' ? 'nobody decided in time' : ''}
                            </p>`
                      }
                    </li>`,
                )}
              </ol>`
            : html`<p class="empty">No call has closed after asking for approval yet.</p>`
        }
      </section>
      <section id="refused">
        <h2>Refused decision attempts</h2>
        ${
          input.refused.length < input.refusedTotal
            ? html`<p class="note" id="refused-count">
                Showing the newest ${input.refused.length} of ${input.refusedTotal} refused attempts on these
                calls and the waiting ones.
              </p>`
            : ''
        }
        ${
          input.refused.length
            ? html`<ol class="cards">
                ${input.refused.map(
                  (attempt) =>
                    html`<li class="card">
                      <div class="card-head">
                        <strong>${attempt.approver}</strong> tried to ${attempt.decision}
                        <span class="outcome outcome-refused">${attempt.outcome}</span>
                      </div>
                      <p class="meta">
                        <a href="/calls/${encodeURIComponent(attempt.callId)}"
                          ><code>${attempt.callId.slice(0, 15)}…</code></a
                        >
                        · <time datetime="${attempt.recordedAt}">${attempt.recordedAt}</time>
                        ${attempt.keyId ? html`· key <code>${attempt.keyId}</code>` : ''}
                      </p>
                      <p>${refusalExplanation(attempt.outcome)}</p>
                    </li>`,
                )}
              </ol>`
            : html`<p class="empty">No decision attempt has been refused.</p>`
        }
      </section>`,
  });
}

/**
 * The grants as the grants page lists them: active ones first, the soonest to expire first, then those
 * that ended (revoked, expired, used up), the most recently issued first.
 */
export function orderedGrants(grants: readonly GrantView[]): GrantView[] {
  const active = grants
    .filter((entry) => entry.state === 'active')
    .sort((a, b) => Date.parse(a.grant.expiresAt) - Date.parse(b.grant.expiresAt));
  const ended = grants
    .filter((entry) => entry.state !== 'active')
    .sort((a, b) => Date.parse(b.grant.issuedAt) - Date.parse(a.grant.issuedAt));
  return [...active, ...ended];
}

/**
 * The task queue's standing grants (active, then ended within the last day), each with what it
 * covers, what it used, who signed it and where it stands; an active grant the signed-in approver
 * signed has a form whose script signs its revocation with this browser's key. Every field is text an
 * approver chose: escaped like everything else here.
 */
export function grantsPage(input: { signedIn: SignedIn; grants: readonly GrantView[]; now: number }): Html {
  const grants = orderedGrants(input.grants);
  const activeCount = grants.filter((entry) => entry.state === 'active').length;
  return layout({
    title: 'Grants',
    page: 'grants',
    signedIn: input.signedIn,
    content: html`<h1>Standing grants</h1>
      <p class="note">
        A grant lets a caller's calls of one tool run without asking, within its caps and until it expires.
        One of its approvers, or an operator, revokes it at once. Listed: the active ones, then those that
        ended in the last day.
      </p>
      <p class="meta" id="grants-count">${activeCount} active, ${grants.length - activeCount} ended</p>
      ${
        grants.length
          ? html`<ol class="cards" id="grants">
              ${grants.map((entry) => grantCard({ entry, approver: input.signedIn.approver, now: input.now }))}
            </ol>`
          : html`<p class="empty">No standing grant on this task queue.</p>`
      }`,
  });
}

function grantCard(input: { entry: GrantView; approver: string; now: number }): Html {
  const { entry } = input;
  const { grant } = entry;
  const revocable = entry.state === 'active' && entry.approvers.includes(input.approver);
  return html`<li class="card grant-card" data-grant-id="${grant.grantId}" data-state="${entry.state}">
    <div class="card-head">
      <span
        ><strong class="grant-caller">${grant.caller}</strong> may run
        <strong class="grant-tool">${grant.tool}</strong></span
      >
      <span class="state state-${entry.state}">${entry.state}</span>
    </div>
    <p class="action grant-reason">“${grant.reason}”</p>
    <dl class="preview">
      <div>
        <dt>max level</dt>
        <dd><span class="risk risk-${grant.maxLevel}">${grant.maxLevel}</span></dd>
      </div>
      <div>
        <dt>calls</dt>
        <dd class="grant-calls">${entry.usedCalls} of ${grant.maxCalls}</dd>
      </div>
      <div>
        <dt>amount</dt>
        <dd class="grant-amount">
          ${grant.maxAmount !== undefined ? `${entry.usedAmount} of ${grant.maxAmount}` : `${entry.usedAmount} (no total cap)`}
        </dd>
      </div>
      <div>
        <dt>per call</dt>
        <dd class="grant-per-call">
          ${grant.maxAmountPerCall !== undefined ? `at most ${grant.maxAmountPerCall}` : 'no cap'}
        </dd>
      </div>
      <div>
        <dt>expires</dt>
        <dd>
          <time datetime="${grant.expiresAt}">${grant.expiresAt}</time>
          ${entry.state === 'active' ? html`<br />${timeLeft({ expiresAt: grant.expiresAt, now: input.now })}` : ''}
        </dd>
      </div>
      <div>
        <dt>approvers</dt>
        <dd class="grant-approvers">${entry.approvers.join(', ')}</dd>
      </div>
    </dl>
    <p class="meta">
      grant <code class="wrap">${grant.grantId}</code> · issued
      <time datetime="${grant.issuedAt}">${grant.issuedAt}</time>
    </p>
    ${
      entry.revoked
        ? html`<p class="refusal grant-revoked">
            Revoked by <strong>${entry.revoked.by}</strong> at
            <time datetime="${entry.revoked.at}">${entry.revoked.at}</time>: “${entry.revoked.reason}”
          </p>`
        : ''
    }
    ${
      revocable
        ? html`<form class="revoke-form" data-grant-id="${grant.grantId}">
            <label
              >Reason for revoking (audited)
              <textarea name="reason" rows="2" maxlength="500" required></textarea>
            </label>
            <div class="buttons">
              <button type="submit" class="deny revoke">Revoke</button>
            </div>
            <p class="revoke-outcome" role="status"></p>
          </form>`
        : entry.state === 'active'
          ? html`<p class="note">
              You did not sign this grant: ${entry.approvers.join(' or ')}, or an operator, may revoke it.
            </p>`
          : ''
    }
  </li>`;
}

/** The sign-in page: the page script lists the keys this browser holds and signs the challenge. */
export function loginPage(input: { notice?: string }): Html {
  return layout({
    title: 'Sign in',
    page: 'login',
    content: html`<h1>Sign in</h1>
      ${input.notice ? html`<p class="note">${input.notice}</p>` : ''}
      <p>
        You sign in with the key this browser made when you enrolled it; the key never leaves the browser.
      </p>
      <section id="keys" aria-live="polite"><p class="empty">Looking for keys in this browser…</p></section>
      <p id="login-outcome" role="status"></p>`,
  });
}

/** The enrolment page of one invite; the page script reads the invite's secret from the URL fragment. */
export function enrolPage(input: {
  inviteId: string;
  invite: InviteView | undefined;
  problem?: string;
}): Html {
  const held = input.invite?.invite.invite;
  return layout({
    title: 'Enrol a key',
    page: 'enrol',
    content: html`<h1>Enrol this browser</h1>
      ${
        held && !input.problem
          ? html`<section
              id="invite"
              data-invite-id="${held.inviteId}"
              data-approver="${held.approver}"
              data-invite-public-key="${held.invitePublicKeyHex}"
            >
              <p>
                <strong>${held.operator}</strong> invited <strong>${held.approver}</strong> to enrol a signing
                key (valid until <time datetime="${held.expiresAt}">${held.expiresAt}</time>, usable once).
              </p>
              <p>
                This browser makes a key that cannot be exported, keeps it, and registers its public half.
                Your decisions are signed with it here; the console's server never holds it.
              </p>
              <label for="label">A name for this key</label>
              <input id="label" name="label" value="browser" maxlength="60" />
              <button type="button" id="enrol">Make my key and enrol</button>
            </section>`
          : html`<p class="refusal" id="invite-problem">
              ${input.problem ?? 'INVITE_UNKNOWN: no such invite'}
            </p>`
      }
      <p id="enrol-outcome" role="status"></p>`,
  });
}

/** A page for what cannot be shown (an unknown call). */
export function problemPage(input: { signedIn?: SignedIn; title: string; message: string }): Html {
  return layout({
    title: input.title,
    page: 'problem',
    ...(input.signedIn ? { signedIn: input.signedIn } : {}),
    content: html`<h1>${input.title}</h1>
      <p class="refusal">${input.message}</p>`,
  });
}

function previewHeadline(preview: Record<string, unknown>): string {
  return typeof preview.action === 'string' ? preview.action : '';
}

function previewList(preview: Record<string, unknown>, id?: string): Html {
  const entries = Object.entries(preview).filter(([key]) => key !== 'action');
  return html`<dl class="preview" ${id ? html`id="${id}"` : ''}>
    ${entries.map(
      ([key, value]) =>
        html`<div>
          <dt>${key}</dt>
          <dd>${typeof value === 'string' ? value : JSON.stringify(value)}</dd>
        </div>`,
    )}
  </dl>`;
}

/** The approvals the current turn needs: its chain step's quorum (none once complete), or the round's. */
function turnQuorum(approval: NonNullable<CallState['approval']>): number {
  if (!approval.chain) return approval.quorum;
  return approval.chain.steps[approval.chain.step - 1]?.quorum ?? 0;
}

/** The approvals the current turn has. */
function turnApprovals(approval: NonNullable<CallState['approval']>): string[] {
  return approval.chain
    ? (approval.chain.steps[approval.chain.step - 1]?.approvals ?? [])
    : approval.approvals;
}

/** Whose turn it is in a chain, in words: `group finance (step 2 of 2),`. */
function chainTurnWords(chain: ChainView): string {
  const step = chain.steps[chain.step - 1];
  return step ? `group ${step.group} (step ${chain.step} of ${chain.steps.length}),` : '';
}

/** Where a round stands in its chain: each group in order, done, current (whose turn) or to come. */
function chainSteps(chain: ChainView, open: boolean): Html {
  return html`<ol class="chain" id="chain" aria-label="approval chain">
    ${chain.steps.map(
      (step, index) =>
        html`<li class="chain-step chain-${step.state}" data-group="${step.group}" data-state="${step.state}">
          step ${index + 1}: <strong>${step.group}</strong>, ${step.approvals.length} of ${step.quorum}
          approval(s)${step.approvals.length ? html` (${step.approvals.join(', ')})` : ''}
          ${step.state === 'current' && open ? html`<span class="badge">their turn</span>` : ''}
          ${step.state === 'approved' ? html`<span class="badge">approved</span>` : ''}
        </li>`,
    )}
  </ol>`;
}

/** The badge of a round past its reminder: it expires soon and is still undecided. */
function expiringBadge(input: { remindAt: string | undefined; now: number }): Html | '' {
  if (input.remindAt === undefined || input.now < Date.parse(input.remindAt)) return '';
  return html`<span class="badge badge-expiring">expires soon</span>`;
}

/** Time left as text, with the expiry in a data attribute so the page script counts down. */
function timeLeft(input: { expiresAt: string; now: number }): Html {
  return html`<time class="time-left" datetime="${input.expiresAt}" data-expires-at="${input.expiresAt}"
    >${formatTimeLeft(Date.parse(input.expiresAt) - input.now)}</time
  >`;
}

/** `3h 12m left`, `42s left`, or `expired`. */
export function formatTimeLeft(milliseconds: number): string {
  if (!(milliseconds > 0)) return 'expired';
  const seconds = Math.floor(milliseconds / 1000);
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  if (hours > 0) return `${hours}h ${minutes}m left`;
  if (minutes > 0) return `${minutes}m ${seconds % 60}s left`;
  return `${seconds}s left`;
}

const explanations: Record<string, string> = {
  APPROVER_UNKNOWN: 'the policy names no such approver',
  APPROVER_NOT_ALLOWED: "the approver's grant does not cover the call's risk level",
  SELF_APPROVAL: 'the approver operates the calling agent',
  DIGEST_MISMATCH: "the decision named another call, run, round or arguments than the open round's",
  SIGNATURE_INVALID: "the signature does not verify with the approver's key",
  DECISION_REPLAYED: 'the same decision was already counted',
  ALREADY_DECIDED: 'the call had been decided',
  APPROVAL_EXPIRED: 'the approval window had closed',
  KEY_UNKNOWN: 'the key is not enrolled',
  KEY_REVOKED: 'the key was revoked',
  CALL_NOT_FOUND: 'no such call',
};

/** A refusal code with its meaning in words. */
export function refusalExplanation(code: string): string {
  return Object.hasOwn(explanations, code) ? `${code}: ${explanations[code]}` : code;
}

/**
 * One agent session as its state in the audit store shows it: who it acts for, the steps it used of
 * its budget, its open circuits and the operators' resets, the untrusted text it read, and its calls
 * (each linking to its page), oldest first.
 */
export function sessionPage(input: {
  signedIn: SignedIn;
  stats: SessionStats;
  calls: readonly AuditRecord[];
  /** True when older calls were left out. */
  more?: boolean;
}): Html {
  const { stats, calls } = input;
  const circuits = Object.entries(stats.openCircuits);
  // The store counts every proposal admitted or refused by the budget: past it, the rest is refused.
  const spent = stats.steps >= stats.stepBudget ? ' (spent: what follows is refused STEP_LIMIT)' : '';
  const steps = `${stats.steps} steps proposed, budget ${stats.stepBudget}${spent}`;
  return layout({
    title: `Session ${stats.session.slice(0, 24)}`,
    page: 'session',
    signedIn: input.signedIn,
    content: html`<h1>Session</h1>
      <p class="meta">
        session <code class="wrap" id="session-id">${stats.session}</code><br />
        caller <strong id="session-caller">${stats.caller ?? '(no call yet)'}</strong>${
          stats.context ? html` · <span class="acting-for">${describeContext(stats.context)}</span>` : ''
        }
      </p>
      <section id="session-state">
        <h2>State</h2>
        <p id="session-status">
          ${stats.closed ? html`closed: ${stats.closedReason ?? 'ended'}` : 'open'} ·
          <span id="session-steps">${steps}</span>
          · loop limit ${stats.loopLimit} · a circuit opens after ${stats.circuitThreshold} failures in a row
        </p>
      </section>
      <section id="session-circuits">
        <h2>Open circuits</h2>
        ${
          circuits.length
            ? html`<ul>
                ${circuits.map(
                  ([tool, circuit]) =>
                    html`<li>
                      <strong>${tool}</strong>: ${circuit.code} × ${circuit.count}, open since
                      <time datetime="${circuit.openedAt}">${circuit.openedAt}</time> (${circuit.reason})
                    </li>`,
                )}
              </ul>`
            : html`<p class="empty">No tool is refused in this session.</p>`
        }
        ${
          stats.resets?.length
            ? html`<h3>Resets</h3>
                <ul id="session-resets">
                  ${stats.resets.map(
                    (reset) =>
                      html`<li>
                        <strong>${reset.operator}</strong> reset ${reset.tool ?? 'every tool'} at
                        <time datetime="${reset.at}">${reset.at}</time>: “${reset.reason}”
                      </li>`,
                  )}
                </ul>`
            : ''
        }
      </section>
      ${
        stats.untrusted?.length
          ? html`<section id="session-untrusted">
              <h2>Untrusted text read</h2>
              <ul>
                ${stats.untrusted.map(
                  (read) =>
                    html`<li>
                      <code>${read.source}</code>, read by
                      <a href="/calls/${encodeURIComponent(read.callId)}">${read.callId.slice(0, 24)}</a> at
                      <time datetime="${read.at}">${read.at}</time>
                    </li>`,
                )}
              </ul>
            </section>`
          : ''
      }
      <section id="session-calls">
        <h2>Calls</h2>
        ${input.more ? html`<p class="note" id="session-calls-more">Showing the newest ${calls.length} calls.</p>` : ''}
        ${
          calls.length
            ? html`<ol class="cards">
                ${calls.map(
                  (record) =>
                    html`<li class="card">
                      ${closedCallHead(record)}
                      <p class="meta">
                        effect ${record.effect} · closed
                        <time datetime="${record.finishedAt}">${record.finishedAt}</time>
                      </p>
                    </li>`,
                )}
              </ol>`
            : html`<p class="empty">No call of this session has closed yet.</p>`
        }
      </section>`,
  });
}

/** A closed call's card head: its tool, linking to its page, and the code it ended with. */
function closedCallHead(record: AuditRecord): Html {
  return html`<div class="card-head">
    <a href="/calls/${encodeURIComponent(record.callId)}"><strong>${record.tool}</strong></a>
    <span class="outcome outcome-${record.ok ? 'accepted' : 'refused'}">${record.code}</span>
  </div>`;
}
