/**
 * The ports of host visits (docs/design/host-visits.md): a host's request slots as a visit paces
 * them, and the host items a visit wakes, leases, hands back and drains, with their render holds and
 * drained-host tallies. Apart from ports.ts and frontier-ports.ts, one module per port family; all
 * are exported from index.ts.
 */

import type { Outcome } from '../base/index.ts';

/**
 * One visited host's request slots, as the per-URL step and the robots gate take them. In a visit
 * this is the visit's pacer (core/fetch/visit-pacer.ts), in memory: only the holder of the host's
 * lease sends to the host, so no slot is shared or written, and the pace is saved on the host item
 * when the visit ends. Every request the visit makes takes a slot of it, a robots.txt redirect hop
 * to another host included: the visit is what is paced.
 */
export interface HostSlots {
  /**
   * Reserves the host's next free slot at or after `now` and sets the gap after it to `delayMs` (the
   * next free slot is `delayMs` later); returns the slot.
   */
  reserve(delayMs: number, now: number): Promise<number>;
  /** Pushes the host's next free slot to at least `notBefore` (Retry-After, a Crawl-delay). */
  pushBack(notBefore: number): Promise<void>;
}

/** A host's pace as a visit saves it (core/fetch/visit-pacer.ts PaceState has the same shape). */
export interface HostPace {
  /** Earliest time (epoch ms) the host's next request may leave. */
  nextAt: number;
  /** End of the host's latest Retry-After pause, if any. */
  pausedUntil?: number;
}

/**
 * A page of the host is being rendered (docs/design/rendering-on-aws.md): no visit fetches from the
 * host until the render function ends the hold (`endRender`, with this token) or `until` passes.
 */
export interface RenderHold {
  token: string;
  /** Epoch ms: past it the host's visits go on without the render (one in RenderDLQ, say). */
  until: number;
}

/** A host as a visit finds it when it takes the lease (docs/design/host-visits.md). */
export interface HostLease extends HostPace {
  holder: string;
  leaseUntil: number;
  /** The host's wake count when the lease was taken: what `drain` must still find. */
  wake: number;
  /** URL keys fetched by an earlier visit whose results may not be finalized yet. */
  inflight: string[];
  /** Where the previous visit stopped in the host's URL partition (a key; absent: at the start). */
  cursor?: string;
  rendering?: RenderHold;
}

/** The exact counts of a drained host (its `DONE#` item), summed over hosts at completion. */
export interface HostTally {
  total: number;
  byOutcome: Partial<Record<Outcome, number>>;
  bytes: number;
  requests: number;
  /** The index parts its done URLs name. */
  parts: string[];
}

/**
 * What a visit saves as it hands its host back: its pace, the URLs awaited, where it stopped in the
 * partition (`cursor`), and when the host's next visit message (carrying `ticket`) is due.
 */
export interface HostRelease extends HostPace {
  inflight: readonly string[];
  cursor?: string | undefined;
  visitAt: number;
  ticket: string;
  sent?: boolean;
  /**
   * Handed back only to see results of its URLs in flight finalized: an aggregate batch that
   * finalizes one may send the expected visit message again at once (`hurry`).
   */
  awaiting?: boolean;
  /** Kept on the host item until the render function ends it (absent: removed). */
  rendering?: RenderHold | undefined;
}

/**
 * Why a visit could not take its host (HostVisits.acquire). `copy`: the message carries the ticket
 * the live visit took the host with (a hurried visit's twin, an SQS duplicate, the visit's own
 * message retried): it is looked at again soon, not only when the lease ends, because that visit
 * usually ends long before (fetch-batch.ts HELD_COPY_RECHECK_SECONDS).
 */
export type HostBusy = { busy: 'held'; until: number; copy?: true } | { busy: 'stale' } | { busy: 'idle' };

