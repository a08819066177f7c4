/**
 * One host visit (docs/design/host-visits.md): the holder of a visit owns its host for the visit and
 * fetches the host's ready URLs one at a time at the host's pace, kept in memory (VisitPacer), so
 * politeness holds by construction: one request in flight, each the host's delay after the last,
 * with no per-URL claim or slot write. Many visits run side by side in one invocation, so billed
 * time is spent fetching. Each stored URL goes straight to the per-URL step (fetch-task.ts) with the
 * crawl's config the visit holds: robots.txt, Crawl-delay, Retry-After and retries pace through the
 * pacer, and a retry is recorded on the URL's item.
 *
 * The visit says how it ended; the batch code sends what it produced and then drains the host,
 * hands it back with a delay, or drops the message.
 */
import type { CrawlConfig } from './crawl-config.ts';
import { cancelledResult, crawlClosed } from './crawl-state.ts';
import { OutOfTime } from './errors.ts';
import { fetchUrl, type UrlDecision, type UrlStepDeps } from './fetch-task.ts';
import { FRONTIER_LIMITS } from './limits.ts';
import type { CrawlStateCheck, HostUrl, HostUrlStore, PageFetcher } from './ports.ts';
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
   * Sends what the batch has produced so far (links admitted into their partitions). A visit that
   * runs out of ready URLs settles once before looking again: its own pages' links may be waiting.
   */
  settle?: () => Promise<void>;
  /**
   * How many times the batch's admissions have woken this host so far. After a settle the visit reads
   * the host's partition again only if this moved: else nothing of the batch reached the host, and a
   * read of a large host costs thousands of items. Absent: it always reads again.
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
}

/** What each decided URL gives the batch: its result or page, and links (fetch-batch.ts). */
export type VisitDecision = Extract<UrlDecision, { kind: 'result' | 'captured' }>;

export type VisitEnd =
  /** Nothing left: no URL to fetch, none waiting for its result. `urls` make the host's tally. */
  | { kind: 'drained'; urls: HostUrl[] }
  /** URLs remain (or results are awaited): visit again at `visitAt`. */
  | { kind: 'hand-back'; visitAt: number; why: 'deadline' | 'waiting' | 'robots' }
  /** The crawl is not one to serve (unknown, or complete): the visit message is dropped. */
  | { kind: 'stop'; why: string };

