/**
 * Per-crawl budgets (`--max-cost-usd`). Deployed functions cannot see the AWS bill, so a crawl is
 * charged what its AWS calls cost at list prices, as counted (lambdas/shared/aws-call-counter.ts,
 * priced by aws-prices.ts, the same figures summary.json reports): each fetch flush that captured
 * pages charges the counted cost of the container's calls since the last charge, split among the
 * crawls whose pages it captured by their number of pages. The charge is kept in micro-dollars.
 */

export const MICRO_USD_PER_USD = 1_000_000;

/** True once `chargedMicroUsd` reaches the crawl's budget (none: never). */
export function budgetSpent(chargedMicroUsd: number, maxCostUsd: number | undefined): boolean {
  return maxCostUsd !== undefined && chargedMicroUsd >= maxCostUsd * MICRO_USD_PER_USD;
}

/** `microUsd` shared among the crawls of `pagesByCrawl` in proportion to their pages. */
export function splitCharge(
  microUsd: number,
  pagesByCrawl: ReadonlyMap<string, number>,
): Map<string, number> {
  let pages = 0;
  for (const count of pagesByCrawl.values()) pages += count;
  const shares = new Map<string, number>();
  if (pages <= 0 || !(microUsd > 0)) return shares;
  for (const [crawlId, count] of pagesByCrawl) if (count > 0) shares.set(crawlId, (microUsd * count) / pages);
  return shares;
}
