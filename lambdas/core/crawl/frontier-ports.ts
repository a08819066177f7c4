/**
 * The frontier's ports (docs/frontier.md): admission of URLs, a host's URL items as a visit reads
 * them, the shared robots.txt cache, the crawl's counters and the finalization of results. Apart
 * from ports.ts (fetching, rendering, queues, stores) and host-visit-ports.ts (the host items of
 * visits), one module per port family; all are exported from index.ts.
 */

import type { Outcome } from '../base/index.ts';
import type { PriorCapture } from './recrawl.ts';

/** A URL ready for the frontier: normalized, with its dedup key (sha256 of the normalized URL). */
export interface FrontierUrl {
  key: string;
  url: string;
  depth: number;
  /** Redirect hops that led here (a redirect target keeps its page's depth and counts hops). */
  redirects?: number;
  /** Admitted as skipped (scope, depth, nofollow, page budget): never fetched; its result is on its way. */
  held?: boolean;
  /**
   * A skipped link its page's result carries: created done, its line written with the page's, so its
   * host gets no host item and no visit (docs/frontier.md, "Skipped links").
   */
  carried?: boolean;
  /** A re-crawl's URL: its capture in the crawl it follows (recrawl.ts). */
  prior?: PriorCapture;
}

/**
 * `carried` says what the item is, not what was asked: a page fetched again may find a link carried
 * that it now asks held (past the cap), or held that it now asks carried.
 */
export type AdmittedUrl = FrontierUrl & { fresh: boolean };

export interface Admission {
  /** The candidates this page admits (fresh, or its own earlier admissions still unfetched). */
  admitted: AdmittedUrl[];
  /**
   * Keys of the other candidates whose item needs nothing more from any page: done, or fetchable.
   * A `held` or carried item of another page is not among them: its result (or line) goes out with
   * that page's, and if that page's invocation was cut off, its refetch must find the link again
   * past any seen cache.
   */
  settled: string[];
}

export interface AdmitOptions {
  /**
   * Whether to read which candidates exist before putting them (default true): most links of a page
   * are known, and a read costs a tenth of a failed put. Off for URLs new to the crawl by
   * construction (a re-crawl's earlier URLs, put before anything else): the read would find nothing.
   */
  probe?: boolean;
}

/**
 * Admission to the frontier (docs/frontier.md): each URL item lives in its host's partition
 * (`URLS#<crawlId>#<host>`), which a visit reads a page at a time.
 */
export interface FrontierAdmission {
  /**
   * Conditional puts: returns the candidates that are new to the crawl (`fresh`), or this page's own
   * earlier admissions still unfetched (not fresh: a retried batch wakes their hosts again, uncounted),
   * or carried (carried again: the page's result, sent again, carries them again).
   */
  admit(
    crawlId: string,
    parentKey: string,
    candidates: readonly FrontierUrl[],
    options?: AdmitOptions,
  ): Promise<Admission>;
  /** Reserves up to `wanted` of the crawl's remaining page budget; returns how many were granted. */
  reservePages(crawlId: string, wanted: number, maxPages: number): Promise<number>;
  /**
   * Makes `held` URLs fetchable (`st = new`). A crawl with a page budget admits its URLs held and
   * promotes those its budget grants, so no visit ever sees a URL beyond the budget as fetchable.
   */
  promote(crawlId: string, urls: readonly FrontierUrl[]): Promise<void>;
  /** Counts newly admitted URLs (one ADD per crawl per batch). */
  addQueued(crawlId: string, count: number): Promise<void>;
}

/** A URL item of a host's partition, as a visit reads it. */
export interface HostUrl {
  key: string;
  url: string;
  depth: number;
  /** `new`: to fetch; `held`: admitted as skipped, its result on its way; `done`: finalized. */
  st: 'new' | 'held' | 'done';
  /** The admitting page's key (`seed` for seeds). */
  parent?: string;
  redirects?: number;
  /** Fetch attempts made so far, and when the next may start (a postponed retry). */
  attempts?: number;
  retryAt?: number;
  /** When done: the winning result's outcome, bytes, requests and index part (the host's tally). */
  outcome?: Outcome;
  bytes?: number;
  requests?: number;
  part?: string;
  /** A carried link (done at admission): counted in its page's `kids`, not in its own host's tally. */
  carried?: boolean;
  /** Done pages: the skipped links their winning result carried (each a line and a `skipped` count). */
  kids?: number;
  /** A re-crawl's URL: its capture in the crawl it follows, which the fetch asks about conditionally. */
  prior?: PriorCapture;
}

