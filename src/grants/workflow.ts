import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { GrantActivities, HeldGrantRecord } from './activities';
import type {
  GrantEvent,
  GrantReceipt,
  GrantUse,
  GrantUseRequest,
  GrantUseStatus,
  GrantView,
  SignedGrant,
  SignedGrantRevocation,
} from './protocol';
import {
  addGrantUpdate,
  grantRefusesCall,
  grantShapeProblem,
  grantsQuery,
  grantStateOf,
  grantUseQuery,
  releaseGrantUpdate,
  revocationShapeProblem,
  revokeGrantUpdate,
  revokerName,
  useGrantUpdate,
} from './protocol';
import { refuse, refuseIf } from '../shared/refusal';

/** Nothing is carried across continue-as-new: every run rebuilds its grants from the audit store. */
export interface GrantsInput {
  /** Continue as new after this many accepted updates in one run (default 500), besides Temporal's suggestion. */
  continueAsNewAfter?: number;
}

/** A grant that ended (revoked, expired, used up) is still listed for this long, then dropped from memory. */
const endedKeptMs = 24 * 60 * 60 * 1000;

const checks = proxyLocalActivities<GrantActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 3, initialInterval: '200ms' },
});

/** One use held: the call and run that took it, for which caller, tool, level and amount, and when. */
type HeldUse = Omit<Extract<GrantUseStatus, { held: true }>, 'held'>;

/** A grant held by the workflow: the signed grant, who signed it, its uses, and its revocation. */
class HeldGrant {
  /** The uses held, by reservation: which call and run took each, for what, when. */
  readonly uses: Map<string, HeldUse>;
  revoked?: { by: string; reason: string; at: string };

  constructor(
    readonly signed: SignedGrant,
    readonly approvers: string[],
    restored?: HeldGrantRecord,
  ) {
    this.uses = new Map(restored?.uses ?? []);
    if (restored?.revoked) this.revoked = restored.revoked;
  }

  get used(): { calls: number; amount: number } {
    let amount = 0;
    for (const use of this.uses.values()) amount += use.amount;
    return { calls: this.uses.size, amount };
  }

  view(nowMs: number): GrantView {
    const { grant } = this.signed;
    const used = this.used;
    return {
      grant,
      approvers: [...this.approvers],
      state: grantStateOf({ grant, revoked: this.revoked !== undefined, usedCalls: used.calls, nowMs }),
      usedCalls: used.calls,
      usedAmount: used.amount,
      remainingCalls: Math.max(0, grant.maxCalls - used.calls),
      ...(grant.maxAmount !== undefined
        ? { remainingAmount: Math.max(0, grant.maxAmount - used.amount) }
        : {}),
      calls: [...this.uses.values()].map((use) => use.callId),
      ...(this.revoked ? { revoked: this.revoked } : {}),
    };
  }

  /** When it stopped being usable (revoked, expired, or its last call taken), for pruning; undefined while usable. */
  endedAtMs(nowMs: number): number | undefined {
    if (this.revoked) return Date.parse(this.revoked.at);
    const expiresAtMs = Date.parse(this.signed.grant.expiresAt);
    if (nowMs >= expiresAtMs) return expiresAtMs;
    if (this.uses.size >= this.signed.grant.maxCalls) {
      return Math.max(...[...this.uses.values()].map((use) => Date.parse(use.usedAt)));
    }
    return undefined;
  }
}

/**
 * The standing grants of a task queue (`toolgate-grants:<queue>`). A grant is added by its approvers'
 * signatures (the worker judges them against its policy and audits the attempt), revoked by one of
 * them or an operator, and used by calls: each use is taken in one update (workflows run their updates
 * one at a time, and the use is counted before the handler awaits anything), so concurrent sessions
 * never take more calls or amount than the grant allows. Every accepted change and every use and
 * release is written to the audit store before it is answered, and each run rebuilds its grants from
 * there: a terminated or crafted run holds exactly what the approvers signed and the calls used.
 */
