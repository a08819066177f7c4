/** Crawl configs in the FrontierTable: one item per crawl, cached per warm container. */
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { PermanentError } from '../core/base/index.ts';
import {
  type CrawlConfig,
  type CrawlConfigInput,
  type CrawlConfigReader,
  CrawlConfigSchema,
  DEFAULT_CRAWL_ID,
} from '../core/crawl/index.ts';
import { bindScope } from '../core/frontier/index.ts';
import { CrawlScopeStore } from './crawl-scope-store.ts';
import { registerCrawl } from './frontier-crawls.ts';
import { configKey } from './frontier-schema.ts';

export class CrawlConfigStore implements CrawlConfigReader {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;
  private readonly defaults: Omit<CrawlConfigInput, 'crawlId'> | undefined;
  private readonly cache = new Map<string, Promise<CrawlConfig>>();
  private readonly scopes: CrawlScopeStore;

  constructor(dynamodb: DynamoDBClient, table: string, defaults?: Omit<CrawlConfigInput, 'crawlId'>) {
    this.dynamodb = dynamodb;
    this.table = table;
    this.defaults = defaults;
    this.scopes = new CrawlScopeStore(dynamodb, table);
  }

  /**
   * Stores the config once. A config of seeds from a file (`seedFile`) comes with its seeds' scope
   * keys: they are stored first, so a stored config always has its whole scope. Returns the config as
   * stored (with its scope's part count), its scope bound.
   */
  async put(config: CrawlConfig, scopeKeys?: Iterable<string>): Promise<CrawlConfig> {
    let stored = config;
    if (config.seedFile !== undefined) {
      if (scopeKeys === undefined)
        throw new Error(`crawl ${config.crawlId}: seeds from a file need their scope keys`);
      const keys = [...scopeKeys];
      const scopeParts = await this.scopes.put(config.crawlId, keys);
      stored = { ...config, seedFile: { ...config.seedFile, scopeParts } };
      bindScope(stored, keys);
    }
    await this.dynamodb.send(
      new PutItemCommand({
        TableName: this.table,
        Item: { ...configKey(stored.crawlId), config: { S: JSON.stringify(stored) } },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    // After the config: a registered crawl always has one.
    await registerCrawl(this.dynamodb, this.table, config.crawlId);
    return stored;
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
    if (stored !== undefined) {
      const config = CrawlConfigSchema.parse(JSON.parse(stored));
      // Read once per container with its config (both are cached together).
      if (config.seedFile !== undefined)
        bindScope(config, await this.scopes.read(crawlId, config.seedFile.scopeParts));
      return config;
    }
    if (crawlId === DEFAULT_CRAWL_ID) return CrawlConfigSchema.parse({ ...this.defaults, crawlId });
    throw new PermanentError(
      'invalid',
      'unknown-crawl',
      `crawl ${crawlId} has no stored config; submit it first`,
    );
  }
}
