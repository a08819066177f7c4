/**
 * "My crawl is done", read from the frontier rather than from the queues: a state directory or an
 * endpoint may hold other crawls' messages (delayed up to 900 s), and those must neither hold nor
 * time this crawl. Done means:
 *
 * - `complete`: the aggregate function confirmed completion (every host drained, every index part
 *   written: lambdas/core/batches/aggregate-batch.ts), so the index is whole;
 * - `cancelled` (`crawler cancel`, `--max-cost-usd`) and no host of the crawl is active any more:
 *   every URL has its `cancelled` (or earlier) result and its index line. The host items' shards are
 *   not read at one instant, so "none active" is settled as completion settles it
 *   (lambdas/core/batches/completion-check.ts: no host, the sums, no host, the same sums).
 *
 * The poll is one GetItem per interval (plus the shards' Queries while cancelled), and one more
 * whenever `wake` says something may have changed: a local crawl's end is seen when the aggregate
 * invocation that confirmed it returns, not up to an interval later.
 */
import { drainedTotals } from '../lambdas/core/batches/index.ts';
import type { CrawlCounters, HostVisits } from '../lambdas/core/crawl/index.ts';

export interface CrawlProbe extends Pick<HostVisits, 'anyActive' | 'doneTotals'> {
  readCounters(crawlId: string): Promise<CrawlCounters | undefined>;
}

export type CrawlEnd = 'complete' | 'cancelled' | 'interrupted';

export interface WaitForCrawlOptions {
  /** Between reads; default 250 ms. */
  intervalMs?: number;
  /** Aborted: stop waiting, the crawl is `interrupted` (Ctrl-C). */
  signal?: AbortSignal;
  /** Subscribes a listener called when the crawl may have ended (read again then); returns its unsubscribe. */
  wake?: (listener: () => void) => () => void;
}

export async function waitForCrawl(
  probe: CrawlProbe,
  crawlId: string,
  options: WaitForCrawlOptions = {},
): Promise<CrawlEnd> {
  const interval = options.intervalMs ?? 250;
  // A wake during a read is kept, so the read after it is not left to the interval.
  let woken = false;
  let onWake: (() => void) | undefined;
  const unsubscribe = options.wake?.(() => {
    woken = true;
    onWake?.();
  });
  try {
    for (;;) {
      if (options.signal?.aborted) return 'interrupted';
      woken = false;
      const counters = await probe.readCounters(crawlId);
      if (counters?.state === 'complete') return 'complete';
      if (counters?.state === 'cancelled' && (await drainedTotals(probe, crawlId)) !== undefined)
        return 'cancelled';
      if (!woken)
        await sleep(interval, options.signal, (end) => {
          onWake = end;
        });
      onWake = undefined;
    }
  } finally {
    unsubscribe?.();
  }
}

/** Ends after `ms`, on abort, or when the function handed to `endEarly` is called. */
function sleep(
  ms: number,
  signal: AbortSignal | undefined,
  endEarly: (end: () => void) => void,
): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    endEarly(done);
  });
}
