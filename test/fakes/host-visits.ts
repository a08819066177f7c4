/**
 * Imitates the FrontierTable's host items and drained-host tallies (lambdas/adapters/frontier-hosts.ts,
 * FrontierHosts) in memory, as the port HostVisits: a wake counts every admission and claims the
 * visit message's send (a ticket) only while no lease is live and no message is on its way (a
 * claim confirmed sent never expires; an unconfirmed one does after VISIT_GRACE_MS); only the message
 * carrying the expected ticket takes the host; a lease is exclusive until it runs out; a release
 * needs the lease; a drain loses to a wake it did not see. Each step is one conditional
 * write, with a yield between the two writes of `wake` and of `drain` as the adapter has. Checked
 * against FrontierHosts on dynalite by test/integration/port-contracts.test.ts (hostVisitsContract in
 * test/contracts/host-visits.ts).
 */
import { randomUUID } from 'node:crypto';
import { VISIT_GRACE_MS } from '../../lambdas/adapters/frontier-hosts.ts';
import type { Outcome } from '../../lambdas/core/base/index.ts';
import type {
  HostBusy,
  HostLease,
  HostPace,
  HostRelease,
  HostTally,
  HostVisits,
  RenderHold,
} from '../../lambdas/core/crawl/index.ts';
import { Faults } from './faults.ts';

/** A host item (`HOST#<host>`) as stored. */
export interface HostItem {
  wake: number;
  lease?: number;
  holder?: string;
  /** When the visit message a wake or a release claimed is due, and its ticket. */
  visitAt?: number;
  visitBy?: string;
  /** The message carrying `visitBy` is known to be sent: no wake sends another. */
  sent?: boolean;
  /** Handed back only to await results in flight (hurry). */
  awaiting?: boolean;
  /** A page of the host being rendered (endRender). */
  rendering?: RenderHold;
  /** The ticket of the message the live lease was taken with. */
  took?: string;
  next?: number;
  pausedUntil?: number;
  inflight: string[];
  cursor?: string;
}

/** A drained host's tally (`DONE#<host>`) and the pace kept for its next wake. */
export interface DoneItem extends HostTally, HostPace {}

export type HostVisitsMethod =
  | 'wake'
  | 'unwake'
  | 'confirmSent'
  | 'acquire'
  | 'release'
  | 'drain'
  | 'anyActive'
  | 'doneTotals'
  | 'awaiting'
  | 'hurry'
  | 'holdForRender'
  | 'renderHold'
  | 'endRender';

const noLiveLease = (item: HostItem, now: number) => item.lease === undefined || item.lease < now;
/** No visit claimed, or one claimed past the grace whose send was never confirmed. */
const noVisitOnItsWay = (item: HostItem, now: number) =>
  item.visitAt === undefined || (!item.sent && item.visitAt < now - VISIT_GRACE_MS);

export class MemoryHostVisits implements HostVisits {
  readonly #hosts = new Map<string, HostItem>();
  readonly #done = new Map<string, DoneItem>();
  readonly faults = new Faults<HostVisitsMethod>();

  /** The host item as stored, if the host has one (it is active). */
  host(crawlId: string, host: string): HostItem | undefined {
    return this.#hosts.get(`${crawlId}#${host}`);
  }

  done(crawlId: string, host: string): DoneItem | undefined {
    return this.#done.get(`${crawlId}#${host}`);
  }

  /** The crawl's hosts that have a host item (active), or a `DONE#` item: for metering the Queries. */
  hosts(crawlId: string, which: 'active' | 'done'): string[] {
    const prefix = `${crawlId}#`;
    const ids = which === 'active' ? this.#hosts.keys() : this.#done.keys();
    return [...ids].filter((id) => id.startsWith(prefix)).map((id) => id.slice(prefix.length));
  }