/** A page of a host's URL items, in key order. */
export interface HostUrlPage {
  urls: HostUrl[];
  /**
   * The key to read on from: absent once the partition's end was reached (a full last page may
   * still name one, whose next page is empty).
   */
  next?: string;
}

/** A host's URL items (its partition). */
export interface HostUrlStore {
  /**
   * Up to `limit` URL items of the host with keys after `after` (from the first when undefined), in
   * key order, consistently read (done ones too: they clear `inflight` and make the tally).
   */
  page(crawlId: string, host: string, after: string | undefined, limit: number): Promise<HostUrlPage>;
  /** The items of `keys` that exist, consistently read, in no particular order. */
  get(crawlId: string, host: string, keys: readonly string[]): Promise<HostUrl[]>;
  /** Records a fetch that will be retried: its attempts so far and when the next may start. */
  postpone(crawlId: string, host: string, key: string, attempts: number, retryAt: number): Promise<void>;
}

export type RobotsState =
  | { state: 'ready'; policyJson: string; fetchedAt: number }
  | { state: 'fetching'; lease: number }
  | { state: 'unavailable'; retryAt: number; failures: number }
  | { state: 'missing' };

/** The shared robots.txt cache (one entry per crawl and origin). */
export interface RobotsStore {
  read(crawlId: string, origin: string): Promise<RobotsState>;
  /** Claims the right to fetch robots.txt for the origin; false if someone else holds a live claim. */
  claim(crawlId: string, origin: string, leaseMs: number, now: number): Promise<boolean>;
  saveReady(crawlId: string, origin: string, policyJson: string, fetchedAt: number): Promise<void>;
  saveUnavailable(crawlId: string, origin: string, retryAt: number): Promise<number /* failures so far */>;
}

export interface CounterDeltas {
  queued?: number;
  done?: number;
  bytes?: number;
  requests?: number;
  byOutcome?: Partial<Record<Outcome, number>>;
}

export interface CrawlCounters {
  queued: number;
  done: number;
  admitted: number;
  bytes: number;
  requests: number;
  byOutcome: Partial<Record<Outcome, number>>;
  state: 'running' | 'complete' | 'cancelled';
  startedAt?: string;
  endedAt?: string;
}

/** The aggregate side of the frontier (docs/frontier.md). */
export interface FrontierFinalizer {
  /** Marks the URL done with this result unless another result already did (see FinalizeOutcome). */
  finalize(crawlId: string, entry: FinalizeEntry): Promise<FinalizeOutcome>;
  /** Points a done URL at another index part, if result `rid` is the one that won it. */
  repoint(crawlId: string, url: string, key: string, rid: string, part: string): Promise<void>;
  addCounters(crawlId: string, deltas: CounterDeltas): Promise<CrawlCounters>;
  readCounters(crawlId: string): Promise<CrawlCounters | undefined>;
  /**
   * Completion, confirmed rather than guessed from the counters: when no host of the crawl is active
   * (every host drained: docs/design/host-visits.md) and `partsWritten` confirms every index part the
   * drained hosts' done URLs name, rewrites the counters from the summed `DONE#` tallies and flips
   * state running → complete (conditionally: true for exactly one caller). Otherwise changes nothing.
   */
  confirmCompletion(
    crawlId: string,
    now: Date,
    partsWritten: (parts: ReadonlySet<string>) => Promise<boolean>,
  ): Promise<{ completedNow: boolean; counters: CrawlCounters }>;
}

/** What finalize records on a URL item: the result that counts. */
export interface FinalizeEntry {
  key: string;
  url: string;
  outcome: Outcome;
  /** Payload bytes stored and HTTP requests (0 or 1) of this result. */
  bytes: number;
  requests: number;
  /** The result's id: the same for every delivery of one result message, different for another result. */
  rid: string;
  /** The index part this result's line is written to. */
  part: string;
  /** The skipped links the result carries (their lines go to `part` too): recorded on the item. */
  kids?: number;
}

/**
 * `won`: this result counts (write its index line). `repeat`: it had won before (its line may be
 * missing: write it again). `created`: no URL item existed, so the URL was never counted as queued.
 */
export interface FinalizeOutcome {
  won: boolean;
  repeat: boolean;
  created: boolean;
  /**
   * The index part the URL item names after the call: the entry's own part on a first win; on a
   * repeat, the part its earlier win named (kept: its line may be there already).
   */
  part?: string;
}
