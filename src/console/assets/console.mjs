// The approvals console's page script: signs in with the key this browser holds, enrols a new key
// from an invite link, signs decisions and grant revocations, and keeps the queue and its countdowns
// live. Every page is
// rendered by the server; this only adds what needs the key or a timer. Plain ES, no framework.
/* global document, location, history, fetch, setInterval, crypto */
import { canonicalJson, sha256Hex } from './canonical-json.mjs';
import {
  generateSigningKey,
  importInviteKey,
  listSigningKeys,
  loadSigningKey,
  publicKeyHex,
  saveSigningKey,
  signValue,
} from './signing-keys.mjs';

// An invite link carries its secret in the fragment. Whatever page the invite route rendered (the
// enrolment form, or a used, expired or unknown invite), the secret leaves the address bar and the
// history entry at once; only the enrolment form keeps it, in memory.
const inviteSecret = takeInviteSecret();

const body = document.body;
const csrfToken = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';

/** The fragment of an /enrol/ address, removed from the address bar and this history entry; '' elsewhere. */
function takeInviteSecret() {
  if (!location.pathname.startsWith('/enrol/') || !location.hash) return '';
  const secret = location.hash.replace(/^#/, '');
  history.replaceState(null, '', location.pathname + location.search);
  return secret;
}

/**
 * POSTs JSON with the session's CSRF token; the answer's JSON, or a refusal made from the status.
 * @param {string} path
 * @param {unknown} value
 */
async function post(path, value) {
  const response = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', ...(csrfToken ? { 'x-csrf-token': csrfToken } : {}) },
    body: JSON.stringify(value),
  });
  try {
    return { status: response.status, answer: await response.json() };
  } catch {
    return {
      status: response.status,
      answer: { accepted: false, code: `HTTP_${response.status}`, message: '' },
    };
  }
}

/** @param {string} id @param {string} text @param {'ok' | 'refused' | ''} tone */
function say(id, text, tone = '') {
  const element = document.getElementById(id);
  if (!element) return;
  element.textContent = text;
  element.className = tone ? `outcome-${tone === 'ok' ? 'accepted' : 'refused'}` : '';
}

/** `3h 12m left`, `42s left`, or `expired`: as the server writes it. */
function formatTimeLeft(milliseconds) {
  if (!(milliseconds > 0)) return 'expired';
  const seconds = Math.floor(milliseconds / 1000);
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  if (hours > 0) return `${hours}h ${minutes}m left`;
  if (minutes > 0) return `${minutes}m ${seconds % 60}s left`;
  return `${seconds}s left`;
}

function tickCountdowns() {
  for (const element of document.querySelectorAll('[data-expires-at]')) {
    element.textContent = formatTimeLeft(
      Date.parse(element.getAttribute('data-expires-at') ?? '') - Date.now(),
    );
  }
}

function setUpLogout() {
  document.getElementById('logout')?.addEventListener('click', async () => {
    await post('/logout', {});
    location.assign('/login');
  });
}

// The queue: the server renders the cards; this fetches them again every few seconds.
function setUpQueue() {
  const queue = document.getElementById('queue');
  if (!queue) return;
  const source = queue.getAttribute('data-source') ?? '/queue/entries';
  let shown = queue.innerHTML;
  const refresh = async () => {
    try {
      const response = await fetch(source, { credentials: 'same-origin' });
      if (response.status === 401) {
        location.assign('/login');
        return;
      }
      if (!response.ok) return;
      const fragment = await response.text();
      if (fragment !== shown) {
        // Server-rendered, every value escaped there: the same trust as the page itself.
        queue.innerHTML = fragment;
        shown = queue.innerHTML;
        tickCountdowns();
      }
    } catch {
      // The next refresh tries again.
    }
  };
  setInterval(() => void refresh(), 2000);
}

