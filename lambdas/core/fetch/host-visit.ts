/**
 * One host visit (docs/design/host-visits.md): the holder of a visit owns its host for the visit and
 * walks the host's URL partition a page at a time from where the previous visit stopped (wrapping
 * round at its end), fetching the ready URLs of each page one at a time at the host's pace, kept in
 * memory (VisitPacer), so politeness holds by construction: one request in flight, each the host's
 * delay after the last, with no per-URL claim or slot write. Many visits run side by side in one invocation, so billed
 * time is spent fetching. Each stored URL goes straight to the per-URL step (fetch-task.ts) with the
 * crawl's config the visit holds: robots.txt, Crawl-delay, Retry-After and retries pace through the
 * pacer, and a retry is recorded on the URL's item.
 *
 * The visit says how it ended; the batch code sends what it produced and then drains the host,
 * hands it back with a delay, or drops the message.
 */

import { ADDRESS_BLOCKED, FRONTIER_LIMITS, OutOfTime, PermanentError, RENDER_LIMITS } from '../base/index.ts';
import {
  addToTally,
  type CrawlConfig,
  type CrawlStateCheck,
  cancelledResult,
  crawlClosed,
  emptyTally,
  type HostTally,
  type HostUrl,
  type HostUrlStore,
  type PageFetcher,
  type PageRequest,
  type PageResponse,
  type PageToRender,
  type RenderHold,
} from '../crawl/index.ts';
import { crawlRequests } from './crawl-requests.ts';
import { fetchUrl, type UrlDecision, type UrlStepDeps } from './fetch-task.ts';
import { type PaceState, VisitPacer } from './visit-pacer.ts';
import { DEADLINE_MARGIN_MS, partsWritten, waitUntil } from './visit-waits.ts';

export interface VisitDeps extends Omit<UrlStepDeps, 'pace'> {
  hostUrls: HostUrlStore;
  /**
   * A cancelled crawl's URLs end as `cancelled` results before any other work; a complete crawl's
   * visit stops (its summary is written: nothing may add to it).
   */
  crawlStates?: CrawlStateCheck;
  /** No request starts unless it can end (its total deadline) before this (epoch ms). */
  deadline: number;
  /**
   * Sends what the batch has produced so far (links admitted into their partitions). A visit whose
   * pass over the partition found nothing more to fetch settles before it looks again: its own
   * pages' links may be waiting.
   */
  settle?: () => Promise<void>;
  /**
   * How many times the batch's admissions have woken this host so far. After a pass the visit walks
   * the partition again only if this moved during it (else nothing of the batch reached the host, and
   * a pass over a large host is thousands of items), and a pass during which it moved does not drain
   * the host: a URL admitted behind the walk may be unseen. Absent: it walks again after a settle.
   */
  wokenHere?: () => number;
  /**
   * Resolves once the batch's output has room for another page. A visit that fetches faster than its
   * output goes out waits here: no flush grows past what fits before the deadline, and a kill or a
   * timeout loses at most that much.
   */
  room?: () => Promise<void>;
  /**
   * Whether an index part exists. A host is drained only once every part its done URLs name is
   * written: a URL finalized by an aggregate invocation that died before its PUT is repointed and
   * written by the redelivery, and its host waits for that. Called many at once (partsWritten).
   */
  partExists?: (key: string) => Promise<boolean>;
}

export interface VisitStart {
  crawlId: string;
  host: string;
  pace: PaceState;
  /** URLs an earlier visit fetched whose results may not be finalized yet: not fetched again. */
  inflight: readonly string[];
  /** Where the previous visit stopped in the host's partition (a key; absent: at its start). */
  cursor?: string | undefined;
  /** A page of the host being rendered: nothing is fetched until its hold ends or lapses. */
  rendering?: RenderHold | undefined;
}

/**
 * What each decided URL gives the batch: its result or page, and links (fetch-batch.ts); a page to
 * render with the hold its visit put on the host.
 */
export type VisitDecision =
  | Extract<UrlDecision, { kind: 'result' }>
  | (Omit<Extract<UrlDecision, { kind: 'captured' }>, 'render'> & { render?: PageToRender });

