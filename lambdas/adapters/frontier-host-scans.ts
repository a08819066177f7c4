/**
 * The crawl-wide reads of host items and `DONE#` tallies, every shard of the crawl: whether any host
 * is active (completion), the drained hosts' summed tallies, and the hosts handed back awaiting
 * results. Apart from frontier-hosts.ts because they read O(hosts) items across shards, where a
 * visit's calls each write one host item.
 */
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { FRONTIER_LIMITS, OUTCOMES, type Outcome, retryStep } from '../core/base/index.ts';
import type { HostTally } from '../core/crawl/index.ts';
import { mapLimit } from '../shared/map-limit.ts';
import {
  ATTR,
  crawlShardPks,
  DONE_SK_PREFIX,
  FrontierTableAdapter,
  HOST_SK_PREFIX,
  names,
  num,
  outcomeAttr,
  S,
  SHARD_READ_ATTEMPTS,
  str,
} from './frontier-schema.ts';

/** Crawls whose last active shard a container remembers (FrontierHosts.anyActive). */
const LAST_SHARD_CRAWLS = 1_000;

export class FrontierHostScans extends FrontierTableAdapter {
  /** Per crawl, the shard where this container last found a host: where the next look starts. */
  private readonly lastActiveShard = new Map<string, number>();

  /**
   * Whether any shard holds a `HOST#` item: one consistent Query `Limit 1` per shard (each tried
   * SHARD_READ_ATTEMPTS times). The shard where the last look found a host is read first, alone, so
   * a crawl of few hosts costs one Query a look, not up to 32 (a running crawl of many hosts finds
   * one at once anyway); the others `shardReadsAtOnce` at a time, none started once one found a host.
   * The shards are not read at one instant, so a false answer alone proves nothing: docs/frontier.md,
   * "Completion".
   */
  async anyActive(crawlId: string): Promise<boolean> {
    const pks = crawlShardPks(crawlId);
    const first = this.lastActiveShard.get(crawlId) ?? 0;
    if (await this.holdsHost(crawlId, pks, first)) return true;
    const rest = pks.map((_, i) => (first + 1 + i) % pks.length).slice(0, -1);
    let found = false;
    const looks = await mapLimit(rest, FRONTIER_LIMITS.shardReadsAtOnce, async (shard) => {
      if (!found && (await this.holdsHost(crawlId, pks, shard))) found = true;
    });
    if (found) return true;
    const failed = looks.find((look) => look.status === 'rejected');
    if (failed) throw failed.reason;
    return false;
  }

  private async holdsHost(crawlId: string, pks: readonly string[], shard: number): Promise<boolean> {
    const query = new QueryCommand({
      TableName: this.table,
      ConsistentRead: true,
      KeyConditionExpression: `#${ATTR.pk} = :pk AND begins_with(#${ATTR.sk}, :prefix)`,
      ProjectionExpression: `#${ATTR.pk}, #${ATTR.sk}`,
      ExpressionAttributeNames: names(ATTR.pk, ATTR.sk),
      ExpressionAttributeValues: { ':pk': S(pks[shard] as string), ':prefix': S(HOST_SK_PREFIX) },
      Limit: 1,
    });
    const out = await retryStep(() => this.dynamodb.send(query), SHARD_READ_ATTEMPTS);
    if ((out.Items?.length ?? 0) === 0) return false;
    // Bounded: a container serves few crawls at once, and forgetting one costs only a longer look.
    if (this.lastActiveShard.size >= LAST_SHARD_CRAWLS) this.lastActiveShard.clear();
    this.lastActiveShard.set(crawlId, shard);
    return true;
  }

  async doneTotals(crawlId: string): Promise<HostTally & { hosts: number }> {
    const byOutcome: Partial<Record<Outcome, number>> = {};
    const totals = { hosts: 0, total: 0, byOutcome, bytes: 0, requests: 0 };
    const parts = new Set<string>();
    const projected = [ATTR.total, ATTR.bytes, ATTR.requests, ATTR.parts, ...OUTCOMES.map(outcomeAttr)];
    const items = this.queryShards(crawlId, DONE_SK_PREFIX, projected);
    for await (const item of items) {
      totals.hosts++;
      totals.total += num(item, ATTR.total) ?? 0;
      totals.bytes += num(item, ATTR.bytes) ?? 0;
      totals.requests += num(item, ATTR.requests) ?? 0;
      for (const outcome of OUTCOMES) {
        const count = num(item, outcomeAttr(outcome));
        if (count !== undefined) byOutcome[outcome] = (byOutcome[outcome] ?? 0) + count;
      }
      for (const part of item[ATTR.parts]?.SS ?? []) parts.add(part);
    }
    return { ...totals, parts: [...parts] };
  }

  /** The host items of every shard, `shardReadsAtOnce` shards at a time, projected to `awaiting`. */
  async awaiting(crawlId: string): Promise<string[]> {
    const found: string[] = [];
    for await (const item of this.queryShards(crawlId, HOST_SK_PREFIX, [ATTR.sk, ATTR.awaiting]))
      if (item[ATTR.awaiting]?.BOOL === true)
        found.push((str(item, ATTR.sk) ?? '').slice(HOST_SK_PREFIX.length));
    return found;
  }
}
