/**
 * "My crawl is done", read from the frontier rather than from the queues: a state directory or an
 * endpoint may hold other crawls' messages (delayed up to 900 s), and those must neither hold nor
 * time this crawl. Done means:
 *
 * - `complete`: the aggregate function confirmed completion (every host drained, every index part
 *   written: lambdas/core/aggregate-batch.ts), so the index is whole;
 * - `cancelled` (`crawler cancel`, `--max-cost-usd`) and no host of the crawl is active any more:
 *   every URL has its `cancelled` (or earlier) result and its index line. The host items' shards are
 *   not read at one instant, so "none active" is settled as completion settles it
 *   (lambdas/core/completion-check.ts: no host, the sums, no host, the same sums).
 *
 * The poll is one GetItem per interval (plus the shards' Queries while cancelled).
 */
import { drainedTotals } from '../lambdas/core/completion-check.ts';
import type { CrawlCounters, HostVisits } from '../lambdas/core/ports.ts';

export interface CrawlProbe extends Pick<HostVisits, 'anyActive' | 'doneTotals'> {
  readCounters(crawlId: string): Promise<CrawlCounters | undefined>;
}

export type CrawlEnd = 'complete' | 'cancelled' | 'interrupted';

export interface WaitForCrawlOptions {
  /** Between reads; default 250 ms. */
  intervalMs?: number;
  /** Aborted: stop waiting, the crawl is `interrupted` (Ctrl-C). */
  signal?: AbortSignal;
}

export async function waitForCrawl(
  probe: CrawlProbe,
  crawlId: string,
  options: WaitForCrawlOptions = {},
): Promise<CrawlEnd> {
  const interval = options.intervalMs ?? 250;
  for (;;) {
    if (options.signal?.aborted) return 'interrupted';
    const counters = await probe.readCounters(crawlId);
    if (counters?.state === 'complete') return 'complete';
    if (counters?.state === 'cancelled' && (await drainedTotals(probe, crawlId)) !== undefined)
      return 'cancelled';
    await sleep(interval, options.signal);
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
