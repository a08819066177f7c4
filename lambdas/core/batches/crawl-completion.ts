/**
 * A crawl's completion as the aggregate batch checks it (aggregate-batch.ts; docs/frontier.md,
 * "Completion"): confirmed from the hosts (none active, every index part a done URL names written),
 * then summary.json written once and the end announced. The default crawl never completes: its
 * summary is rewritten from its counters instead. Apart from the batch: the batch decides when to
 * check, this module what a check does.
 */
import { resultsPrefix, summaryKey } from '../../shared/contracts.ts';
import { type CrawlCounters, DEFAULT_CRAWL_ID, type ResultStore } from '../crawl/index.ts';
import { announceEnd } from './aggregate-events.ts';
import type { AggregateDeps, AggregateReport, CheckedCrawls } from './aggregate-types.ts';
import { summaryFromCounters } from './crawl-summary.ts';

/** Confirms completion (when no host is active) and writes summary.json once. Throws on a failed call. */
export async function complete(
  crawlId: string,
  before: CrawlCounters,
  deps: AggregateDeps & CheckedCrawls,
  report: AggregateReport,
): Promise<CrawlCounters> {
  deps.checked.add(crawlId);
  // The default crawl takes bare URLs for ever: it is never complete (a completed crawl's counters
  // and summary are final, and it would keep taking messages). Its summary is its numbers so far.
  if (crawlId === DEFAULT_CRAWL_ID) {
    await writeSnapshot(crawlId, before, deps, report);
    return before;
  }
  // A crash between the state flip and the summary: whoever comes next writes it (once).
  if (before.state === 'complete') {
    await writeSummary(crawlId, before, false, deps, report);
    return before;
  }
  if (before.state !== 'running') return before;
  const now = deps.now ?? (() => new Date());
  const confirmed = await deps.frontier.confirmCompletion(crawlId, now(), (parts) =>
    allWritten(deps.blobs, crawlId, parts),
  );
  report.counters[crawlId] = confirmed.counters;
  // Complete but not by this call: also a flip whose answer was lost and is checked again (retryStep).
  if (confirmed.completedNow || confirmed.counters.state === 'complete')
    await writeSummary(crawlId, confirmed.counters, confirmed.completedNow, deps, report);
  return confirmed.counters;
}

async function writeSummary(
  crawlId: string,
  counters: CrawlCounters,
  completedNow: boolean,
  deps: AggregateDeps,
  report: AggregateReport,
): Promise<void> {
  const now = deps.now ?? (() => new Date());
  // Written once: a repeat after a crash between completion and this write writes it then.
  const summary = summaryFromCounters(crawlId, counters, now());
  const written = await deps.blobs.putIfAbsent(
    summaryKey(crawlId),
    new TextEncoder().encode(`${JSON.stringify(summary, null, 2)}\n`),
    'application/json',
  );
  if (written) report.summaries.push({ crawlId, key: summaryKey(crawlId), completedNow });
  await announceEnd(crawlId, counters, deps);
}

/** An open-ended crawl's summary, rewritten after each batch that counted its results: state `running`. */
async function writeSnapshot(
  crawlId: string,
  counters: CrawlCounters,
  deps: AggregateDeps,
  report: AggregateReport,
): Promise<void> {
  const now = deps.now ?? (() => new Date());
  const summary = summaryFromCounters(crawlId, counters, now());
  await deps.blobs.put(
    summaryKey(crawlId),
    new TextEncoder().encode(`${JSON.stringify(summary, null, 2)}\n`),
    'application/json',
  );
  report.summaries.push({ crawlId, key: summaryKey(crawlId), completedNow: false });
}

/** Whether every one of `parts` (index part keys of the crawl) exists: one listing of the crawl's parts. */
async function allWritten(blobs: ResultStore, crawlId: string, parts: ReadonlySet<string>): Promise<boolean> {
  if (parts.size === 0) return true;
  const missing = new Set(parts);
  for await (const key of blobs.list(resultsPrefix(crawlId))) {
    missing.delete(key);
    if (missing.size === 0) return true;
  }
  return false;
}
