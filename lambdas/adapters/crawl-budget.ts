/**
 * Per-crawl budgets on the fetch side: each flush that captured pages charges the counted cost of
 * this container's AWS calls since the last charge (core/crawl/budget.ts) to the crawls of those pages, in
 * micro-dollars on their counters item (one ADD per crawl with a budget), and the flush that crosses
 * `maxCostUsd` stops the crawl (`cancelCrawl`), so its queued tasks end `cancelled`. Charging where
 * the work is done, not where results are aggregated, stops a fast crawl within a flush or two.
 */
import { type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { cancelledEvent, type EventPublisher } from '../core/batches/index.ts';
import {
  budgetSpent,
  type CrawlBudget,
  type CrawlConfigReader,
  MICRO_USD_PER_USD,
  splitCharge,
} from '../core/crawl/index.ts';
import { type AwsCallCounter, diffSnapshots } from '../shared/aws-call-counter.ts';
import type { AwsClients } from '../shared/aws-clients.ts';
import { costOf } from '../shared/aws-prices.ts';
import { EventBridgePublisher } from './eventbridge-publisher.ts';
import { cancelCrawl } from './frontier-cancel.ts';
import { ATTR, countersKey, names, num } from './frontier-schema.ts';

/**
 * The list-price cost, in micro-dollars, of the AWS calls `counter` counted since the meter's last
 * reading (the first reading: since it was made). In Lambda the counter is the container's: one
 * invocation at a time, so these are this function's own calls. No counter (`CRAWLER_CALL_COUNTING=off`):
 * nothing is charged.
 */
export function countedCallCost(counter: AwsCallCounter | undefined): () => number {
  if (counter === undefined) return () => 0;
  let last = counter.snapshot();
  return () => {
    const now = counter.snapshot();
    const cost = costOf(diffSnapshots(last, now)).total;
    last = now;
    return cost * MICRO_USD_PER_USD;
  };
}

/**
 * The budget a function charges (the fetch and render functions): its container's counted calls, a
 * crawl it stops announced `Crawl Cancelled` on `bus` when the stack names one.
 */
export function functionBudget(
  clients: Pick<AwsClients, 'dynamodb' | 'eventbridge' | 'counter'>,
  table: string,
  configs: CrawlConfigReader,
  bus: string | undefined,
): DynamoCrawlBudget {
  const events = bus === undefined ? undefined : new EventBridgePublisher(clients.eventbridge, bus);
  return new DynamoCrawlBudget(clients.dynamodb, table, configs, countedCallCost(clients.counter), events);
}

/** DynamoDB keeps 38 digits; a pico-dollar is far below any one call's price. */
const CHARGE_DECIMALS = 6;

export class DynamoCrawlBudget implements CrawlBudget {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;
  private readonly configs: CrawlConfigReader;
  private readonly meter: () => number;
  /** The crawl events' publisher: a crawl this stops is announced `Crawl Cancelled`. */
  private readonly events: EventPublisher | undefined;

  constructor(
    dynamodb: DynamoDBClient,
    table: string,
    configs: CrawlConfigReader,
    meter: () => number,
    events?: EventPublisher,
  ) {
    this.events = events;
    this.dynamodb = dynamodb;
    this.table = table;
    this.configs = configs;
    this.meter = meter;
  }

  async charge(pagesByCrawl: ReadonlyMap<string, number>): Promise<string[]> {
    const stopped: string[] = [];
    for (const [crawlId, microUsd] of splitCharge(this.meter(), pagesByCrawl)) {
      const { maxCostUsd } = await this.configs.get(crawlId);
      const amount = Number(microUsd.toFixed(CHARGE_DECIMALS));
      if (maxCostUsd === undefined || amount <= 0) continue;
      const out = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: countersKey(crawlId),
          UpdateExpression: `ADD #${ATTR.charged} :n`,
          ExpressionAttributeNames: names(ATTR.charged),
          ExpressionAttributeValues: { ':n': { N: amount.toFixed(CHARGE_DECIMALS) } },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      if (!budgetSpent(num(out.Attributes, ATTR.charged) ?? amount, maxCostUsd)) continue;
      const outcome = await cancelCrawl(this.dynamodb, this.table, crawlId);
      stopped.push(crawlId);
      // Only the charge that flipped it announces it: later charges find it cancelled already.
      if (outcome.status === 'cancelled')
        await this.events?.publish([
          cancelledEvent(crawlId, outcome.endedAt, `its --max-cost-usd ${maxCostUsd} is spent`),
        ]);
    }
    return stopped;
  }
}
