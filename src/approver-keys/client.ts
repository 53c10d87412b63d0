import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import type { AuditStore } from '../audit/audit-store';
import { publicKeyHex, signValue } from '../keys/key-files';
import type {
  ApproverKeysView,
  ApproverKeyStatus,
  Enrolment,
  Invite,
  KeyChain,
  KeyRevocation,
  RegistryEvent,
  RegistryReceipt,
  SignedEnrolment,
  SignedInvite,
  SignedKeyRevocation,
} from './protocol';
import {
  addInviteUpdate,
  approverKeysQuery,
  approverKeysWorkflowId,
  approverKeysWorkflowType,
  enrolKeyUpdate,
  keyIdOf,
  keyStatusIn,
  revokeKeyUpdate,
} from './protocol';
import { defaultTaskQueue } from '../shared/temporal';

/*
 * The registry's client side, shared by the CLI and the approvals console: invite (an operator),
 * enrol (an approver's browser or CLI, holding the invite link), revoke (an operator), list, and the
 * status lookup the worker and the minter use. Nothing here holds a key it is not given: the console's
 * server relays what the approver's browser signed and never sees an invite's private half.
 *
 * The registry is a workflow, and whoever holds a raw Temporal client can reset it to before a
 * revocation or terminate it and start an empty one. The audit store, append-only and written for
 * every registry change (by the worker's sink, and here by the admin side), remembers what such a
 * rollback makes the registry forget; so the status lookup, given the audit store, believes the
 * registry only where the audit store does not contradict it (see `crossCheckedKeyStatus`).
 */

/** Where the approvals console listens unless told otherwise; invite links point there. */
export const defaultConsoleUrl = 'http://127.0.0.1:4300';

/** The longest an invite may be valid (the registry refuses longer ones). */
export const maxInviteValidityMs = 7 * 24 * 60 * 60 * 1000;

/** What the registry's client side reads from and writes to the audit store. */
export type RegistryAudit = Pick<AuditStore, 'appendRegistryEvent' | 'acceptedRegistryEventsAbout'>;

/**
 * Which registry: a Temporal client and the task queue whose workers run it (default `toolgate`);
 * with the deployment's audit store, every change sent is logged there too (once per update, with
 * the worker's own record of it) and key statuses are cross-checked against it. Without one, the
 * registry's answer is taken as it is.
 */
export interface ApproverKeysTarget {
  client: Client;
  taskQueue?: string;
  audit?: RegistryAudit;
}

/** A change the registry refused, with its code (see `registryRefusalCodes`) and why; nothing changed. */
export type RegistryRefusal = { accepted: false; code: string; message: string };

/** The registry's answer to a change. */
export type RegistryOutcome = RegistryReceipt | RegistryRefusal;

/** What an operator hands to an approver: the link (its fragment is the invite's secret) and the invite. */
export interface CreatedInvite {
  outcome: RegistryOutcome;
  invite: SignedInvite;
  /** `<console>/enrol/<inviteId>#<invite private key>`: the fragment never reaches a server. */
  link: string;
  /** The invite key's private half (base64url Ed25519 seed), the link's fragment. */
  invitePrivateKey: string;
}

/**
 * Makes an ephemeral invite key, signs the invite with the operator's key and registers it (starting
 * the registry on first use). The invite's private half exists only in the returned link's fragment;
 * it is never sent to Temporal or stored.
 */
export async function inviteApprover(
  input: ApproverKeysTarget & {
    approver: string;
    operator: string;
    operatorKey: KeyObject;
    /** How long the link may be used (default 24 h, at most 7 days). */
    validForMs?: number;
    consoleUrl?: string;
  },
): Promise<CreatedInvite> {
  const inviteKey = generateKeyPairSync('ed25519');
  const inviteId = `inv-${randomUUID()}`;
  const invite: Invite = {
    inviteId,
    approver: input.approver,
    invitePublicKeyHex: publicKeyHex(inviteKey.publicKey),
    operator: input.operator,
    expiresAt: new Date(Date.now() + (input.validForMs ?? 24 * 60 * 60 * 1000)).toISOString(),
  };
  const signed: SignedInvite = {
    invite,
    signature: signValue({ kind: 'invite', value: invite, privateKey: input.operatorKey }),
  };
  const invitePrivateKey = seedOf(inviteKey.privateKey);
  const consoleUrl = (input.consoleUrl ?? defaultConsoleUrl).replace(/\/+$/, '');
  return {
    outcome: await sendToRegistry(input, addInviteUpdate, signed, {
      action: 'addInvite',
      operator: invite.operator,
      approver: invite.approver,
      inviteId,
      detail: `valid until ${invite.expiresAt}`,
    }),
    invite: signed,
    link: `${consoleUrl}/enrol/${encodeURIComponent(inviteId)}#${invitePrivateKey}`,
    invitePrivateKey,
  };
}