export type VisitEnd =
  /** Nothing left: a whole pass met only done URLs. `tally`: theirs, the host's exact counts. */
  | { kind: 'drained'; tally: HostTally }
  /**
   * URLs remain (or results are awaited): visit again at `visitAt`. `results`: only results of URLs
   * in flight are awaited, so the host may be visited as soon as one is finalized (HostVisits.hurry).
   * `render`: a page of the host is being rendered; the render function hurries the host when done.
   */
  | { kind: 'hand-back'; visitAt: number; why: 'deadline' | 'waiting' | 'robots' | 'results' | 'render' }
  /** The crawl is not one to serve (unknown, or complete): the visit message is dropped. */
  | { kind: 'stop'; why: string };

export interface VisitReport {
  end: VisitEnd;
  pace: PaceState;
  /** URLs decided in this visit (their results are in the batch's output) and earlier ones still open. */
  inflight: string[];
  /** Where the visit stopped in the host's partition: the key of the last URL it dealt with. */
  cursor: string | undefined;
  decided: number;
  /** The render hold the host keeps (one this visit put, or the one it found). */
  rendering?: RenderHold;
}

/**
 * While results are awaited (the aggregate function finalizes them within its batching window), the
 * host is looked at again this soon: a crawl's last pages wait on it before their hosts drain.
 */
export const INFLIGHT_RECHECK_MS = 2_000;
/**
 * Every URL done but an index part missing: usually an aggregate batch between its finalize and its
 * PUT (a second or less), else one that died before the PUT, whose redelivery comes much later.
 */
export const PART_RECHECK_MS = 5_000;

/**
 * One walk round the host's partition, from the key it started after (absent: the partition's
 * start) past the end and on from the start back to that key. A pass that met nothing open, during
 * which the batch did not wake the host, saw every URL of the host done: the host drains with the
 * pass's tally.
 */
interface Pass {
  from: string | undefined;
  /** The walk went past the partition's end and on from its start. */
  wrapped: boolean;
  /** No URL met that is not done. */
  clean: boolean;
  tally: HostTally;
  /** The index parts its done URLs name. */
  parts: Set<string>;
  /** The batch's wakes of the host when the pass started. */
  woken: number | undefined;
  /** A URL met waits for its result (held, or in flight). */
  awaited: boolean;
  /** The earliest time a postponed retry met may be fetched. */
  retryAt: number;
}

export async function visitHost(
  start: VisitStart,
  config: CrawlConfig,
  deps: VisitDeps,
  onDecision: (decision: VisitDecision) => void,
): Promise<VisitReport> {
  const visit = new HostVisit(start, config, deps, onDecision);
  // A failure part way (an AWS call that kept failing) still reports what the visit did: the URLs
  // it decided (their results go out with the batch), its pace and where it stopped, for the
  // host's release.
  try {
    // A page of the host is being rendered: nothing is fetched until its hold ends (or lapses).
    const held = visit.renderHeld();
    if (held) return visit.report(held);
    // The previous visit's URLs awaited: those finalized since are known at once, without a pass.
    if (visit.inflight.size > 0) await visit.refreshInflight();
    return visit.report(await visit.walk());
  } catch (error) {
    throw new VisitFailedError(error, visit.progress());
  }
}

/**
 * One visit's state as it walks its host's partition (visitHost): the host's pace, the URLs whose
 * results are awaited, where it stopped, the pass under way; and the steps that move them.
 */
class HostVisit {
  readonly crawlId: string;
  readonly host: string;
  readonly config: CrawlConfig;
  readonly deps: VisitDeps;
  readonly onDecision: (decision: VisitDecision) => void;
  readonly pacer: VisitPacer;
  readonly inflight: Set<string>;
  /**
   * URLs that left `inflight` because their result was found finalized (refreshInflight) while a
   * page read before that may still show them not done: that copy must not fetch them again.
   */
  readonly finalized = new Set<string>();
  /** A PDF's text extraction ends by the visit's deadline (page-reading.ts): every crawl stores PDFs. */
  readonly requestBudget: number;
  decided = 0;
  /** Decisions whose links may not be in the frontier yet. */
  unsettled = 0;
  /** The key of the last URL the visit dealt with (absent: the partition's start). */
  cursor: string | undefined;
  rendering: RenderHold | undefined;
  pass: Pass;
  /** The visit's requests, paced and with the crawl's credentials and proxy (paced). */
  readonly fetcher: PageFetcher;

