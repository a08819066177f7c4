/**
 * Every crawl a FrontierTable holds (`crawler list`): one Scan of the table for the counters items
 * (`sk = COUNTERS`), page by page. A Scan reads the whole table (its URL items too), so it is meant
 * for local state and small stacks, not for a loop.
 */
import { type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { CrawlCounters } from '../core/ports.ts';
import {
  ATTR,
  COUNTERS_SK,
  CRAWL_PK_PREFIX,
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

export async function* listCrawls(dynamodb: DynamoDBClient, table: string): AsyncGenerator<CrawlListing> {
  let start: Item | undefined;
  do {
    const out = await dynamodb.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: `#${ATTR.sk} = :sk`,
        ExpressionAttributeNames: names(ATTR.sk),
        ExpressionAttributeValues: { ':sk': S(COUNTERS_SK) },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of out.Items ?? []) {
      const pk = str(item, ATTR.pk);
      if (pk?.startsWith(CRAWL_PK_PREFIX))
        yield { crawlId: pk.slice(CRAWL_PK_PREFIX.length), counters: parseCounters(item) };
    }
    start = out.LastEvaluatedKey;
  } while (start);
}