// A call's page: what the approver sees and what their key signs come from one JSON data block. The
// arguments and the effect are rendered here from it, their digests computed here from the same
// values; nothing is signed when they are not the round's. The envelope is shown before it is signed.
function setUpDecision() {
  const form = /** @type {HTMLFormElement | null} */ (document.getElementById('decision-form'));
  const dataBlock = document.getElementById('call-data');
  if (!form || !dataBlock) return;
  const buttons = /** @type {HTMLButtonElement[]} */ ([...form.querySelectorAll('button')]);
  // Buttons the server disabled (not this approver's to decide) stay disabled whatever happens here.
  const allowed = buttons.map((button) => !button.disabled);
  const enable = (on) => buttons.forEach((button, index) => (button.disabled = !(on && allowed[index])));
  enable(false);
  /** @type {{ callId: string, runId: string, nonce: string, argsDigest: string, previewDigest: string, contractDigest: string, arguments: Record<string, unknown> | null, preview: Record<string, unknown> }} */
  let data;
  try {
    data = JSON.parse(dataBlock.textContent ?? '');
  } catch {
    say('decision-outcome', 'Not signing: this page carries no readable call data. Reload it.', 'refused');
    return;
  }
  renderShown(data);
  const reasonBox = /** @type {HTMLTextAreaElement} */ (document.getElementById('reason'));
  const envelopeOf = (decision, reason) => ({
    callId: data.callId,
    runId: data.runId,
    nonce: data.nonce,
    argsDigest: data.argsDigest,
    previewDigest: data.previewDigest,
    // The tool's definition the round was opened under: the workflow and the minter check it.
    contractDigest: data.contractDigest,
    decision,
    approver: body.dataset.approver ?? '',
    reason: reason || `${decision} from the approvals console`,
    issuedAt: new Date().toISOString(),
  });
  const showEnvelope = (envelope) => {
    const shown = document.getElementById('envelope');
    // Keys in the order they are signed in (canonical JSON's), laid out to be read.
    if (shown) shown.textContent = JSON.stringify(JSON.parse(canonicalJson(envelope)), null, 2);
  };
  showEnvelope(envelopeOf('approve', reasonBox.value.trim()));
  reasonBox.addEventListener('input', () => showEnvelope(envelopeOf('approve', reasonBox.value.trim())));

  const checked = checkDigests(data);
  void checked.then((problem) => {
    if (problem) say('decision-outcome', problem, 'refused');
    else enable(true);
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const decision = event.submitter?.value === 'deny' ? 'deny' : 'approve';
    const reason = reasonBox.value.trim();
    if (decision === 'deny' && !reason) {
      say('decision-outcome', 'A denial needs a reason: the model is told it.', 'refused');
      return;
    }
    const problem = await checked;
    if (problem) {
      say('decision-outcome', problem, 'refused');
      return;
    }
    const keyId = body.dataset.keyId ?? '';
    const keyPair = await loadSigningKey({ id: keyId });
    if (!keyPair) {
      say('decision-outcome', `This browser does not hold key ${keyId}: sign in again.`, 'refused');
      return;
    }
    const envelope = envelopeOf(decision, reason);
    // What is signed is what is shown, to the byte.
    showEnvelope(envelope);
    const signature = await signValue({ kind: 'decision', value: envelope, privateKey: keyPair.privateKey });
    enable(false);
    const { answer } = await post(`/calls/${encodeURIComponent(data.callId)}/decisions`, {
      envelope,
      signature,
      keyId,
    });
    if (answer.accepted) {
      say(
        'decision-outcome',
        `Accepted: the call is ${answer.state} (${answer.approvals.length} of ${answer.quorum} approvals). `,
        'ok',
      );
      // The outcome stays on screen until the approver moves on; the link shows the call as it is now.
      const refresh = document.createElement('a');
      refresh.href = location.pathname;
      refresh.textContent = 'See the call now';
      document.getElementById('decision-outcome')?.append(refresh);
    } else {
      say('decision-outcome', `Refused: ${answer.message || answer.code}`, 'refused');
      enable(true);
    }
  });
}