  constructor(
    start: VisitStart,
    config: CrawlConfig,
    deps: VisitDeps,
    onDecision: (decision: VisitDecision) => void,
  ) {
    this.crawlId = start.crawlId;
    this.host = start.host;
    this.config = config;
    this.deps = deps;
    this.onDecision = onDecision;
    this.pacer = new VisitPacer(start.pace);
    this.inflight = new Set(start.inflight);
    this.requestBudget = config.limits.totalTimeoutMs + DEADLINE_MARGIN_MS;
    this.cursor = start.cursor;
    this.rendering = start.rendering;
    this.pass = this.newPass(this.cursor);
    this.fetcher = crawlRequests(
      { fetch: (request) => this.paced(request) },
      config,
      deps.credentials,
      deps.now,
    );
  }

  report(end: VisitEnd): VisitReport {
    return {
      end,
      pace: this.pacer.state,
      inflight: [...this.inflight],
      cursor: this.cursor,
      decided: this.decided,
      ...(this.rendering === undefined ? {} : { rendering: this.rendering }),
    };
  }

  /** What a visit that failed part way did (VisitFailedError). */
  progress(): VisitFailedError['progress'] {
    return {
      pace: this.pacer.state,
      inflight: [...this.inflight],
      cursor: this.cursor,
      ...(this.rendering === undefined ? {} : { rendering: this.rendering }),
    };
  }

  newPass(from: string | undefined): Pass {
    return {
      from,
      wrapped: false,
      clean: true,
      tally: emptyTally(),
      parts: new Set(),
      woken: this.deps.wokenHere?.(),
      awaited: false,
      retryAt: Number.POSITIVE_INFINITY,
    };
  }

  /**
   * Every request of the visit (robots.txt and its redirects, pages) waits here for the host's pace
   * (the gap from the previous request's real departure: after robots.txt, its Crawl-delay), and
   * none starts that could not end before the deadline: the visit then hands its host back, no
   * attempt spent. The crawl's credentials and proxy are added before the wait (crawl-requests.ts).
   */
  async paced(request: PageRequest): Promise<PageResponse> {
    const { deps, pacer } = this;
    if (!(await waitUntil(pacer.departureAt(deps.now()), this.requestBudget, deps))) throw new OutOfTime();
    await pacer.depart(deps.now, deps.sleep);
    try {
      const response = await deps.fetcher.fetch(request);
      if (response.sentAt !== undefined) pacer.sent(response.sentAt);
      return response;
    } catch (error) {
      if (error instanceof PermanentError && error.code === ADDRESS_BLOCKED) pacer.refund();
      throw error;
    }
  }

  /** The hand-back while a render hold of the host lasts; a hold that lapsed is dropped. */
  renderHeld(): VisitEnd | undefined {
    if (this.rendering === undefined) return undefined;
    if (this.rendering.until > this.deps.now())
      return {
        kind: 'hand-back',
        visitAt: Math.min(this.rendering.until, this.deps.now() + RENDER_LIMITS.holdRecheckMs),
        why: 'render',
      };
    this.rendering = undefined;
    return undefined;
  }

  /** The URLs in flight whose results are finalized since leave `inflight` (one BatchGet, not a pass). */
  async refreshInflight(): Promise<void> {
    for (const url of await this.deps.hostUrls.get(this.crawlId, this.host, [...this.inflight]))
      if (url.st === 'done') {
        this.inflight.delete(url.key);
        this.finalized.add(url.key);
      }
  }

