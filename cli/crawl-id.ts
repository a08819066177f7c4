import { randomBytes } from 'node:crypto';

/** Sortable and unique enough to name a crawl: c-20261129T201500-1a2b3c. */
export function newCrawlId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').slice(0, 15);
  return `c-${stamp}-${randomBytes(3).toString('hex')}`;
}