/** The invite id and the invite's private half from an invite link. */
export function parseInviteLink(link: string): { inviteId: string; invitePrivateKey: string } {
  const match = /\/enrol\/([^/#?]+)#([A-Za-z0-9_-]{43})$/.exec(link.trim());
  if (!match) throw new Error('not an invite link: expected <console>/enrol/<inviteId>#<key>');
  return { inviteId: decodeURIComponent(match[1]!), invitePrivateKey: match[2]! };
}

/**
 * Signs an enrolment of `privateKey`'s public half with the invite's key (the right to enrol) and the
 * key itself (possession): what an approver's browser or CLI sends. Pure apart from signing.
 */
export function signEnrolment(input: {
  inviteId: string;
  approver: string;
  invitePrivateKey: string;
  privateKey: KeyObject;
  label: string;
}): SignedEnrolment {
  const enrolment: Enrolment = {
    inviteId: input.inviteId,
    approver: input.approver,
    publicKeyHex: publicKeyHex(createPublicKey(input.privateKey)),
    label: input.label,
  };
  return {
    enrolment,
    inviteSignature: signValue({
      kind: 'enrolment',
      value: enrolment,
      privateKey: privateKeyFromSeed(input.invitePrivateKey),
    }),
    keySignature: signValue({ kind: 'enrolment', value: enrolment, privateKey: input.privateKey }),
  };
}

/**
 * Enrols a key through an invite link: reads the invite from the registry, signs the enrolment and
 * sends it. The answer carries the key's chain, which decisions signed with the key attach.
 */
export async function enrolApproverKey(
  input: ApproverKeysTarget & { link: string; privateKey: KeyObject; label: string },
): Promise<{ outcome: RegistryOutcome; chain?: KeyChain }> {
  const { inviteId, invitePrivateKey } = parseInviteLink(input.link);
  const view = await listApproverKeys(input);
  const held = view.invites.find((candidate) => candidate.invite.invite.inviteId === inviteId);
  if (!held) {
    const used = view.keys.some((key) => key.inviteId === inviteId);
    const code = used ? 'INVITE_USED' : 'INVITE_UNKNOWN';
    return {
      outcome: {
        accepted: false,
        code,
        message: `${code}: ${used ? 'this invite was used' : 'no such invite'}`,
      },
    };
  }
  const enrolment = signEnrolment({
    inviteId,
    approver: held.invite.invite.approver,
    invitePrivateKey,
    privateKey: input.privateKey,
    label: input.label,
  });
  const outcome = await sendEnrolment({ ...input, enrolment });
  return outcome.accepted ? { outcome, chain: { invite: held.invite, enrolment } } : { outcome };
}

/** Sends an already signed enrolment (as the console relays the browser's). */
export function sendEnrolment(
  input: ApproverKeysTarget & { enrolment: SignedEnrolment },
): Promise<RegistryOutcome> {
  return sendToRegistry(input, enrolKeyUpdate, input.enrolment, enrolmentEvent(input.enrolment));
}

// What an enrolment names, read defensively: the console relays what a browser sent.
function enrolmentEvent(signed: SignedEnrolment): SentChange {
  const enrolment = (signed as { enrolment?: Partial<Enrolment> } | null)?.enrolment;
  const named = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
  const publicKey = named(enrolment?.publicKeyHex);
  return {
    action: 'enrolKey',
    approver: named(enrolment?.approver),
    inviteId: named(enrolment?.inviteId),
    keyId: publicKey !== undefined ? keyIdOf(publicKey) : undefined,
    detail: `label "${named(enrolment?.label) ?? ''}"`,
  };
}

/** Revokes an enrolled key, signed with the operator's key; decisions signed with it stop counting at once. */
export function revokeApproverKey(
  input: ApproverKeysTarget & { keyId: string; operator: string; operatorKey: KeyObject; reason: string },
): Promise<RegistryOutcome> {
  const revocation: KeyRevocation = {
    keyId: input.keyId,
    operator: input.operator,
    reason: input.reason,
    issuedAt: new Date().toISOString(),
  };
  const signed: SignedKeyRevocation = {
    revocation,
    signature: signValue({ kind: 'key-revocation', value: revocation, privateKey: input.operatorKey }),
  };
  return sendToRegistry(input, revokeKeyUpdate, signed, {
    action: 'revokeKey',
    operator: input.operator,
    keyId: input.keyId,
    detail: input.reason,
  });
}

/** The registry's invites and keys (optionally one approver's); empty when no registry was started yet. */
export async function listApproverKeys(
  input: ApproverKeysTarget & { approver?: string },
): Promise<ApproverKeysView> {
  let view: ApproverKeysView;
  try {
    view = await registryHandle(input).query(approverKeysQuery);
  } catch (error) {
    if ((error as Error).name === 'WorkflowNotFoundError') return { invites: [], keys: [] };
    throw error;
  }
  if (input.approver === undefined) return view;
  return {
    invites: view.invites.filter((held) => held.invite.invite.approver === input.approver),
    keys: view.keys.filter((key) => key.approver === input.approver),
  };
}

/**
 * The registry's status of one key now; `unknown` when there is no registry or no such key, then with
 * the status of `inviteId` (the invite the key's chain names) when it is given. With the audit store,
 * cross-checked against it (see `crossCheckedKeyStatus`): a key it shows revoked is `revoked`, a key
 * whose invite it shows used by another key is `unknown`, whatever the registry answers. Throws when
 * the registry or the audit store cannot be read (callers fail closed).
 */
export async function readApproverKeyStatus(
  input: ApproverKeysTarget & { keyId: string; inviteId?: string },
): Promise<ApproverKeyStatus> {
  const view = await listApproverKeys(input);
  const status =
    input.inviteId === undefined
      ? keyStatusIn(view, input.keyId)
      : keyStatusIn(view, input.keyId, { inviteId: input.inviteId, nowMs: Date.now() });
  if (!input.audit) return status;
  const inviteId = status.status === 'unknown' ? input.inviteId : status.key.inviteId;
  const events = await input.audit.acceptedRegistryEventsAbout({
    keyId: input.keyId,
    ...(inviteId !== undefined ? { inviteId } : {}),
  });
  return crossCheckedKeyStatus({
    status,
    keyId: input.keyId,
    ...(input.inviteId !== undefined ? { inviteId: input.inviteId } : {}),
    events,
  });
}

/**
 * A registry's answer about `keyId` corrected by the accepted registry changes the audit store holds
 * about that key and its invite (`events`, oldest first), for the registry may have been reset or
 * restarted empty since. An invite enrols one key, the first the audit shows enrolled through it: any
 * other key enrolled through it is `unknown`, its invite `used` by that first key (for an unknown key
 * asked with `inviteId`, too); a key the audit shows revoked is `revoked`. A key the registry does
 * not hold stays `unknown`: there is no view of it to answer with, and unknown refuses as well. Only
 * ever makes an answer stricter. Pure.
 */
export function crossCheckedKeyStatus(input: {
  status: ApproverKeyStatus;
  keyId: string;
  /** The invite the asker named (for a key the registry does not hold). */
  inviteId?: string;
  events: readonly RegistryEvent[];
}): ApproverKeyStatus {
  const { status, keyId } = input;
  const accepted = input.events.filter((event) => event.outcome === 'accepted');
  const inviteId = status.status === 'unknown' ? input.inviteId : status.key.inviteId;
  const firstUser =
    inviteId === undefined
      ? undefined
      : accepted.find(
          (event) => event.action === 'enrolKey' && event.inviteId === inviteId && event.keyId !== undefined,
        )?.keyId;
  const usedByAnother = firstUser !== undefined && firstUser !== keyId;
  if (status.status === 'unknown') {
    return usedByAnother && status.invite !== undefined
      ? { status: 'unknown', invite: { status: 'used', by: firstUser } }
      : status;
  }
  if (usedByAnother) return { status: 'unknown', invite: { status: 'used', by: firstUser } };
  if (status.status === 'revoked') return status;
  const revocation = accepted.find((event) => event.action === 'revokeKey' && event.keyId === keyId);
  if (!revocation) return status;
  const { at, operator = '(not recorded)', detail: reason } = revocation;
  return { status: 'revoked', key: { ...status.key, revoked: { at, operator, reason } } };
}

/** The chain of an enrolled key, rebuilt from the registry (all of it public), for decisions signed with the key. */
export async function keyChainOf(
  input: ApproverKeysTarget & { keyId: string },
): Promise<KeyChain | undefined> {
  const view = await listApproverKeys(input);
  const key = view.keys.find((candidate) => candidate.keyId === input.keyId);
  return key ? { invite: key.invite, enrolment: key.enrolment } : undefined;
}

/** What a change sent names, for its audit record; names left `undefined` are left out of it. */
type SentChange = Pick<RegistryEvent, 'action' | 'detail'> & {
  [Name in 'operator' | 'approver' | 'inviteId' | 'keyId']?: string | undefined;
};

/** As the registry does, names in the audit are cut at this length (a refused change may name anything). */
const maxAuditedNameLength = 200;

/**
 * Sends one change with update-with-start (the registry starts on first use) and reads a refusal's
 * code. With the audit store, logs the answer under the update's id, which the worker's sink records
 * it under too: written once whichever comes first, and still written when the worker's sink was
 * lost (a crash after the change). Nothing is logged when no answer came (the sink may still log it).
 */
async function sendToRegistry<Argument>(
  input: ApproverKeysTarget,
  update: UpdateDefinition<RegistryReceipt, [Argument]>,
  argument: Argument,
  change: SentChange,
): Promise<RegistryOutcome> {
  const taskQueue = input.taskQueue ?? defaultTaskQueue;
  const updateId = randomUUID();
  let outcome: RegistryOutcome;
  try {
    outcome = await input.client.workflow.executeUpdateWithStart(update, {
      args: [argument],
      updateId,
      startWorkflowOperation: new WithStartWorkflowOperation(approverKeysWorkflowType, {
        workflowId: approverKeysWorkflowId(taskQueue),
        taskQueue,
        args: [{}],
        workflowIdConflictPolicy: 'USE_EXISTING',
        staticSummary: 'approver keys: invites, enrolled keys, revocations',
      }),
    });
  } catch (error) {
    const cause = (error as { cause?: { type?: string; message?: string } }).cause;
    if (!cause?.type) throw error;
    outcome = { accepted: false, code: cause.type, message: cause.message ?? cause.type };
  }
  if (input.audit) {
    const event: RegistryEvent = {
      updateId,
      action: change.action,
      outcome: outcome.accepted ? 'accepted' : outcome.code,
      detail: outcome.accepted ? change.detail : refusalReason(outcome),
      at: new Date().toISOString(),
    };
    for (const field of ['operator', 'approver', 'inviteId', 'keyId'] as const) {
      const value = change[field];
      if (value !== undefined) event[field] = value.slice(0, maxAuditedNameLength);
    }
    await input.audit.appendRegistryEvent(event);
  }
  return outcome;
}

/** A refusal's reason as the registry's sink words it: its message without the code it starts with. */
function refusalReason(refusal: RegistryRefusal): string {
  const prefix = `${refusal.code}: `;
  return refusal.message.startsWith(prefix) ? refusal.message.slice(prefix.length) : refusal.message;
}

function registryHandle(input: ApproverKeysTarget) {
  return input.client.workflow.getHandle(approverKeysWorkflowId(input.taskQueue ?? defaultTaskQueue));
}

// An Ed25519 private key as its 32-byte seed (base64url), and back: the form an invite link carries.
const pkcs8Prefix = Buffer.from('302e020100300506032b657004220420', 'hex');

function seedOf(privateKey: KeyObject): string {
  const jwk = privateKey.export({ format: 'jwk' }) as { d?: string };
  if (!jwk.d) throw new Error('not an Ed25519 private key');
  return jwk.d;
}

function privateKeyFromSeed(seed: string): KeyObject {
  const bytes = Buffer.from(seed, 'base64url');
  if (bytes.length !== 32) throw new Error('an invite key is 32 bytes, base64url');
  return createPrivateKey({ key: Buffer.concat([pkcs8Prefix, bytes]), format: 'der', type: 'pkcs8' });
}
