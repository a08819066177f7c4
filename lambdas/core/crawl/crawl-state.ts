/**
 * What a crawl's state (`crawler cancel`, completion) means for a URL of it, for task admission
 * (task-admission.ts) and a host visit (host-visit.ts) alike.
 */

import { bareResult, type CrawlResult, type ResultSubject } from '../results/index.ts';
import { DEFAULT_CRAWL_ID } from './crawl-config.ts';
import type { CrawlStateName } from './ports.ts';

/**
 * Nothing may add to the crawl: its summary is written. The default crawl takes bare URLs for ever;
 * any other crawl is complete only once nothing is pending.
 */
export function crawlClosed(crawlId: string, state: CrawlStateName | undefined): boolean {
  return state === 'complete' && crawlId !== DEFAULT_CRAWL_ID;
}

/** A cancelled crawl's URL ends at once: no robots.txt, no politeness, no request. */
export function cancelledResult(subject: ResultSubject, at: Date): CrawlResult {
  const why = { code: 'cancelled', reason: `crawl ${subject.crawlId} was cancelled` };
  return bareResult(subject, 'cancelled', at, why);
}
