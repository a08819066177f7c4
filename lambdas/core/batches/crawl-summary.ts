/** A crawl's summary (`crawls/<crawlId>/summary.json`, `crawler status`) from its counters. */
import { OUTCOMES, type Outcome } from '../base/index.ts';
import type { CrawlCounters } from '../crawl/index.ts';

/**
 * `crawls/<crawlId>/summary.json`: the crawl's final numbers, written once when it completes; for the
 * never-ending `default` crawl, its numbers so far (state `running`, `endedAt` the time they were
 * taken), rewritten after every batch that counts its results.
 */
export interface CrawlSummaryRecord {
  crawlId: string;
  state: CrawlCounters['state'];
  startedAt?: string;
  endedAt: string;
  /** Wall time from startedAt to endedAt. */
  seconds?: number;
  queued: number;
  /** URLs with a result (every outcome). */
  done: number;
  /** Every outcome, zeros included. */
  byOutcome: Record<Outcome, number>;
  /** Payload bytes stored. */
  bytes: number;
  /** Results that came from an HTTP response (fetched, redirected, failed with a status). */
  requests: number;
  /** Fetched pages (outcome `fetched`) per second of `seconds`. */
  pagesPerSecond?: number;
}

/** The summary of a crawl from its counters item; `now` stands in for a missing `endedAt`. */
export function summaryFromCounters(crawlId: string, counters: CrawlCounters, now: Date): CrawlSummaryRecord {
  const byOutcome = Object.fromEntries(OUTCOMES.map((o) => [o, counters.byOutcome[o] ?? 0])) as Record<
    Outcome,
    number
  >;
  const endedAt = counters.endedAt ?? now.toISOString();
  const started = counters.startedAt === undefined ? Number.NaN : Date.parse(counters.startedAt);
  const ended = Date.parse(endedAt);
  const seconds =
    Number.isNaN(started) || Number.isNaN(ended) ? undefined : Math.max(0.001, (ended - started) / 1000);
  return {
    crawlId,
    state: counters.state,
    ...(counters.startedAt === undefined ? {} : { startedAt: counters.startedAt }),
    endedAt,
    ...(seconds === undefined
      ? {}
      : {
          seconds: Number(seconds.toFixed(3)),
          pagesPerSecond: Number((byOutcome.fetched / seconds).toFixed(2)),
        }),
    queued: counters.queued,
    done: counters.done,
    byOutcome,
    bytes: counters.bytes,
    requests: counters.requests,
  };
}
