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
  type PageToRender,
  type RenderHold,
} from '../crawl/index.ts';
import { crawlRequests } from './crawl-requests.ts';
import { fetchUrl, type UrlDecision, type UrlStepDeps } from './fetch-task.ts';
import { type PaceState, VisitPacer } from './visit-pacer.ts';

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
/** Time kept free after the last request's deadline, for the batch's sends. */
const DEADLINE_MARGIN_MS = 1_000;
/**
 * A wait for the host's pace looks at the deadline at least this often: a deadline that moves
 * earlier (a local runtime winding down on Ctrl-C) ends the wait, not only the next request.
 */
const DEADLINE_RECHECK_MS = 1_000;

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
  const { crawlId, host } = start;
  const pacer = new VisitPacer(start.pace);
  const inflight = new Set(start.inflight);
  /**
   * URLs that left `inflight` because their result was found finalized (refreshInflight) while a
   * page read before that may still show them not done: that copy must not fetch them again.
   */
  const finalized = new Set<string>();
  // A PDF's text extraction ends by the visit's deadline (page-reading.ts): every crawl stores PDFs.
  const requestBudget = config.limits.totalTimeoutMs + DEADLINE_MARGIN_MS;
  let decided = 0;
  /** Decisions whose links may not be in the frontier yet. */
  let unsettled = 0;
  /** The key of the last URL the visit dealt with (absent: the partition's start). */
  let cursor = start.cursor;
  let rendering = start.rendering;
  const report = (end: VisitEnd): VisitReport => ({
    end,
    pace: pacer.state,
    inflight: [...inflight],
    cursor,
    decided,
    ...(rendering === undefined ? {} : { rendering }),
  });
  const newPass = (from: string | undefined): Pass => ({
    from,
    wrapped: false,
    clean: true,
    tally: emptyTally(),
    parts: new Set(),
    woken: deps.wokenHere?.(),
    awaited: false,
    retryAt: Number.POSITIVE_INFINITY,
  });
  let pass = newPass(cursor);

  // Every request of the visit (robots.txt and its redirects, pages) waits here for the host's pace
  // (the gap from the previous request's real departure: after robots.txt, its Crawl-delay), and
  // none starts that could not end before the deadline: the visit then hands its host back, no
  // attempt spent. The crawl's credentials and proxy are added before the wait (crawl-requests.ts).
  const paced: PageFetcher = {
    fetch: async (request) => {
      if (!(await waitUntil(pacer.departureAt(deps.now()), requestBudget, deps))) throw new OutOfTime();
      await pacer.depart(deps.now, deps.sleep);
      try {
        const response = await deps.fetcher.fetch(request);
        if (response.sentAt !== undefined) pacer.sent(response.sentAt);
        return response;
      } catch (error) {
        if (error instanceof PermanentError && error.code === ADDRESS_BLOCKED) pacer.refund();
        throw error;
      }
    },
  };
  const fetcher = crawlRequests(paced, config, deps.credentials, deps.now);

  /** The URLs in flight whose results are finalized since leave `inflight` (one BatchGet, not a pass). */
  const refreshInflight = async () => {
    for (const url of await deps.hostUrls.get(crawlId, host, [...inflight]))
      if (url.st === 'done') {
        inflight.delete(url.key);
        finalized.add(url.key);
      }
  };

  /** Fetches one ready URL; a VisitEnd when the visit must end before it. */
  const fetchOne = async (url: HostUrl, cancelled: boolean): Promise<VisitEnd | undefined> => {
    // As many results awaited as the host item may hold: none is fetched until some are in.
    if (inflight.size >= FRONTIER_LIMITS.inflightKeys) {
      await refreshInflight();
      if (inflight.size >= FRONTIER_LIMITS.inflightKeys)
        return { kind: 'hand-back', visitAt: deps.now() + INFLIGHT_RECHECK_MS, why: 'results' };
    }
    await deps.room?.();
    // Wait for the host's pace here, not inside the step: the wait must fit before the deadline.
    // A robots.txt fetch first (its redirects, then the page) is checked request by request (fetcher).
    const startAt = cancelled ? deps.now() : Math.max(deps.now(), pacer.state.nextAt);
    if (startAt + requestBudget > deps.deadline || !(await waitUntil(startAt, requestBudget, deps)))
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
          : await fetchUrl(crawlId, url, config, { ...deps, fetcher, pace: pacer });
    } catch (error) {
      if (!(error instanceof OutOfTime)) throw error;
      return { kind: 'hand-back', visitAt: Math.max(deps.now(), pacer.state.nextAt), why: 'deadline' };
    }
    decided++;
    // A retry is postponed on its item: visits skip the URL until then (a later pass reads it so).
    if (decision.kind === 'retry') {
      await deps.hostUrls.postpone(crawlId, host, url.key, decision.attempts, decision.retryAt);
      pass.retryAt = Math.min(pass.retryAt, decision.retryAt);
      return undefined;
    }
    // robots.txt not known yet: no URL of the host is fetched before it is.
    if (decision.kind === 'robots-wait') return { kind: 'hand-back', visitAt: decision.until, why: 'robots' };
    inflight.add(url.key);
    pass.awaited = true;
    unsettled++;
    if (decision.kind !== 'captured') {
      onDecision(decision);
      return undefined;
    }
    const { render, ...page } = decision;
    if (render === undefined) {
      onDecision(page);
      return undefined;
    }
    // The browser makes requests of its own to the host: none of the crawler's may meet them. The
    // host is held until the render function ends the hold, with the pace its requests took
    // (render-batch.ts); it is looked at every holdRecheckMs meanwhile.
    rendering = { token: crypto.randomUUID(), until: deps.now() + RENDER_LIMITS.holdMaxMs };
    onDecision({ ...page, render: { ...render, hold: rendering.token, holdUntil: rendering.until } });
    return { kind: 'hand-back', visitAt: deps.now() + RENDER_LIMITS.holdRecheckMs, why: 'render' };
  };

  /** Deals with one URL item of the pass: counted if done, fetched if ready. */
  const take = async (url: HostUrl, cancelled: boolean): Promise<VisitEnd | undefined> => {
    if (url.st === 'done') {
      inflight.delete(url.key);
      finalized.delete(url.key);
      addToTally(pass.tally, url);
      if (url.part) pass.parts.add(url.part);
      return undefined;
    }
    pass.clean = false;
    // Finalized since its page was read: done, but the pass has not read it so (nor its tally).
    if (url.st === 'held' || inflight.has(url.key) || finalized.has(url.key)) {
      pass.awaited = true;
      return undefined;
    }
    // A cancelled crawl's URLs end at once as `cancelled` (no request): postponed retries and the
    // host's pace do not hold them, so a cancelled crawl's hosts drain on their next pass.
    if (!cancelled && (url.retryAt ?? 0) > deps.now()) {
      pass.retryAt = Math.min(pass.retryAt, url.retryAt ?? 0);
      return undefined;
    }
    return fetchOne(url, cancelled);
  };

  /** A pass ended: the host drains, the visit walks again (more came in), or it hands the host back. */
  const endPass = async (): Promise<VisitEnd | undefined> => {
    const now = deps.now();
    const wokenDuring = deps.wokenHere !== undefined && deps.wokenHere() !== pass.woken;
    if (pass.clean && !wokenDuring) {
      const parts = await partsWritten(pass.parts, deps);
      if (parts === 'written') return { kind: 'drained', tally: pass.tally };
      if (parts === 'out-of-time') return { kind: 'hand-back', visitAt: deps.now(), why: 'deadline' };
      return { kind: 'hand-back', visitAt: now + PART_RECHECK_MS, why: 'waiting' };
    }
    // Settling waits for the batch's running flush: worth it only if a request could still start.
    const canStart = Math.max(now, pacer.state.nextAt) + requestBudget <= deps.deadline;
    let settled = false;
    if (unsettled > 0 && deps.settle && canStart) {
      unsettled = 0;
      await deps.settle();
      settled = true;
    }
    // Walk again only if the batch's admissions reached the host during the pass (or, not knowing,
    // after a settle), or a retry met is due by now. Links of other batches wake the host too: its
    // next visit meets them, and a drain fails on them.
    const woken = deps.wokenHere ? deps.wokenHere() !== pass.woken : settled;
    if (canStart && (woken || pass.retryAt <= deps.now())) return undefined;
    const awaited = pass.awaited || inflight.size > 0 ? now + INFLIGHT_RECHECK_MS : Number.POSITIVE_INFINITY;
    const visitAt = Math.min(awaited, pass.retryAt);
    if (!Number.isFinite(visitAt)) return { kind: 'hand-back', visitAt: now, why: 'waiting' };
    return { kind: 'hand-back', visitAt, why: visitAt === awaited ? 'results' : 'waiting' };
  };

  // A failure part way (an AWS call that kept failing) still reports what the visit did: the URLs
  // it decided (their results go out with the batch), its pace and where it stopped, for the
  // host's release.
  try {
    // A page of the host is being rendered: nothing is fetched until its hold ends (or lapses).
    if (rendering !== undefined) {
      if (rendering.until > deps.now())
        return report({
          kind: 'hand-back',
          visitAt: Math.min(rendering.until, deps.now() + RENDER_LIMITS.holdRecheckMs),
          why: 'render',
        });
      rendering = undefined;
    }
    // The previous visit's URLs awaited: those finalized since are known at once, without a pass.
    if (inflight.size > 0) await refreshInflight();
    // Pages start small (a visit that stops soon reads little it does not use) and double.
    let limit: number = FRONTIER_LIMITS.hostUrlFirstPage;
    for (;;) {
      // A pass over a large host is many pages: none is read once the deadline is near.
      if (deps.now() + DEADLINE_MARGIN_MS > deps.deadline)
        return report({ kind: 'hand-back', visitAt: deps.now(), why: 'deadline' });
      const cancelled = (await deps.crawlStates?.stateOf(crawlId)) === 'cancelled';
      const page = await deps.hostUrls.page(crawlId, host, cursor, limit);
      limit = Math.min(2 * limit, FRONTIER_LIMITS.hostUrlPage);
      for (const url of page.urls) {
        // Past the key the pass started after, once round: the pass is over, the next begins.
        if (pass.wrapped && pass.from !== undefined && url.key > pass.from) {
          const end = await endPass();
          if (end) return report(end);
          pass = newPass(cursor);
        }
        const end = await take(url, cancelled);
        if (end) return report(end);
        cursor = url.key;
      }
      if (page.next !== undefined) {
        cursor = page.next;
        continue;
      }
      // The partition's end: the walk goes on from its start.
      cursor = undefined;
      if (pass.from === undefined || pass.wrapped) {
        const end = await endPass();
        if (end) return report(end);
        pass = newPass(undefined);
      } else pass.wrapped = true;
    }
  } catch (error) {
    throw new VisitFailedError(error, {
      pace: pacer.state,
      inflight: [...inflight],
      cursor,
      ...(rendering === undefined ? {} : { rendering }),
    });
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

/** Sleeps until `at`; false (and no longer) once a request starting then could not end before the deadline. */
async function waitUntil(at: number, requestBudget: number, deps: VisitDeps): Promise<boolean> {
  for (let now = deps.now(); now < at; now = deps.now()) {
    if (at + requestBudget > deps.deadline) return false;
    await deps.sleep(Math.min(at - now, DEADLINE_RECHECK_MS));
  }
  return at + requestBudget <= deps.deadline;
}

/**
 * Whether every index part the host's done URLs name is written. A large host names thousands of
 * parts: they are checked a bounded number at a time (one at a time at ~20 ms, 3,000 used up a 60 s
 * function), and none starts once the deadline is near, so a drain never outlives its invocation;
 * out of time, the host is handed back, and the parts found stay in the container's cache
 * (fetch-deps.ts: a part once written is never removed), so the next check goes on from there.
 */
async function partsWritten(
  names: ReadonlySet<string>,
  deps: VisitDeps,
): Promise<'written' | 'missing' | 'out-of-time'> {
  const exists = deps.partExists;
  if (!exists) return 'written';
  const parts = [...names];
  let next = 0;
  let result: 'written' | 'missing' | 'out-of-time' = 'written';
  const worker = async () => {
    while (result === 'written' && next < parts.length) {
      if (deps.now() + DEADLINE_MARGIN_MS > deps.deadline) {
        result = 'out-of-time';
        return;
      }
      if (!(await exists(parts[next++] as string))) result = 'missing';
    }
  };
  const workers = Math.min(FRONTIER_LIMITS.partChecksAtOnce, parts.length);
  await Promise.all(Array.from({ length: workers }, worker));
  return result;
}