export async function toolgateGrants(input: GrantsInput = {}): Promise<void> {
  const grants = new StandingGrants();

  setHandler(grantsQuery, () => grants.view());
  setHandler(grantUseQuery, (request) => grants.useStatus(request));
  setHandler(addGrantUpdate, (signed) => grants.add(signed), {
    validator: (signed: SignedGrant) => grants.validateAdd(signed),
  });
  setHandler(revokeGrantUpdate, (signed) => grants.revoke(signed), {
    validator: (signed: SignedGrantRevocation) => grants.validateRevoke(signed),
  });
  setHandler(useGrantUpdate, (request) => grants.use(request), { validator: validUse });
  setHandler(releaseGrantUpdate, (request) => grants.release(request), { validator: validRelease });

  grants.restore(await checks.restoreGrants());

  const limit = input.continueAsNewAfter ?? 500;
  for (;;) {
    // Wakes at least hourly to drop grants that ended more than a day ago.
    await condition(() => grants.updates >= limit || workflowInfo().continueAsNewSuggested, '1h');
    if (grants.updates >= limit || workflowInfo().continueAsNewSuggested) break;
    grants.prune(Date.now());
  }
  await condition(allHandlersFinished);
  await continueAsNew<typeof toolgateGrants>({
    ...(input.continueAsNewAfter !== undefined ? { continueAsNewAfter: input.continueAsNewAfter } : {}),
  });
}

/** The grants a task queue holds, the ids it accepted, and the rules each change and use passes. */
class StandingGrants {
  /** Updates accepted in this run (the workflow continues as new after its limit). */
  updates = 0;
  private readonly grants = new Map<string, HeldGrant>();
  /** Every grant and revocation id ever accepted (from the audit store, then this run): none counts twice. */
  private readonly seenGrants = new Set<string>();
  private readonly seenRevocations = new Set<string>();
  private readonly inFlight = new Set<string>();
  private restored = false;

  view(): { grants: GrantView[] } {
    const nowMs = Date.now();
    return { grants: [...this.grants.values()].map((held) => held.view(nowMs)) };
  }

  useStatus({ grantId, reservationId }: { grantId: string; reservationId: string }): GrantUseStatus {
    const use = this.grants.get(grantId)?.uses.get(reservationId);
    return use ? { held: true, ...use } : { held: false };
  }

  /** What the audit store holds: every run starts from it. */
  restore(restored: Awaited<ReturnType<GrantActivities['restoreGrants']>>): void {
    for (const id of restored.seenGrants ?? []) this.seenGrants.add(id);
    for (const id of restored.seenRevocations ?? []) this.seenRevocations.add(id);
    for (const record of restored.grants) {
      this.grants.set(record.signed.grant.grantId, new HeldGrant(record.signed, record.approvers, record));
    }
    this.restored = true;
  }

  /** Drops the grants that ended more than a day ago. */
  prune(nowMs: number): void {
    for (const [grantId, held] of this.grants) {
      const endedAtMs = held.endedAtMs(nowMs);
      if (endedAtMs !== undefined && nowMs - endedAtMs > endedKeptMs) this.grants.delete(grantId);
    }
  }

  /** Adds a grant its approvers signed (the worker judges the signatures against its policy). */
  async add(signed: SignedGrant): Promise<GrantReceipt> {
    const { grantId } = signed.grant;
    // Attempts at one grant id are judged one after the other: the first accepted wins.
    await this.takeTurn(grantId);
    try {
      refuseIf(
        this.seenGrants.has(grantId) || this.grants.has(grantId),
        'GRANT_REPLAYED',
        'this grant was added already',
      );
      const verdict = await checks.checkGrant(signed);
      // A refused grant may come back with what it lacked (a second approver's signature); an
      // accepted one never counts twice.
      if (!verdict.ok) refuse(verdict.code, verdict.reason);
      this.seenGrants.add(grantId);
      const held = new HeldGrant(signed, verdict.approvers);
      this.grants.set(grantId, held);
      this.updates++;
      return { accepted: true, grant: held.view(Date.now()) };
    } finally {
      this.inFlight.delete(grantId);
    }
  }

