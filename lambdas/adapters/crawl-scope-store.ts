/**
 * The stored scope of a crawl whose seeds came from a file (too many for its config item): the
 * distinct scope keys of its seeds (hosts, domains or prefixes; core/urls/scope.ts `scopeKeyOf`), one a
 * line, gzip, in bounded items `SCOPE#0000`, `SCOPE#0001`, ... of the crawl's partition. Written once
 * before the config (a stored config's scope is complete), read once per container with it.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { type DynamoDBClient, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { SEED_LIMITS } from '../core/base/index.ts';
import type { StoredScopeReader } from '../core/frontier/index.ts';
import { ATTR, crawlPk, type Item, SCOPE_SK_PREFIX, scopePartKey } from './frontier-schema.ts';

export class CrawlScopeStore implements StoredScopeReader {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;

  constructor(dynamodb: DynamoDBClient, table: string) {
    this.dynamodb = dynamodb;
    this.table = table;
  }

  /** Writes the keys in parts of at most SEED_LIMITS.scopePartBytes (before gzip); returns how many parts. */
  async put(crawlId: string, keys: Iterable<string>): Promise<number> {
    let parts = 0;
    let lines: string[] = [];
    let bytes = 0;
    const flush = async () => {
      await this.dynamodb.send(
        new PutItemCommand({
          TableName: this.table,
          Item: { ...scopePartKey(crawlId, parts), [ATTR.scopeGz]: { B: gzipSync(lines.join('\n')) } },
        }),
      );
      parts++;
      lines = [];
      bytes = 0;
    };
    for (const key of keys) {
      const size = Buffer.byteLength(key) + 1;
      if (bytes + size > SEED_LIMITS.scopePartBytes && lines.length > 0) await flush();
      lines.push(key);
      bytes += size;
    }
    if (lines.length > 0) await flush();
    return parts;
  }

  /** The keys of the crawl's first `parts` parts (those its config names; a part past them is stale). */
  async read(crawlId: string, parts: number): Promise<string[]> {
    const keys: string[] = [];
    const found = new Set<string>();
    const wanted = new Set(Array.from({ length: parts }, (_, part) => scopePartKey(crawlId, part).sk!.S!));
    let start: Item | undefined;
    do {
      const page = await this.dynamodb.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: { '#pk': ATTR.pk, '#sk': ATTR.sk },
          ExpressionAttributeValues: { ':pk': { S: crawlPk(crawlId) }, ':prefix': { S: SCOPE_SK_PREFIX } },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        const sk = item[ATTR.sk]?.S ?? '';
        const gz = item[ATTR.scopeGz]?.B;
        if (!wanted.has(sk) || gz === undefined) continue;
        found.add(sk);
        const text = gunzipSync(gz).toString('utf8');
        if (text !== '') for (const key of text.split('\n')) keys.push(key);
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    if (found.size !== parts)
      throw new Error(
        `crawl ${crawlId}: ${parts - found.size} of its ${parts} stored scope parts are missing`,
      );
    return keys;
  }
}
