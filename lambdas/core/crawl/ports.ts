/**
 * What the pure crawl logic needs from the outside world. Adapters (lambdas/adapters) implement
 * these over undici and the AWS SDK; core code never imports either.
 */

import type { Outcome } from '../base/index.ts';
import type { CrawlResult } from '../results/index.ts';
import type { CrawlConfig, FetchLimits } from './crawl-config.ts';
import type { CredentialBundle, CredentialCookie } from './credentials.ts';
import type { PriorCapture } from './recrawl.ts';
import type { RenderMessage } from './render-message.ts';
import type { VisitMessage } from './task.ts';

export interface PageRequest {
  url: URL;
  userAgent: string;
  allowPrivate: boolean;
  limits: FetchLimits;
  /** Extra request headers (a re-crawl's If-None-Match and If-Modified-Since, a crawl's credentials). */
  headers?: Record<string, string>;
  /**
   * Through this HTTP proxy (a CONNECT tunnel), with this Proxy-Authorization on the CONNECT only
   * (core/fetch/crawl-requests.ts).
   */
  proxy?: { url: string; authorization?: string };
}

export interface PageResponse {
  /** The URL requested. */
  url: string;
  /** As sent, e.g. 'GET /path?q HTTP/1.1'. */
  requestLine: string;
  /** As sent on the wire, in order, names as sent (host, connection, user-agent, ...). */
  requestHeaders: Array<[string, string]>;
  /** HTTP version of the exchange. */
  httpVersion: string;
  status: number;
  statusText: string;
  /** Response headers as received, in order, names as received (values decoded as latin1). */
  headers: Array<[string, string]>;
  /** Entity body as received: content-encoding kept, transfer-encoding removed, at most maxBodyBytes. */
  body: Uint8Array;
  /** 'length': the body was cut at maxBodyBytes; 'time': the deadline hit mid-body. */
  truncated: 'length' | 'time' | undefined;
  /** The IP address actually dialled. */
  remoteAddress: string;
  startedAt: Date;
  /**
   * When the request really left (epoch ms): its header block was written to the socket. On a busy
   * event loop this is later than the fetch call, and a host's pace is measured from it.
   */
  sentAt?: number;
  elapsedMs: number;
}

/**
 * A crawl's credentials, from the parameter its config names. Throws PermanentError
 * `credentials-unavailable` when the parameter is gone or unreadable, RetryableError when reading may
 * work later.
 */
export interface CredentialReader {
  read(parameter: string): Promise<CredentialBundle>;
}

/** A fetched HTML page to render in a browser (core/content/page-render.ts). */
export interface RenderRequest {
  url: URL;
  /** The page as fetched, decoded: the browser's document (it is not fetched again). */
  html: string;
  userAgent: string;
  /** The crawl's `--allow-private`: the page's own host may be on a private address. */
  allowPrivate: boolean;
  /** Headers the crawl adds to a subrequest to `url` (its credential headers, each within its scope). */
  headersFor?: (url: URL) => Record<string, string>;
  /** The crawl's cookies: the browser's own jar sends each by its domain, path and secure flag. */
  cookies?: readonly CredentialCookie[];
  timeMs: number;
  maxRequests: number;
  maxBytes: number;
  maxDomChars: number;
}

export type RenderedPage = (
  | { ok: true; html: string; truncated?: string }
  | { ok: false; code: string; reason: string }
) & {
  /** Subrequests to the page's own host: each holds the host's pace one crawl delay. */
  sameHostRequests: number;
  /** Subrequests refused by the address guard or the budget. */
  refused: number;
};

export interface PageRenderer {
  render(request: RenderRequest): Promise<RenderedPage>;
  /** Ends the browser (the local runtime's containers end; Lambda's are frozen). */
  close(): Promise<void>;
}

export interface PageFetcher {
  fetch(request: PageRequest): Promise<PageResponse>;
}

/** A host visit to send to the task queue, due after `delaySeconds`. */
export interface OutgoingVisit {
  visit: VisitMessage;
  delaySeconds?: number;
}

export interface TaskSender {
  sendVisits(visits: readonly OutgoingVisit[]): Promise<void>;
}

export interface ResultSender {
  sendResults(results: readonly CrawlResult[]): Promise<void>;
}

/** Pages whose response is written, to the render function (core/crawl/render-message.ts). */
export interface RenderSender {
  sendRenders(messages: readonly RenderMessage[]): Promise<void>;
}

/** Per-crawl budgets (core/crawl/budget.ts): charges counted AWS cost, stops the crawl that crosses its budget. */
export interface CrawlBudget {
  /**
   * Charges the cost of the calls made since the last charge to the crawls of `pagesByCrawl` (pages
   * captured, by crawl), shared by pages; the crawls this charge stopped (their budget is spent).
   */
  charge(pagesByCrawl: ReadonlyMap<string, number>): Promise<string[]>;
}

/** A message that cannot be processed, kept in a DLQ for inspection with why. */
export interface DeadLetter {
  body: string;
  code: string;
  reason: string;
}

export interface DeadLetterSender {
  send(letters: readonly DeadLetter[]): Promise<void>;
}

export type CrawlStateName = 'running' | 'complete' | 'cancelled';

/** A crawl's state (`crawler cancel`, completion); the adapter caches the answer for a few seconds. */
export interface CrawlStateCheck {
  stateOf(crawlId: string): Promise<CrawlStateName>;
}

export interface BlobWriter {
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
}

/** The aggregate side of the page store: index parts, and the summary written once. */
export interface ResultStore extends BlobWriter {
  list(prefix: string): AsyncIterable<string>;
  exists(key: string): Promise<boolean>;
  /** Writes `key` unless it exists; false when it already did (nothing written). */
  putIfAbsent(key: string, body: Uint8Array, contentType: string): Promise<boolean>;
}

export interface CrawlConfigReader {
  get(crawlId: string): Promise<CrawlConfig>;
}

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

/**
 * A host's request slots, as the per-URL step and the robots gate take them. In a visit this is the
 * visit's pacer (core/fetch/visit-pacer.ts), in memory: only the holder of the host's lease sends to the
 * host, so no slot is shared or written, and the pace is saved on the host item when the visit ends.
 */
export interface HostSlots {
  /**
   * Reserves the host's next free slot at or after `now` and sets the gap after it to `delayMs` (the
   * next free slot is `delayMs` later); returns the slot.
   */
  reserve(crawlId: string, host: string, delayMs: number, now: number): Promise<number>;
  /** Pushes the host's next free slot to at least `notBefore` (Retry-After, a Crawl-delay). */
  pushBack(crawlId: string, host: string, notBefore: number): Promise<void>;
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

/** Why a visit could not take its host (HostVisits.acquire). */
/**
 * `copy`: the message carries the ticket the live visit took the host with (a hurried visit's twin,
 * an SQS duplicate, the visit's own message retried): it is looked at again soon, not only when the
 * lease ends, because that visit usually ends long before (fetch-batch.ts HELD_COPY_RECHECK_SECONDS).
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