  /** Walks the partition a page at a time, pass after pass, until the visit must end. */
  async walk(): Promise<VisitEnd> {
    const { crawlId, host, deps } = this;
    // Pages start small (a visit that stops soon reads little it does not use) and double.
    let limit: number = FRONTIER_LIMITS.hostUrlFirstPage;
    for (;;) {
      // A pass over a large host is many pages: none is read once the deadline is near.
      if (deps.now() + DEADLINE_MARGIN_MS > deps.deadline)
        return { kind: 'hand-back', visitAt: deps.now(), why: 'deadline' };
      const cancelled = (await deps.crawlStates?.stateOf(crawlId)) === 'cancelled';
      const page = await deps.hostUrls.page(crawlId, host, this.cursor, limit);
      limit = Math.min(2 * limit, FRONTIER_LIMITS.hostUrlPage);
      for (const url of page.urls) {
        // Past the key the pass started after, once round: the pass is over, the next begins.
        if (this.pass.wrapped && this.pass.from !== undefined && url.key > this.pass.from) {
          const end = await this.endPass();
          if (end) return end;
          this.pass = this.newPass(this.cursor);
        }
        const end = await this.take(url, cancelled);
        if (end) return end;
        this.cursor = url.key;
      }
      if (page.next !== undefined) {
        this.cursor = page.next;
        continue;
      }
      // The partition's end: the walk goes on from its start.
      this.cursor = undefined;
      if (this.pass.from === undefined || this.pass.wrapped) {
        const end = await this.endPass();
        if (end) return end;
        this.pass = this.newPass(undefined);
      } else this.pass.wrapped = true;
    }
  }

  /** Deals with one URL item of the pass: counted if done, fetched if ready. */
  async take(url: HostUrl, cancelled: boolean): Promise<VisitEnd | undefined> {
    const { pass } = this;
    if (url.st === 'done') {
      this.inflight.delete(url.key);
      this.finalized.delete(url.key);
      addToTally(pass.tally, url);
      if (url.part) pass.parts.add(url.part);
      return undefined;
    }
    pass.clean = false;
    // Finalized since its page was read: done, but the pass has not read it so (nor its tally).
    if (url.st === 'held' || this.inflight.has(url.key) || this.finalized.has(url.key)) {
      pass.awaited = true;
      return undefined;
    }
    // A cancelled crawl's URLs end at once as `cancelled` (no request): postponed retries and the
    // host's pace do not hold them, so a cancelled crawl's hosts drain on their next pass.
    if (!cancelled && (url.retryAt ?? 0) > this.deps.now()) {
      pass.retryAt = Math.min(pass.retryAt, url.retryAt ?? 0);
      return undefined;
    }
    return this.fetchOne(url, cancelled);
  }

  /** Fetches one ready URL; a VisitEnd when the visit must end before it. */
  async fetchOne(url: HostUrl, cancelled: boolean): Promise<VisitEnd | undefined> {
    const { crawlId, deps, pacer } = this;
    // As many results awaited as the host item may hold: none is fetched until some are in.
    if (this.inflight.size >= FRONTIER_LIMITS.inflightKeys) {
      await this.refreshInflight();
      if (this.inflight.size >= FRONTIER_LIMITS.inflightKeys)
        return { kind: 'hand-back', visitAt: deps.now() + INFLIGHT_RECHECK_MS, why: 'results' };
    }
    await deps.room?.();
    // Wait for the host's pace here, not inside the step: the wait must fit before the deadline.
    // A robots.txt fetch first (its redirects, then the page) is checked request by request (fetcher).
    const startAt = cancelled ? deps.now() : Math.max(deps.now(), pacer.state.nextAt);
    if (startAt + this.requestBudget > deps.deadline || !(await waitUntil(startAt, this.requestBudget, deps)))
      return { kind: 'hand-back', visitAt: startAt, why: 'deadline' };
    // Read again for each URL, after its wait (the adapter caches it a few seconds): a cancel or a
    // spent budget stops the visit's requests at once, not at its next page.
    const state = await deps.crawlStates?.stateOf(crawlId);
    if (crawlClosed(crawlId, state)) return { kind: 'stop', why: 'crawl-complete' };
    let decision: UrlDecision;
    try {
      decision =
        state === 'cancelled'
          ? { kind: 'result', result: cancelledResult(subjectOf(crawlId, url), new Date(deps.now())) }
          : await fetchUrl(crawlId, url, this.config, { ...deps, fetcher: this.fetcher, pace: pacer });
    } catch (error) {
      if (!(error instanceof OutOfTime)) throw error;
      return { kind: 'hand-back', visitAt: Math.max(deps.now(), pacer.state.nextAt), why: 'deadline' };
    }
    this.decided++;
    return this.handOn(url, decision);
  }

