/**
 * Read-only: where a finished URL's results index line is. The aggregate function records on each
 * URL item (`URLS#<crawlId>#<host>` / `<key>`) the S3 key of the index part it wrote the line to
 * (`part`, set by finalize: docs/frontier.md), so one GetItem and one GET of that part find a line
 * that a scan of the whole index would take every part to find.
 */
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { frontierHost } from '../core/crawl/index.ts';
import { ATTR, names, str, urlKey } from './frontier-schema.ts';

export type UrlIndexPointer =
  /** No URL item: never admitted, expired (TTL), or the crawl is unknown. */
  | { found: false }
  /** `part` is absent until the URL is finalized (and on crawls from before `part` existed). */
  | { found: true; state: string | undefined; part: string | undefined };

export class FrontierUrlLookup {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;

  constructor(dynamodb: DynamoDBClient, table: string) {
    this.dynamodb = dynamodb;
    this.table = table;
  }

  /**
   * The state and index part of the item of normalized URL `url` (dedup key `key`), found in its
   * host's partition. Eventually consistent (half the cost): a URL finalized a moment ago may read
   * without its part, which only costs the caller its fallback.
   */
  async indexPart(crawlId: string, url: string, key: string): Promise<UrlIndexPointer> {
    const { Item } = await this.dynamodb.send(
      new GetItemCommand({
        TableName: this.table,
        Key: urlKey(crawlId, frontierHost(url), key),
        ProjectionExpression: `#${ATTR.st}, #${ATTR.part}`,
        ExpressionAttributeNames: names(ATTR.st, ATTR.part),
      }),
    );
    if (Item === undefined) return { found: false };
    return { found: true, state: str(Item, ATTR.st), part: str(Item, ATTR.part) };
  }
}