  validateAdd(signed: SignedGrant): void {
    const problem = grantShapeProblem(signed);
    if (problem) refuse('GRANT_INVALID', problem);
    refuseIf(this.seenGrants.has(signed.grant.grantId), 'GRANT_REPLAYED', 'this grant was sent already');
  }

  /** Revokes a grant, by one of its approvers or an operator. */
  async revoke(signed: SignedGrantRevocation): Promise<GrantReceipt> {
    const { revocation } = signed;
    await this.takeTurn(revocation.revocationId);
    try {
      refuseIf(
        this.seenRevocations.has(revocation.revocationId),
        'GRANT_REPLAYED',
        'this revocation was sent already',
      );
      const held = this.grants.get(revocation.grantId);
      refuseIf(!held, 'GRANT_UNKNOWN', `no grant ${revocation.grantId} is held on this task queue`);
      const state = held!.view(Date.now()).state;
      // A used-up grant is revoked too: a use given back would otherwise bring it back.
      refuseIf(
        state === 'revoked' || state === 'expired',
        'GRANT_NOT_ACTIVE',
        `grant ${revocation.grantId} is ${state} already`,
      );
      const verdict = await checks.checkRevocation({ revocation: signed, grant: held!.signed });
      if (!verdict.ok) refuse(verdict.code, verdict.reason);
      this.seenRevocations.add(revocation.revocationId);
      // Revoked at once: no use is taken after this line, whatever the audit write below meant to keep.
      held!.revoked ??= {
        by: revokerName(revocation.by),
        reason: revocation.reason,
        at: new Date(Date.now()).toISOString(),
      };
      this.updates++;
      return { accepted: true, grant: held!.view(Date.now()) };
    } finally {
      this.inFlight.delete(revocation.revocationId);
    }
  }

  validateRevoke(signed: SignedGrantRevocation): void {
    const problem = revocationShapeProblem(signed);
    if (problem) refuse('GRANT_INVALID', problem);
    refuseIf(
      this.seenRevocations.has(signed.revocation.revocationId),
      'GRANT_REPLAYED',
      'this revocation was sent already',
    );
  }

  /** Takes a use of the grant that covers the call and expires first, counted before anything is awaited. */
  async use(request: GrantUseRequest): Promise<GrantUse> {
    await condition(() => this.restored);
    const nowMs = Date.now();
    // A use asked again (a retried activity, or a write proposed again after an effect that may
    // have happened) is answered from what is held, never counted twice; but only for the very call
    // it was taken for: the same reservation with another amount, caller, tool or level is not it.
    for (const held of this.grants.values()) {
      const use = held.uses.get(request.reservationId);
      if (!use) continue;
      const same =
        use.caller === request.caller &&
        use.tool === request.tool &&
        use.riskLevel === request.riskLevel &&
        use.amount === (request.amount ?? 0);
      return same ? this.useAnswer(held) : { ok: false };
    }
    const candidates = [...this.grants.values()]
      .filter(
        (held) =>
          !held.revoked &&
          grantRefusesCall({ grant: held.signed.grant, used: held.used, call: request, nowMs }) === undefined,
      )
      .sort((a, b) => Date.parse(a.signed.grant.expiresAt) - Date.parse(b.signed.grant.expiresAt));
    const chosen = candidates[0];
    if (!chosen) return { ok: false };
    // Counted before anything is awaited: a use that arrives meanwhile sees this one.
    const use: HeldUse = {
      callId: request.callId,
      runId: request.runId,
      caller: request.caller,
      tool: request.tool,
      riskLevel: request.riskLevel,
      amount: request.amount ?? 0,
      usedAt: new Date(nowMs).toISOString(),
    };
    chosen.uses.set(request.reservationId, use);
    const event = this.grantEvent(chosen, {
      action: 'use-grant',
      reservationId: request.reservationId,
      ...use,
    });
    try {
      await checks.recordGrantEvent(event);
    } catch (error) {
      // Not recorded, not used: the call waits for a human instead.
      chosen.uses.delete(request.reservationId);
      throw error;
    }
    this.updates++;
    return this.useAnswer(chosen);
  }