  /** A URL decided: recorded, or given to the batch; a VisitEnd when the visit must end after it. */
  async handOn(url: HostUrl, decision: UrlDecision): Promise<VisitEnd | undefined> {
    const { deps } = this;
    // A retry is postponed on its item: visits skip the URL until then (a later pass reads it so).
    if (decision.kind === 'retry') {
      await deps.hostUrls.postpone(this.crawlId, this.host, url.key, decision.attempts, decision.retryAt);
      this.pass.retryAt = Math.min(this.pass.retryAt, decision.retryAt);
      return undefined;
    }
    // robots.txt not known yet: no URL of the host is fetched before it is.
    if (decision.kind === 'robots-wait') return { kind: 'hand-back', visitAt: decision.until, why: 'robots' };
    this.inflight.add(url.key);
    this.pass.awaited = true;
    this.unsettled++;
    if (decision.kind !== 'captured') {
      this.onDecision(decision);
      return undefined;
    }
    const { render, ...page } = decision;
    if (render === undefined) {
      this.onDecision(page);
      return undefined;
    }
    // The browser makes requests of its own to the host: none of the crawler's may meet them. The
    // host is held until the render function ends the hold, with the pace its requests took
    // (render-batch.ts); it is looked at every holdRecheckMs meanwhile.
    this.rendering = { token: crypto.randomUUID(), until: deps.now() + RENDER_LIMITS.holdMaxMs };
    this.onDecision({
      ...page,
      render: { ...render, hold: this.rendering.token, holdUntil: this.rendering.until },
    });
    return { kind: 'hand-back', visitAt: deps.now() + RENDER_LIMITS.holdRecheckMs, why: 'render' };
  }

  /** A pass ended: the host drains, the visit walks again (more came in), or it hands the host back. */
  async endPass(): Promise<VisitEnd | undefined> {
    const { deps, pass } = this;
    const now = deps.now();
    const wokenDuring = deps.wokenHere !== undefined && deps.wokenHere() !== pass.woken;
    if (pass.clean && !wokenDuring) {
      const parts = await partsWritten(pass.parts, deps);
      if (parts === 'written') return { kind: 'drained', tally: pass.tally };
      if (parts === 'out-of-time') return { kind: 'hand-back', visitAt: deps.now(), why: 'deadline' };
      return { kind: 'hand-back', visitAt: now + PART_RECHECK_MS, why: 'waiting' };
    }
    // Settling waits for the batch's running flush: worth it only if a request could still start.
    const canStart = Math.max(now, this.pacer.state.nextAt) + this.requestBudget <= deps.deadline;
    let settled = false;
    if (this.unsettled > 0 && deps.settle && canStart) {
      this.unsettled = 0;
      await deps.settle();
      settled = true;
    }
    // Walk again only if the batch's admissions reached the host during the pass (or, not knowing,
    // after a settle), or a retry met is due by now. Links of other batches wake the host too: its
    // next visit meets them, and a drain fails on them.
    const woken = deps.wokenHere ? deps.wokenHere() !== pass.woken : settled;
    if (canStart && (woken || pass.retryAt <= deps.now())) return undefined;
    const awaited =
      pass.awaited || this.inflight.size > 0 ? now + INFLIGHT_RECHECK_MS : Number.POSITIVE_INFINITY;
    const visitAt = Math.min(awaited, pass.retryAt);
    if (!Number.isFinite(visitAt)) return { kind: 'hand-back', visitAt: now, why: 'waiting' };
    return { kind: 'hand-back', visitAt, why: visitAt === awaited ? 'results' : 'waiting' };
  }
}

/** A visit that failed part way, with what it did so far (VisitReport's pace, inflight and cursor). */
export class VisitFailedError extends Error {
  readonly progress: Pick<VisitReport, 'pace' | 'inflight' | 'cursor' | 'rendering'>;

  constructor(cause: unknown, progress: Pick<VisitReport, 'pace' | 'inflight' | 'cursor' | 'rendering'>) {
    super(`visit failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'VisitFailedError';
    this.progress = progress;
  }
}

function subjectOf(crawlId: string, url: HostUrl) {
  return { crawlId, key: url.key, url: url.url, depth: url.depth };
}
