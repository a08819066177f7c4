/**
 * Per-crawl budgets (`--max-cost-usd`). Deployed functions cannot see the AWS bill, so a crawl's
 * spend is estimated from what its counters count exactly: the HTTP requests it made, times the
 * AWS cost per page that `npm run bench` measured from counted calls (docs/performance.md).
 */
import type { CrawlCounters } from './ports.ts';

/** Measured by `npm run bench` (counted AWS calls at list prices): $3.90 per million pages. */
export const ESTIMATED_COST_PER_PAGE_USD = 3.9 / 1_000_000;

export function estimatedCostUsd(counters: Pick<CrawlCounters, 'requests'>): number {
  return counters.requests * ESTIMATED_COST_PER_PAGE_USD;
}

export function budgetSpent(
  counters: Pick<CrawlCounters, 'requests'>,
  maxCostUsd: number | undefined,
): boolean {
  return maxCostUsd !== undefined && estimatedCostUsd(counters) >= maxCostUsd;
}