// Edit, then approve: the form made from the tool's input schema builds the edited arguments (bound
// parameters, which the form does not show, stay as the round has them); the difference is shown
// field by field, and only then can the edit be signed (kind `edit`) and sent. The page then opens
// the round that asks for the edited arguments, where the approver approves them.
function setUpEdit() {
  const form = /** @type {HTMLFormElement | null} */ (document.getElementById('edit-form'));
  const dataBlock = document.getElementById('call-data');
  if (!form || !dataBlock) return;
  const data = JSON.parse(dataBlock.textContent ?? '{}');
  const signButton = /** @type {HTMLButtonElement} */ (document.getElementById('edit-sign'));
  const reasonBox = /** @type {HTMLTextAreaElement} */ (document.getElementById('edit-why'));
  /** @type {{ args: Record<string, unknown> } | undefined} */
  let reviewed;
  const invalidate = () => {
    reviewed = undefined;
    signButton.disabled = true;
  };
  form.addEventListener('input', invalidate);
  form.addEventListener('change', invalidate);

  document.getElementById('edit-review')?.addEventListener('click', async () => {
    invalidate();
    const built = editedArguments(form, data.arguments ?? {});
    if (!built.ok) return say('edit-outcome', built.problem, 'refused');
    const changes = changedFields(data.arguments ?? {}, built.args);
    const diff = document.getElementById('edit-diff');
    if (!changes.length) {
      diff?.replaceChildren();
      return say('edit-outcome', 'Nothing changed: approve or deny the call as it is.', 'refused');
    }
    const problem = await checkDigests(data);
    if (problem) return say('edit-outcome', problem, 'refused');
    const list = document.createElement('ul');
    list.className = 'edit-diff';
    for (const change of changes) {
      const item = document.createElement('li');
      const field = document.createElement('code');
      field.textContent = change.field;
      const after = document.createElement('strong');
      after.textContent = shown(change.after);
      item.append(field, ` ${shown(change.before)} → `, after);
      list.append(item);
    }
    diff?.replaceChildren(list);
    reviewed = { args: built.args };
    signButton.disabled = false;
    say('edit-outcome', 'Check the difference, then sign the edit.', '');
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (!reviewed) return say('edit-outcome', 'Review the edit first.', 'refused');
    const reason = reasonBox.value.trim();
    if (!reason) return say('edit-outcome', 'An edit needs a reason: the model is told it.', 'refused');
    const keyId = body.dataset.keyId ?? '';
    const keyPair = await loadSigningKey({ id: keyId });
    if (!keyPair)
      return say('edit-outcome', `This browser does not hold key ${keyId}: sign in again.`, 'refused');
    const editedArgs = reviewed.args;
    const envelope = {
      callId: data.callId,
      runId: data.runId,
      nonce: data.nonce,
      argsDigest: data.argsDigest,
      previewDigest: data.previewDigest,
      contractDigest: data.contractDigest,
      editedArgs,
      editedDigest: await sha256Hex(canonicalJson(editedArgs)),
      approver: body.dataset.approver ?? '',
      reason,
      issuedAt: new Date().toISOString(),
    };
    const signature = await signValue({ kind: 'edit', value: envelope, privateKey: keyPair.privateKey });
    signButton.disabled = true;
    const { answer } = await post(`/calls/${encodeURIComponent(data.callId)}/edits`, {
      envelope,
      signature,
      keyId,
    });
    if (answer.accepted) {
      say('edit-outcome', `Accepted: the call is now "${answer.riskLevel}". Opening the new round…`, 'ok');
      location.assign(`${location.pathname}?after=${encodeURIComponent(String(answer.round))}`);
    } else {
      say('edit-outcome', `Refused: ${answer.message || answer.code}`, 'refused');
      signButton.disabled = false;
    }
  });
}

/**
 * The edited arguments from the form: each control read by its kind (an integer must be a whole
 * number, JSON must parse), an optional field left empty removed; fields the form does not show
 * (bound parameters) kept as they are.
 * @param {HTMLFormElement} form
 * @param {Record<string, unknown>} current
 * @returns {{ ok: true, args: Record<string, unknown> } | { ok: false, problem: string }}
 */
function editedArguments(form, current) {
  const args = { ...current };
  for (const control of form.querySelectorAll('[data-field]')) {
    const field = control.getAttribute('data-field') ?? '';
    const kind = control.getAttribute('data-kind');
    const required = control.getAttribute('data-required') === 'yes';
    const input = /** @type {HTMLInputElement} */ (control);
    if (kind === 'boolean') {
      args[field] = input.checked;
      continue;
    }
    const text = input.value.trim();
    if (text === '') {
      if (required) return { ok: false, problem: `${field} is required` };
      delete args[field];
      continue;
    }
    if (kind === 'integer' || kind === 'number') {
      const number = Number(text);
      if (!Number.isFinite(number)) return { ok: false, problem: `${field} must be a number` };
      if (kind === 'integer' && !Number.isInteger(number)) {
        return { ok: false, problem: `${field} must be a whole number (cents, not ${text})` };
      }
      args[field] = number;
    } else if (kind === 'json') {
      try {
        args[field] = JSON.parse(text);
      } catch {
        return { ok: false, problem: `${field} must be JSON` };
      }
    } else args[field] = text;
  }
  return { ok: true, args };
}

/** @param {Record<string, unknown>} before @param {Record<string, unknown>} after */
function changedFields(before, after) {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((field) => canonicalJson(before[field] ?? null) !== canonicalJson(after[field] ?? null))
    .map((field) => ({ field, before: before[field], after: after[field] }));
}