  async wake(crawlId: string, host: string, now: number): Promise<string | undefined> {
    const args = [crawlId, host, now];
    return this.faults.run('wake', args, async () => {
      const id = `${crawlId}#${host}`;
      const item = this.#hosts.get(id) ?? { wake: 0, inflight: [] };
      item.wake += 1;
      this.#hosts.set(id, item);
      if (!(noLiveLease(item, now) && noVisitOnItsWay(item, now))) return undefined;
      // The claim is a second write under the same condition: a concurrent waker may win it meanwhile.
      await new Promise((resolve) => setImmediate(resolve));
      const current = this.#hosts.get(id);
      if (current === undefined || !(noLiveLease(current, now) && noVisitOnItsWay(current, now)))
        return undefined;
      const ticket = randomUUID();
      current.visitAt = now;
      current.visitBy = ticket;
      delete current.sent;
      return ticket;
    });
  }

  async unwake(crawlId: string, host: string, ticket: string): Promise<void> {
    return this.faults.run('unwake', [crawlId, host, ticket], async () => {
      const item = this.host(crawlId, host);
      if (item?.visitBy === ticket) {
        delete item.visitAt;
        delete item.visitBy;
        delete item.sent;
      }
    });
  }

  async confirmSent(crawlId: string, host: string, ticket: string): Promise<void> {
    return this.faults.run('confirmSent', [crawlId, host, ticket], async () => {
      const item = this.host(crawlId, host);
      if (item?.visitBy === ticket) item.sent = true;
    });
  }

  async acquire(
    crawlId: string,
    host: string,
    holder: string,
    leaseUntil: number,
    now: number,
    ticket?: string,
  ): Promise<HostLease | HostBusy> {
    const args = [crawlId, host, holder, leaseUntil, now, ticket];
    return this.faults.run('acquire', args, async () => {
      const item = this.host(crawlId, host);
      if (item === undefined) return { busy: 'idle' };
      const free = noLiveLease(item, now) || item.holder === holder;
      const expected = item.visitBy === undefined || item.visitBy === (ticket ?? '-');
      if (!(free && expected)) {
        if (item.visitBy !== undefined && item.visitBy !== ticket) return { busy: 'stale' };
        const until = item.lease ?? now;
        // A copy of the message the live visit came with.
        if (ticket !== undefined && item.took === ticket) return { busy: 'held', until, copy: true };
        return { busy: 'held', until };
      }
      item.lease = leaseUntil;
      item.holder = holder;
      item.took = ticket ?? '-';
      delete item.visitAt;
      delete item.visitBy;
      delete item.sent;
      delete item.awaiting;
      // A fresh host item (woken after a drain, or new) takes its pace from the drained tally.
      const done = this.done(crawlId, host);
      const pace = paceOf(item.next === undefined ? { ...done, next: done?.nextAt } : item);
      const cursor = item.cursor === undefined ? {} : { cursor: item.cursor };
      const rendering = item.rendering === undefined ? {} : { rendering: { ...item.rendering } };
      return {
        holder,
        leaseUntil,
        wake: item.wake,
        ...pace,
        inflight: [...item.inflight],
        ...cursor,
        ...rendering,
      };
    });
  }

  async release(crawlId: string, host: string, holder: string, state: HostRelease): Promise<void> {
    const args = [crawlId, host, holder, state];
    return this.faults.run('release', args, async () => {
      const item = this.host(crawlId, host);
      // A visit that lost its lease has nothing to hand back.
      if (item?.holder === holder) {
        saveState(item, state);
        if (state.cursor === undefined) delete item.cursor;
        else item.cursor = state.cursor;
        item.visitAt = state.visitAt;
        item.visitBy = state.ticket;
        if (state.sent) item.sent = true;
        else delete item.sent;
        if (state.awaiting) item.awaiting = true;
        else delete item.awaiting;
        if (state.rendering) item.rendering = { ...state.rendering };
        else delete item.rendering;
        delete item.lease;
        delete item.holder;
      }
    });
  }