/** Host items and visits of the frontier (docs/design/host-visits.md). */
export interface HostVisits {
  /**
   * Records an admission to the host (making it active). Returns a ticket when the caller must send
   * a visit message (carrying it): no live lease and no visit message due recently; only one
   * concurrent caller gets one.
   */
  wake(crawlId: string, host: string, now: number): Promise<string | undefined>;
  /** Gives back a wake's claim to send (its visit message could not be sent), if still this ticket's. */
  unwake(crawlId: string, host: string, ticket: string): Promise<void>;
  /**
   * Records that a wake's visit message was sent, if the host still expects its ticket: no wake sends
   * another however long it waits in the queue. An unconfirmed claim is presumed lost after
   * VISIT_GRACE_MS (a crash between the claim and the send), and the next wake sends again.
   */
  confirmSent(crawlId: string, host: string, ticket: string): Promise<void>;
  /**
   * Takes the host for a visit. A visit message carries the ticket its sender was given (`wake`, or
   * the hand-back): only the message the host expects may take it, so duplicates and late copies
   * die out instead of multiplying. `held`: a live visit has it until `until` (try again then);
   * `stale`: the host expects another message; `idle`: the host has no work.
   */
  acquire(
    crawlId: string,
    host: string,
    holder: string,
    leaseUntil: number,
    now: number,
    ticket?: string,
  ): Promise<HostLease | HostBusy>;
  /**
   * Hands the host back: its next visit message (carrying `ticket`) is due at `visitAt`; a lost lease
   * is ignored. `sent`: that message was sent already (confirmed, as confirmSent does).
   */
  release(crawlId: string, host: string, holder: string, state: HostRelease): Promise<void>;
  /**
   * Records the drained host's tally and pace (kept for when it is woken again), then deletes its host
   * item if this visit still holds it and no admission woke it since `wakeSeen`. True: no host item is
   * left (check completion). False: it was woken meanwhile, or the lease was lost.
   */
  drain(
    crawlId: string,
    host: string,
    holder: string,
    wakeSeen: number,
    tally: HostTally,
    pace: HostPace,
  ): Promise<boolean>;
  /**
   * Whether any host of the crawl has work (a consistent Query, Limit 1, per shard until one is
   * found). A false answer is only settled as completion-check.ts confirms it.
   */
  anyActive(crawlId: string): Promise<boolean>;
  /** The sum of the drained hosts' tallies, and how many hosts there are. */
  doneTotals(crawlId: string): Promise<HostTally & { hosts: number }>;
  /**
   * Every host of the crawl handed back `awaiting` results and not taken since: a Query of the
   * crawl's host items per shard (O(active hosts)). A release of a moment ago may be missed.
   */
  awaiting(crawlId: string): Promise<string[]>;
  /**
   * A host handed back `awaiting` results, with no live lease: clears `awaiting` (so one caller
   * hurries it) and returns the ticket of the visit message it expects, which the caller sends
   * again, due at once. Whichever copy comes first takes the host; the other finds it taken.
   * Undefined otherwise.
   */
  hurry(crawlId: string, host: string, now: number): Promise<string | undefined>;
  /**
   * Puts a render hold on the host, by the visit holding it (before its page's render message is
   * sent: the render function finds the hold it is to end). False when `holder` holds it no longer.
   */
  holdForRender(crawlId: string, host: string, holder: string, hold: RenderHold): Promise<boolean>;
  /** The render hold on the host, if any (one consistent read). */
  renderHold(crawlId: string, host: string): Promise<RenderHold | undefined>;
  /**
   * Ends the render hold `token` on the host, with no live lease: the hold goes, and the host's next
   * request is `nextAt` at the earliest (its pace kept if later). Returns the ticket of the visit
   * message the host expects, which the caller sends again, due then. Undefined when the hold is not
   * this one or a visit holds the host (a moment, to hand it back).
   */
  endRender(
    crawlId: string,
    host: string,
    token: string,
    nextAt: number,
    now: number,
  ): Promise<string | undefined>;
}
