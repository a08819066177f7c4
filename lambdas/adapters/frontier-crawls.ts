/**
 * Every crawl a FrontierTable holds (`crawler list`), without reading the table. A crawl is entered
 * in the crawl registry when its config is stored (`registerCrawl`): one small item per crawl in the
 * partition `CRAWLS`, written once. Listing is a Query of that partition (crawl ids only, 1 MB a
 * page) plus BatchGetItem of the crawls' counters items (100 a call), so its cost grows with the
 * number of crawls, never with their URLs; a Scan would read every URL item of every crawl, and the
 * operator policy does not grant it (docs/frontier.md, "The crawl registry").
 */
import {
  BatchGetItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { backoffPause, RETRY_BACKOFF } from '../core/base/index.ts';
import { type CrawlCounters, DEFAULT_CRAWL_ID } from '../core/crawl/index.ts';
import {
  ATTR,
  CRAWL_PK_PREFIX,
  CRAWLS_PK,
  countersKey,
  crawlRegistryKey,
  type Item,
  names,
  parseCounters,
  S,
  str,
} from './frontier-schema.ts';

export interface CrawlListing {
  crawlId: string;
  counters: CrawlCounters;
}

/** BatchGetItem reads at most 100 keys a call. */
const BATCH_GET_KEYS = 100;
/** Rounds of UnprocessedKeys (a throttled BatchGetItem answers with some keys unread) before giving up. */
const UNPROCESSED_ROUNDS = 8;

/** Enters a crawl in the registry (idempotent: a repeated put writes the same item). */
export async function registerCrawl(dynamodb: DynamoDBClient, table: string, crawlId: string): Promise<void> {
  await dynamodb.send(new PutItemCommand({ TableName: table, Item: crawlRegistryKey(crawlId) }));
}

/**
 * The registered crawls, and the `default` crawl (bare URL tasks start it without a submit), each
 * with its counters; a crawl with no counters item (nothing admitted yet, or expired) is left out.
 */
export async function* listCrawls(dynamodb: DynamoDBClient, table: string): AsyncGenerator<CrawlListing> {
  const ids = new Set<string>([DEFAULT_CRAWL_ID]);
  let start: Item | undefined;
  do {
    const page = await dynamodb.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: `#${ATTR.pk} = :pk`,
        ExpressionAttributeNames: names(ATTR.pk),
        ExpressionAttributeValues: { ':pk': S(CRAWLS_PK) },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) {
      const crawlId = str(item, ATTR.sk);
      if (crawlId !== undefined) ids.add(crawlId);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  const all = [...ids];
  for (let i = 0; i < all.length; i += BATCH_GET_KEYS) {
    for (const item of await countersOf(dynamodb, table, all.slice(i, i + BATCH_GET_KEYS))) {
      const pk = str(item, ATTR.pk);
      if (pk?.startsWith(CRAWL_PK_PREFIX))
        yield { crawlId: pk.slice(CRAWL_PK_PREFIX.length), counters: parseCounters(item) };
    }
  }
}

/** The counters items of up to 100 crawls, unprocessed keys read again (with the awsStep back-off). */
async function countersOf(dynamodb: DynamoDBClient, table: string, crawlIds: string[]): Promise<Item[]> {
  const found: Item[] = [];
  let keys: Item[] = crawlIds.map(countersKey);
  for (let round = 1; keys.length > 0; round++) {
    const out = await dynamodb.send(
      new BatchGetItemCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }),
    );
    found.push(...(out.Responses?.[table] ?? []));
    keys = (out.UnprocessedKeys?.[table]?.Keys ?? []) as Item[];
    if (keys.length === 0) break;
    if (round >= UNPROCESSED_ROUNDS)
      throw new Error(
        `crawl list: ${keys.length} counters items still unread after ${round} BatchGetItem calls`,
      );
    await backoffPause(round, RETRY_BACKOFF.awsStep);
  }
  return found;
}