export interface VisitReport {
  end: VisitEnd;
  pace: PaceState;
  /** URLs decided in this visit (their results are in the batch's output) and earlier ones still open. */
  inflight: string[];
  decided: number;
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

export async function visitHost(
  start: VisitStart,
  config: CrawlConfig,
  deps: VisitDeps,
  onDecision: (decision: VisitDecision) => void,
): Promise<VisitReport> {
  const { crawlId, host } = start;
  const pacer = new VisitPacer(start.pace);
  const inflight = new Set(start.inflight);
  const requestBudget = config.limits.totalTimeoutMs + DEADLINE_MARGIN_MS;
  let decided = 0;
  /** Decisions whose links may not be in the frontier yet. */
  let unsettled = 0;
  const report = (end: VisitEnd): VisitReport => ({
    end,
    pace: pacer.state,
    inflight: [...inflight],
    decided,
  });

  /**
   * Retries postponed by this visit: attempts made and when the next may start, as their items say
   * once read again (the visit does not read its partition after each pass).
   */
  const postponed = new Map<string, { attempts: number; retryAt: number }>();
  const retryAtOf = (url: HostUrl) => postponed.get(url.key)?.retryAt ?? url.retryAt;

  // Every request of the visit (robots.txt and its redirects, pages) waits here for the host's pace
  // (the gap from the previous request's real departure: after robots.txt, its Crawl-delay), and
  // none starts that could not end before the deadline: the visit then hands its host back, no
  // attempt spent.
  const fetcher: PageFetcher = {
    fetch: async (request) => {
      if (!(await waitUntil(pacer.departureAt(deps.now()), requestBudget, deps))) throw new OutOfTime();
      await pacer.depart(deps.now, deps.sleep);
      const response = await deps.fetcher.fetch(request);
      if (response.sentAt !== undefined) pacer.sent(response.sentAt);
      return response;
    },
  };

  // A failure part way (an AWS call that kept failing) still reports what the visit did: the URLs
  // it decided (their results go out with the batch) and its pace, for the host's release.
  try {
    // The host's partition as last read. It is read again only when something may have changed that
    // the visit does not know of: a read of a large host is thousands of items, and every visit
    // starts with one (docs/frontier.md, "The loop").
    let urls: HostUrl[] = [];
    let stale = true;
    let wokenAtRead: number | undefined;
    for (;;) {
      // A cancelled crawl's URLs end at once as `cancelled` (no request): postponed retries and the
      // host's pace do not hold them, so a cancelled crawl's hosts drain on their first visit.
      const cancelled = (await deps.crawlStates?.stateOf(crawlId)) === 'cancelled';
      const fresh = stale;
      if (stale) {
        // Counted before the read: a wake during it makes the visit read again.
        wokenAtRead = deps.wokenHere?.();
        urls = await deps.hostUrls.urls(crawlId, host);
        stale = false;
        for (const url of urls) if (url.st === 'done') inflight.delete(url.key);
      }
      const now = deps.now();
      // As many results awaited as the host item may hold: none is fetched until some are in (a read
      // clears those finalized since).
      if (inflight.size >= FRONTIER_LIMITS.inflightKeys) {
        if (fresh) return report({ kind: 'hand-back', visitAt: now + INFLIGHT_RECHECK_MS, why: 'waiting' });
        stale = true;
        continue;
      }
      const ready = urls
        .filter(
          (url) => url.st === 'new' && !inflight.has(url.key) && (cancelled || (retryAtOf(url) ?? 0) <= now),
        )
        .sort((a, b) => a.depth - b.depth);
      if (ready.length === 0) {
        // Done as read: a URL decided since the read is in `inflight`, so it is open here.
        const open = urls.filter((url) => url.st !== 'done');
        if (open.length === 0) {
          const parts = await partsWritten(urls, deps);
          if (parts === 'written') return report({ kind: 'drained', urls });
          if (parts === 'out-of-time')
            return report({ kind: 'hand-back', visitAt: deps.now(), why: 'deadline' });
          return report({ kind: 'hand-back', visitAt: now + PART_RECHECK_MS, why: 'waiting' });
        }
        // Settling waits for the batch's running flush: worth it only if a request could still start.
        const canStart = Math.max(now, pacer.state.nextAt) + requestBudget <= deps.deadline;
        let settled = false;
        if (unsettled > 0 && deps.settle && canStart) {
          unsettled = 0;
          await deps.settle();
          settled = true;
        }
        // Read again only if the batch's admissions reached the host since the read (or, not knowing,
        // after a settle). Links of other batches wake the host too: its next visit reads them, and a
        // drain fails on them.
        const woken = deps.wokenHere ? deps.wokenHere() !== wokenAtRead : settled;
        if (canStart && woken) {
          stale = true;
          continue;
        }
        const retries = open.flatMap((url) =>
          url.st === 'new' && !inflight.has(url.key) ? [retryAtOf(url) ?? now] : [],
        );
        const awaited = open.length > retries.length ? now + INFLIGHT_RECHECK_MS : Number.POSITIVE_INFINITY;
        return report({ kind: 'hand-back', visitAt: Math.min(awaited, ...retries), why: 'waiting' });
      }
      for (const url of ready) {
        if (inflight.size >= FRONTIER_LIMITS.inflightKeys) break;
        await deps.room?.();
        // Wait for the host's pace here, not inside the step: the wait must fit before the deadline.
        // A robots.txt fetch first (its redirects, then the page) is checked request by request (fetcher).
        const startAt = cancelled ? deps.now() : Math.max(deps.now(), pacer.state.nextAt);
        if (startAt + requestBudget > deps.deadline)
          return report({ kind: 'hand-back', visitAt: startAt, why: 'deadline' });
        if (!(await waitUntil(startAt, requestBudget, deps)))
          return report({ kind: 'hand-back', visitAt: startAt, why: 'deadline' });
        // Read again for each URL, after its wait (the adapter caches it a few seconds): a cancel or a
        // spent budget stops the visit's requests at once, not at its next round.
        const state = await deps.crawlStates?.stateOf(crawlId);
        if (crawlClosed(crawlId, state)) return report({ kind: 'stop', why: 'crawl-complete' });
        let decision: UrlDecision;
        try {
          decision =
            state === 'cancelled'
              ? { kind: 'result', result: cancelledResult(subjectOf(crawlId, url), new Date(deps.now())) }
              : await fetchUrl(
                  crawlId,
                  { ...url, attempts: postponed.get(url.key)?.attempts ?? url.attempts },
                  config,
                  { ...deps, fetcher, pace: pacer },
                );
        } catch (error) {
          if (!(error instanceof OutOfTime)) throw error;
          const visitAt = Math.max(deps.now(), pacer.state.nextAt);
          return report({ kind: 'hand-back', visitAt, why: 'deadline' });
        }
        // A retry is postponed on its item: visits skip the URL until then.
        if (decision.kind === 'retry') {
          await deps.hostUrls.postpone(crawlId, host, url.key, decision.attempts, decision.retryAt);
          postponed.set(url.key, { attempts: decision.attempts, retryAt: decision.retryAt });
        }
        decided++;
        if (decision.kind === 'retry') continue;
        // robots.txt not known yet: no URL of the host is fetched before it is.
        if (decision.kind === 'robots-wait')
          return report({ kind: 'hand-back', visitAt: decision.until, why: 'robots' });
        inflight.add(url.key);
        unsettled++;
        onDecision(decision);
      }
    }
  } catch (error) {
    throw new VisitFailedError(error, { pace: pacer.state, inflight: [...inflight] });
  }
}

/** A visit that failed part way, with what it did so far (VisitReport's pace and inflight). */
export class VisitFailedError extends Error {
  readonly progress: Pick<VisitReport, 'pace' | 'inflight'>;

  constructor(cause: unknown, progress: Pick<VisitReport, 'pace' | 'inflight'>) {
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
  urls: readonly HostUrl[],
  deps: VisitDeps,
): Promise<'written' | 'missing' | 'out-of-time'> {
  const exists = deps.partExists;
  if (!exists) return 'written';
  const parts = [...new Set(urls.flatMap((url) => (url.part ? [url.part] : [])))];
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