  async drain(
    crawlId: string,
    host: string,
    holder: string,
    wakeSeen: number,
    tally: HostTally,
    pace: HostPace,
  ): Promise<boolean> {
    const args = [crawlId, host, holder, wakeSeen, tally, pace];
    return this.faults.run('drain', args, async () => {
      const id = `${crawlId}#${host}`;
      const done = this.#done.get(id);
      // A host only gains done URLs: an older, smaller tally never overwrites a newer one.
      if (done !== undefined && done.total > tally.total) return false;
      this.#done.set(id, {
        ...structuredClone(tally),
        parts: [...new Set(tally.parts)],
        nextAt: pace.nextAt,
        ...(pace.pausedUntil === undefined ? {} : { pausedUntil: pace.pausedUntil }),
      });
      await new Promise((resolve) => setImmediate(resolve));
      const item = this.#hosts.get(id);
      if (item !== undefined && item.holder === holder && item.wake === wakeSeen) this.#hosts.delete(id);
      // No host item left: this drain deleted it, or the visit that took over did.
      return !this.#hosts.has(id);
    });
  }

  async anyActive(crawlId: string): Promise<boolean> {
    return this.faults.run('anyActive', [crawlId], async () => {
      return [...this.#hosts.keys()].some((id) => id.startsWith(`${crawlId}#`));
    });
  }

  async awaiting(crawlId: string): Promise<string[]> {
    return this.faults.run('awaiting', [crawlId], async () =>
      this.hosts(crawlId, 'active').filter((host) => this.host(crawlId, host)?.awaiting === true),
    );
  }

  async hurry(crawlId: string, host: string, now: number): Promise<string | undefined> {
    return this.faults.run('hurry', [crawlId, host, now], async () => {
      const item = this.host(crawlId, host);
      if (!item?.awaiting || item.visitBy === undefined || !noLiveLease(item, now)) return undefined;
      delete item.awaiting;
      return item.visitBy;
    });
  }

  async holdForRender(crawlId: string, host: string, holder: string, hold: RenderHold): Promise<boolean> {
    return this.faults.run('holdForRender', [crawlId, host, holder, hold], async () => {
      const item = this.host(crawlId, host);
      if (item?.holder !== holder) return false;
      item.rendering = { ...hold };
      return true;
    });
  }

  async renderHold(crawlId: string, host: string): Promise<RenderHold | undefined> {
    return this.faults.run('renderHold', [crawlId, host], async () => {
      const hold = this.host(crawlId, host)?.rendering;
      return hold === undefined ? undefined : { ...hold };
    });
  }

  async endRender(
    crawlId: string,
    host: string,
    token: string,
    nextAt: number,
    now: number,
  ): Promise<string | undefined> {
    return this.faults.run('endRender', [crawlId, host, token, nextAt, now], async () => {
      const item = this.host(crawlId, host);
      if (item?.rendering?.token !== token || item.visitBy === undefined || !noLiveLease(item, now))
        return undefined;
      delete item.rendering;
      delete item.awaiting;
      if (item.next === undefined || item.next < nextAt) item.next = nextAt;
      return item.visitBy;
    });
  }

  async doneTotals(crawlId: string): Promise<HostTally & { hosts: number }> {
    return this.faults.run('doneTotals', [crawlId], async () => {
      const byOutcome: Partial<Record<Outcome, number>> = {};
      const totals = { hosts: 0, total: 0, byOutcome, bytes: 0, requests: 0 };
      const parts = new Set<string>();
      for (const [id, done] of this.#done) {
        if (!id.startsWith(`${crawlId}#`)) continue;
        totals.hosts++;
        totals.total += done.total;
        totals.bytes += done.bytes;
        totals.requests += done.requests;
        for (const [outcome, count] of Object.entries(done.byOutcome) as Array<[Outcome, number]>)
          if (count !== 0) byOutcome[outcome] = (byOutcome[outcome] ?? 0) + count;
        for (const part of done.parts) parts.add(part);
      }
      return { ...totals, parts: [...parts] };
    });
  }
}

function paceOf(saved: { next?: number | undefined; pausedUntil?: number | undefined }): HostPace {
  const pace: HostPace = { nextAt: saved.next ?? 0 };
  if (saved.pausedUntil !== undefined) pace.pausedUntil = saved.pausedUntil;
  return pace;
}

/** The pace and inflight a visit saves (an absent pause or an empty inflight is removed). */
function saveState(item: HostItem, state: HostPace & { inflight: readonly string[] }): void {
  item.next = state.nextAt;
  if (state.pausedUntil === undefined) delete item.pausedUntil;
  else item.pausedUntil = state.pausedUntil;
  item.inflight = [...new Set(state.inflight)];
}
