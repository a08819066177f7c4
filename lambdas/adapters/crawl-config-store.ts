/** Crawl configs in the FrontierTable: one item per crawl, cached per warm container. */
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  type CrawlConfig,
  type CrawlConfigInput,
  CrawlConfigSchema,
  DEFAULT_CRAWL_ID,
} from '../core/crawl-config.ts';
import { PermanentError } from '../core/errors.ts';
import type { CrawlConfigReader } from '../core/ports.ts';
import { registerCrawl } from './frontier-crawls.ts';
import { configKey } from './frontier-schema.ts';

export class CrawlConfigStore implements CrawlConfigReader {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;
  private readonly defaults: Omit<CrawlConfigInput, 'crawlId'> | undefined;
  private readonly cache = new Map<string, Promise<CrawlConfig>>();

  constructor(dynamodb: DynamoDBClient, table: string, defaults?: Omit<CrawlConfigInput, 'crawlId'>) {
    this.dynamodb = dynamodb;
    this.table = table;
    this.defaults = defaults;
  }

  async put(config: CrawlConfig): Promise<void> {
    await this.dynamodb.send(
      new PutItemCommand({
        TableName: this.table,
        Item: { ...configKey(config.crawlId), config: { S: JSON.stringify(config) } },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    // After the config: a registered crawl always has one.
    await registerCrawl(this.dynamodb, this.table, config.crawlId);
  }

  get(crawlId: string): Promise<CrawlConfig> {
    let pending = this.cache.get(crawlId);
    if (!pending) {
      pending = this.load(crawlId);
      // A failed read must not stick in the cache.
      pending.catch(() => this.cache.delete(crawlId));
      this.cache.set(crawlId, pending);
    }
    return pending;
  }

  private async load(crawlId: string): Promise<CrawlConfig> {
    const item = await this.dynamodb.send(
      new GetItemCommand({ TableName: this.table, Key: configKey(crawlId), ConsistentRead: true }),
    );
    const stored = item.Item?.config?.S;
    if (stored !== undefined) return CrawlConfigSchema.parse(JSON.parse(stored));
    if (crawlId === DEFAULT_CRAWL_ID) return CrawlConfigSchema.parse({ ...this.defaults, crawlId });
    throw new PermanentError(
      'invalid',
      'unknown-crawl',
      `crawl ${crawlId} has no stored config; submit it first`,
    );
  }
}
