/**
 * Reads what the progress display of `crawler crawl` needs from the FrontierTable, cheaply: the
 * counters item (one consistent GetItem of the counts only) every tick, and, only while the crawl
 * seems stuck, a page of its host items and one of its robots items (a Query per shard until
 * WAIT_ITEMS_LIMIT are found: at most FRONTIER_SHARDS each, docs/frontier.md).
 */
import { type DynamoDBClient, GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { OUTCOMES } from '../core/base/index.ts';
import type { CrawlCounters } from '../core/crawl/index.ts';
import {
  ATTR,
  copyPresentNumbers,
  countersKey,
  crawlShardPks,
  HOST_SK_PREFIX,
  type Item,
  names,
  num,
  outcomeAttr,
  parseCounters,
  ROBOTS_SK_PREFIX,
  ROBOTS_ST,
  S,
  str,
} from './frontier-schema.ts';

/** Host or robots items read per look: enough to name what a stuck crawl waits for, never O(hosts). */
export const WAIT_ITEMS_LIMIT = 25;

export interface HostItemWait {
  host: string;
  nextAt?: number;
  pausedUntil?: number;
  visitAt?: number;
  lease?: number;
}

export interface RobotsItemWait {
  origin: string;
  state: 'fetching' | 'unavailable' | 'ready';
  retryAt?: number;
  failures?: number;
  lease?: number;
}

const COUNTS = [ATTR.queued, ATTR.done, ATTR.state, ...OUTCOMES.map(outcomeAttr)];

/** A robots item's optional numbers, as RobotsItemWait names them. */
const ROBOTS_WAIT_NUMBERS = [
  ['retryAt', ATTR.retryAt],
  ['failures', ATTR.failures],
  ['lease', ATTR.lease],
] as const;

export class CrawlProgressReader {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;

  constructor(dynamodb: DynamoDBClient, table: string) {
    this.dynamodb = dynamodb;
    this.table = table;
  }

  /** The crawl's counts (zeros before its first counter write). */
  async counters(crawlId: string): Promise<CrawlCounters> {
    const out = await this.dynamodb.send(
      new GetItemCommand({
        TableName: this.table,
        Key: countersKey(crawlId),
        ConsistentRead: true,
        ProjectionExpression: COUNTS.map((attr) => `#${attr}`).join(', '),
        ExpressionAttributeNames: names(...COUNTS),
      }),
    );
    return parseCounters(out.Item ?? {});
  }

  /** Up to WAIT_ITEMS_LIMIT active hosts (`HOST#` items: a host has one while it has work). */
  async hosts(crawlId: string): Promise<HostItemWait[]> {
    const attrs = [ATTR.sk, ATTR.next, ATTR.pausedUntil, ATTR.visitAt, ATTR.lease];
    const items = await this.query(crawlId, HOST_SK_PREFIX, attrs);
    return items.map((item) => {
      const wait: HostItemWait = { host: (str(item, ATTR.sk) ?? '').slice(HOST_SK_PREFIX.length) };
      const set = (key: Exclude<keyof HostItemWait, 'host'>, attr: string) => {
        const value = num(item, attr);
        if (value !== undefined) wait[key] = value;
      };
      set('nextAt', ATTR.next);
      set('pausedUntil', ATTR.pausedUntil);
      set('visitAt', ATTR.visitAt);
      set('lease', ATTR.lease);
      return wait;
    });
  }

  /** Up to WAIT_ITEMS_LIMIT robots.txt entries that are not ready (being fetched, or unavailable). */
  async robots(crawlId: string): Promise<RobotsItemWait[]> {
    const attrs = [ATTR.sk, ATTR.st, ATTR.retryAt, ATTR.failures, ATTR.lease];
    const items = await this.query(crawlId, ROBOTS_SK_PREFIX, attrs, true);
    const waits: RobotsItemWait[] = [];
    for (const item of items) {
      const st = str(item, ATTR.st);
      if (st !== ROBOTS_ST.fetching && st !== ROBOTS_ST.unavailable) continue;
      const wait: RobotsItemWait = {
        origin: (str(item, ATTR.sk) ?? '').slice(ROBOTS_SK_PREFIX.length),
        state: st,
      };
      copyPresentNumbers(wait, item, ROBOTS_WAIT_NUMBERS);
      waits.push(wait);
    }
    return waits;
  }

  /** Up to WAIT_ITEMS_LIMIT items of the prefix, shard after shard (one Query a shard, until enough). */
  private async query(crawlId: string, prefix: string, attrs: string[], notReady = false): Promise<Item[]> {
    const items: Item[] = [];
    for (const pk of crawlShardPks(crawlId)) {
      const out = await this.dynamodb.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: `#${ATTR.pk} = :pk AND begins_with(#${ATTR.sk}, :prefix)`,
          ...(notReady ? { FilterExpression: `#${ATTR.st} <> :ready` } : {}),
          ProjectionExpression: attrs.map((attr) => `#${attr}`).join(', '),
          ExpressionAttributeNames: names(ATTR.pk, ...attrs),
          ExpressionAttributeValues: {
            ':pk': S(pk),
            ':prefix': S(prefix),
            ...(notReady ? { ':ready': S(ROBOTS_ST.ready) } : {}),
          },
          Limit: WAIT_ITEMS_LIMIT - items.length,
        }),
      );
      items.push(...(out.Items ?? []));
      if (items.length >= WAIT_ITEMS_LIMIT) break;
    }
    return items;
  }
}
