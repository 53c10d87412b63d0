// The approvals console's page script: signs in with the key this browser holds, enrols a new key
// from an invite link, signs decisions, and keeps the queue and its countdowns live. Every page is
// rendered by the server; this only adds what needs the key or a timer. Plain ES, no framework.
/* global document, location, history, fetch, setInterval */
import {
  generateSigningKey,
  importInviteKey,
  listSigningKeys,
  loadSigningKey,
  publicKeyHex,
  saveSigningKey,
  signValue,
} from './signing-keys.mjs';

const body = document.body;
const csrfToken = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';

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

// A call's page: builds the envelope the CLI builds, signs it here, and posts it for relaying.
function setUpDecision() {
  const form = document.getElementById('decision-form');
  if (!form) return;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const decision = event.submitter?.value === 'deny' ? 'deny' : 'approve';
    const reason = /** @type {HTMLTextAreaElement} */ (document.getElementById('reason')).value.trim();
    if (decision === 'deny' && !reason) {
      say('decision-outcome', 'A denial needs a reason: the model is told it.', 'refused');
      return;
    }
    const keyId = body.dataset.keyId ?? '';
    const keyPair = await loadSigningKey({ id: keyId });
    if (!keyPair) {
      say('decision-outcome', `This browser does not hold key ${keyId}: sign in again.`, 'refused');
      return;
    }
    const data = form.dataset;
    const envelope = {
      callId: data.callId,
      runId: data.runId,
      nonce: data.nonce,
      argsDigest: data.argsDigest,
      previewDigest: data.previewDigest,
      decision,
      approver: body.dataset.approver,
      reason: reason || `${decision} from the approvals console`,
      issuedAt: new Date().toISOString(),
    };
    const signature = await signValue({ kind: 'decision', value: envelope, privateKey: keyPair.privateKey });
    for (const button of form.querySelectorAll('button')) button.disabled = true;
    const { answer } = await post(`/calls/${encodeURIComponent(data.callId ?? '')}/decisions`, {
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
      for (const button of form.querySelectorAll('button')) button.disabled = false;
    }
  });
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
  const secret = location.hash.replace(/^#/, '');
  // Out of the address bar and the history at once: the link is usable once and should not linger.
  history.replaceState(null, '', location.pathname);
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
    break;
  case 'login':
    void setUpLogin();
    break;
  case 'enrol':
    setUpEnrolment();
    break;
  default:
    break;
}