/** @param {unknown} value */
function shown(value) {
  return value === undefined ? '(absent)' : JSON.stringify(value);
}

/**
 * Why the page must not sign, or '' when the arguments and the effect it shows are the round's: their
 * digests, computed here, equal the round's `argsDigest` and `previewDigest`.
 * @param {{ arguments: unknown, preview: unknown, argsDigest: string, previewDigest: string }} data
 * @returns {Promise<string>}
 */
async function checkDigests(data) {
  const argsDigest = await sha256Hex(canonicalJson(data.arguments));
  const previewDigest = await sha256Hex(canonicalJson(data.preview));
  const wrong = [
    argsDigest === data.argsDigest
      ? ''
      : `the arguments shown hash to ${argsDigest}, the round's argsDigest is ${data.argsDigest}`,
    previewDigest === data.previewDigest
      ? ''
      : `the effect shown hashes to ${previewDigest}, the round's previewDigest is ${data.previewDigest}`,
  ].filter(Boolean);
  return wrong.length
    ? `Not signing: what this page shows is not what the round asks you to approve (${wrong.join('; ')}). Reload the page; if this stays, tell an operator.`
    : '';
}

/**
 * Renders the arguments and the effect from the page's data, as text: what the approver reads is
 * what the digests were computed from.
 * @param {{ arguments: unknown, preview: Record<string, unknown> }} data
 */
function renderShown(data) {
  const shownArguments = document.getElementById('arguments');
  if (shownArguments) shownArguments.textContent = JSON.stringify(data.arguments ?? null, null, 2);
  const preview = data.preview ?? {};
  const action = document.getElementById('effect-action');
  if (action) action.textContent = typeof preview.action === 'string' ? preview.action : '';
  const list = document.getElementById('effect-preview');
  if (!list) return;
  list.replaceChildren(
    ...Object.entries(preview)
      .filter(([key]) => key !== 'action')
      .map(([key, value]) => {
        const row = document.createElement('div');
        const term = document.createElement('dt');
        term.textContent = key;
        const detail = document.createElement('dd');
        detail.textContent = typeof value === 'string' ? value : JSON.stringify(value);
        row.append(term, detail);
        return row;
      }),
  );
}

// The grants page: each revoke form signs a revocation of its grant with this browser's key (kind
// `grant-revocation`, as toolgate's `revokeGrant` signs it with a key file) and posts it; the
// workers judge it. The answer is shown on the card; the server-rendered page says the rest on reload.
function setUpGrants() {
  for (const form of /** @type {HTMLFormElement[]} */ ([...document.querySelectorAll('form.revoke-form')])) {
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void revoke(form);
    });
  }
}

/** @param {HTMLFormElement} form */
async function revoke(form) {
  const card = form.closest('li[data-grant-id]');
  const outcome = form.querySelector('.revoke-outcome');
  const button = /** @type {HTMLButtonElement | null} */ (form.querySelector('button'));
  const reasonBox = /** @type {HTMLTextAreaElement | null} */ (form.querySelector('textarea'));
  /** @param {string} text @param {'ok' | 'refused'} tone */
  const tell = (text, tone) => {
    if (!outcome) return;
    outcome.textContent = text;
    outcome.className = `revoke-outcome outcome-${tone === 'ok' ? 'accepted' : 'refused'}`;
  };
  const reason = reasonBox?.value.trim() ?? '';
  if (!reason) return tell('A revocation needs a reason: it is audited.', 'refused');
  const keyId = body.dataset.keyId ?? '';
  const keyPair = await loadSigningKey({ id: keyId });
  if (!keyPair) return tell(`This browser does not hold key ${keyId}: sign in again.`, 'refused');
  const grantId = form.dataset.grantId ?? '';
  const revocation = {
    revocationId: crypto.randomUUID(),
    grantId,
    by: { approver: body.dataset.approver ?? '' },
    reason,
    issuedAt: new Date().toISOString(),
  };
  const signature = await signValue({
    kind: 'grant-revocation',
    value: revocation,
    privateKey: keyPair.privateKey,
  });
  if (button) button.disabled = true;
  const { answer } = await post(`/grants/${encodeURIComponent(grantId)}/revocations`, {
    revocation,
    signature,
    keyId,
  });
  if (answer.accepted) {
    const state = String(answer.grant?.state ?? 'revoked');
    tell(`Revoked: the grant is ${state}; no call uses it from now on.`, 'ok');
    const badge = card?.querySelector('.state');
    if (badge) {
      badge.textContent = state;
      badge.className = `state state-${state}`;
    }
    card?.setAttribute('data-state', state);
    if (reasonBox) reasonBox.disabled = true;
    return;
  }
  const code = String(answer.code ?? '');
  const message = String(answer.message ?? '');
  tell(`Refused: ${message.startsWith(code) ? message : `${code}: ${message}`}`, 'refused');
  if (button) button.disabled = false;
}

