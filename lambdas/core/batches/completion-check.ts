/**
 * Whether every host of a crawl has drained, and the drained hosts' summed tallies: the first step of
 * completion (docs/frontier.md, "Completion"). The host items are spread over shards that are not
 * read at one instant, so one look can miss a host woken on a shard already read by a host that drains
 * before its own shard is read. Hence: no host active (a cheap early answer), the `DONE#` sums, no host active,
 * the sums again. Settled only if the second look finds no host and both sums are equal: a host that
 * hid from that look was woken by a host that drained during it, whose tally then grew between the
 * two sums (the page that woke it was not done at the first, and is counted by its host's drain).
 */
import type { HostTally, HostVisits } from '../crawl/index.ts';

export type SettledTotals = HostTally & { hosts: number };

/** The drained hosts' sums once no host is active, settled as above; undefined while one may be. */
export async function drainedTotals(
  hosts: Pick<HostVisits, 'anyActive' | 'doneTotals'>,
  crawlId: string,
): Promise<SettledTotals | undefined> {
  if (await hosts.anyActive(crawlId)) return undefined;
  const before = await hosts.doneTotals(crawlId);
  if (await hosts.anyActive(crawlId)) return undefined;
  const after = await hosts.doneTotals(crawlId);
  return after.total === before.total && after.hosts === before.hosts ? after : undefined;
}

/** drainedTotals, for completion: a crawl no host of which has drained yet is not complete. */
export async function settledTotals(
  hosts: Pick<HostVisits, 'anyActive' | 'doneTotals'>,
  crawlId: string,
): Promise<SettledTotals | undefined> {
  const totals = await drainedTotals(hosts, crawlId);
  return totals !== undefined && totals.total > 0 ? totals : undefined;
}