  /** Gives a use back, only for the run that took it, once the audit store has the release. */
  async release({ grantId, reservationId, runId }: GrantRelease): Promise<{ released: boolean }> {
    await condition(() => this.restored);
    const held = this.grants.get(grantId);
    const use = held?.uses.get(reservationId);
    if (!held || !use) return { released: false };
    // Only the run that took a use gives it back: a later run of the same write, which found it
    // held (its earlier run's effect unknown), never frees it, whatever that run ends with.
    if (runId !== undefined && use.runId !== runId) return { released: false };
    // Recorded first: until the audit store has it, the use keeps counting (the safe side).
    await checks.recordGrantEvent(
      this.grantEvent(held, { action: 'release-grant', reservationId, callId: use.callId, runId: use.runId }),
    );
    held.uses.delete(reservationId);
    this.updates++;
    return { released: true };
  }

  /**
   * Takes `id` (`inFlight`) once it is free to be judged; the caller gives it back when done. The look
   * and the take happen with nothing awaited between them: every condition that comes true in one
   * activation is released in the same pass, so each waiter looks again and only the first takes it.
   */
  private async takeTurn(id: string): Promise<void> {
    while (!this.restored || this.inFlight.has(id)) {
      await condition(() => this.restored && !this.inFlight.has(id));
    }
    this.inFlight.add(id);
  }

  private useAnswer(held: HeldGrant): GrantUse {
    const used = held.used;
    return { ok: true, grant: held.signed, usedCalls: used.calls, usedAmount: used.amount };
  }

  private grantEvent(
    held: HeldGrant,
    event: Pick<
      GrantEvent,
      'action' | 'reservationId' | 'callId' | 'runId' | 'amount' | 'usedAt' | 'riskLevel'
    > & { action: 'use-grant' | 'release-grant'; reservationId: string; runId: string },
  ): GrantEvent {
    const { grant } = held.signed;
    // One use or release per grant, reservation and run: ids no grant id (a UUID) can take.
    const kind = event.action === 'use-grant' ? 'use' : 'release';
    const changeId = `${kind}:${grant.grantId}:${event.reservationId}:${event.runId}`;
    return {
      changeId,
      grantId: grant.grantId,
      tool: grant.tool,
      caller: grant.caller,
      outcome: 'accepted',
      ...event,
    };
  }
}

/** A release as its update carries it. */
type GrantRelease = { grantId: string; reservationId: string; runId?: string };

function validUse(request: GrantUseRequest): void {
  if (
    typeof request?.reservationId !== 'string' ||
    typeof request.callId !== 'string' ||
    typeof request.runId !== 'string' ||
    typeof request.caller !== 'string' ||
    typeof request.tool !== 'string' ||
    typeof request.riskLevel !== 'string' ||
    (request.amount !== undefined && (!Number.isSafeInteger(request.amount) || request.amount < 0))
  ) {
    refuse('GRANT_INVALID', 'a use names its reservation, call, caller, tool, risk level and amount');
  }
}

function validRelease(request: GrantRelease | null): void {
  if (
    typeof request?.grantId !== 'string' ||
    typeof request.reservationId !== 'string' ||
    (request.runId !== undefined && typeof request.runId !== 'string')
  ) {
    refuse('GRANT_INVALID', 'a release names its grant and reservation');
  }
}
