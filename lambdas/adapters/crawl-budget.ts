/**
 * Per-crawl budgets on the fetch side: each batch charges the HTTP requests it made to the crawl's
 * counters item (one ADD per crawl and batch), and the batch that crosses `maxCostUsd` stops the crawl
 * (`cancelCrawl`), so its queued tasks end `cancelled`. Charging where requests are made, not where
 * results are aggregated, stops a fast crawl within a batch or two of its budget.
 */
import { type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { budgetSpent } from '../core/budget.ts';
import type { CrawlBudget, CrawlConfigReader } from '../core/ports.ts';
import { cancelCrawl } from './frontier-cancel.ts';
import { ATTR, countersKey, N, names, num } from './frontier-schema.ts';

export class DynamoCrawlBudget implements CrawlBudget {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;
  private readonly configs: CrawlConfigReader;

  constructor(dynamodb: DynamoDBClient, table: string, configs: CrawlConfigReader) {
    this.dynamodb = dynamodb;
    this.table = table;
    this.configs = configs;
  }

  async charge(crawlId: string, requests: number): Promise<boolean> {
    const { maxCostUsd } = await this.configs.get(crawlId);
    if (maxCostUsd === undefined || requests === 0) return false;
    const out = await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: countersKey(crawlId),
        UpdateExpression: `ADD #${ATTR.charged} :n`,
        ExpressionAttributeNames: names(ATTR.charged),
        ExpressionAttributeValues: { ':n': N(requests) },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    const charged = num(out.Attributes, ATTR.charged) ?? requests;
    if (!budgetSpent({ requests: charged }, maxCostUsd)) return false;
    await cancelCrawl(this.dynamodb, this.table, crawlId);
    return true;
  }
}