// Sign-in: the keys this browser holds, each a button that answers the server's challenge.
async function setUpLogin() {
  const list = document.getElementById('keys');
  if (!list) return;
  const keys = await listSigningKeys();
  list.replaceChildren();
  if (!keys.length) {
    const empty = document.createElement('p');
    empty.className = 'empty';
    empty.textContent =
      'This browser holds no enrolled key. Ask an operator for an invite link (toolgate approvers invite) and open it here.';
    list.append(empty);
    return;
  }
  for (const key of keys) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'key';
    button.dataset.keyId = key.id;
    button.textContent = `Sign in as ${key.approver} (${key.label}, key ${key.id})`;
    button.addEventListener('click', () => void signIn(key));
    list.append(button);
  }
}

/** @param {{ id: string, approver: string }} key */
async function signIn(key) {
  const keyPair = await loadSigningKey({ id: key.id });
  if (!keyPair) return say('login-outcome', 'The key is gone from this browser.', 'refused');
  const issued = await post('/login/challenge', { approver: key.approver, keyId: key.id });
  if (!issued.answer.challenge) return say('login-outcome', `Refused: ${issued.answer.message}`, 'refused');
  const { challenge } = issued.answer;
  const signature = await signValue({ kind: 'login', value: challenge, privateKey: keyPair.privateKey });
  const { answer } = await post('/login', { challenge, signature });
  if (answer.ok) location.assign('/');
  else say('login-outcome', `Refused: ${answer.message || answer.code}`, 'refused');
}

// Enrolment: the invite's secret is the URL's fragment, which no request carries.
function setUpEnrolment() {
  const invite = document.getElementById('invite');
  if (!invite) return;
  const secret = inviteSecret;
  const button = /** @type {HTMLButtonElement} */ (document.getElementById('enrol'));
  if (!secret) {
    say(
      'enrol-outcome',
      'This link has lost its secret part (after the #): open the whole link again.',
      'refused',
    );
    button.disabled = true;
    return;
  }
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const data = invite.dataset;
      const label =
        /** @type {HTMLInputElement} */ (document.getElementById('label')).value.trim() || 'browser';
      const inviteKey = await importInviteKey(secret);
      const keyPair = await generateSigningKey();
      const enrolment = {
        inviteId: data.inviteId,
        approver: data.approver,
        publicKeyHex: await publicKeyHex(keyPair.publicKey),
        label,
      };
      const signed = {
        enrolment,
        inviteSignature: await signValue({ kind: 'enrolment', value: enrolment, privateKey: inviteKey }),
        keySignature: await signValue({
          kind: 'enrolment',
          value: enrolment,
          privateKey: keyPair.privateKey,
        }),
      };
      const { answer } = await post(`/enrol/${encodeURIComponent(data.inviteId ?? '')}`, {
        enrolment: signed,
      });
      if (!answer.accepted) {
        say('enrol-outcome', `Refused: ${answer.message || answer.code}`, 'refused');
        return;
      }
      await saveSigningKey({ id: answer.keyId, keyPair, approver: enrolment.approver ?? '', label });
      const outcome = document.getElementById('enrol-outcome');
      if (outcome) {
        outcome.className = 'outcome-accepted';
        outcome.textContent = `Enrolled key ${answer.keyId} for ${enrolment.approver}. `;
        const link = document.createElement('a');
        link.href = '/login';
        link.id = 'to-login';
        link.textContent = 'Sign in';
        outcome.append(link);
      }
    } catch (error) {
      say(
        'enrol-outcome',
        `Could not enrol: ${error instanceof Error ? error.message : String(error)}`,
        'refused',
      );
      button.disabled = false;
    }
  });
}

setUpLogout();
tickCountdowns();
setInterval(tickCountdowns, 1000);
switch (body.dataset.page) {
  case 'queue':
    setUpQueue();
    break;
  case 'call':
    setUpDecision();
    setUpEdit();
    break;
  case 'login':
    void setUpLogin();
    break;
  case 'enrol':
    setUpEnrolment();
    break;
  case 'grants':
    setUpGrants();
    break;
  default:
    break;
}
