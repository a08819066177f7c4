/**
 * `--max-cost-usd` on the fetch side (lambdas/adapters/crawl-budget.ts) against the emulators: a flush
 * charges the crawls of its pages the list-price cost of the AWS calls counted since the last charge
 * (the figures summary.json reports, aws-prices.ts), in micro-dollars, shared by pages; the charge
 * that reaches a crawl's budget stops it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { countedCallCost, DynamoCrawlBudget } from '../../lambdas/adapters/crawl-budget.ts';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { ATTR, countersKey, num, str } from '../../lambdas/adapters/frontier-schema.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { diffSnapshots } from '../../lambdas/shared/aws-call-counter.ts';
import { createAwsClients } from '../../lambdas/shared/aws-clients.ts';
import { costOf } from '../../lambdas/shared/aws-prices.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';

let aws: LocalAws;
let table: string;
let bucket: string;
let clients: ReturnType<typeof createAwsClients>;

before(async () => {
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    log: () => {},
  });
  table = aws.outputs.FrontierTableName!;
  bucket = aws.outputs.PageBucketName!;
  // The fetch function's own clients: every call they make is counted, as in Lambda.
  clients = createAwsClients(aws.functionEnv.FetchFunction as never);
});
after(() => aws?.stop());

async function submitted(crawlId: string, maxCostUsd?: number): Promise<CrawlConfigStore> {
  const configs = new CrawlConfigStore(clients.dynamodb, table);
  await configs.put(
    parseCrawlConfig({
      crawlId,
      seeds: ['http://x.test/'],
      ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
    }),
  );
  return configs;
}

async function counters(crawlId: string) {
  const out = await clients.dynamodb.send(
    new GetItemCommand({ TableName: table, Key: countersKey(crawlId), ConsistentRead: true }),
  );
  return { charged: num(out.Item, ATTR.charged), state: str(out.Item, ATTR.state) };
}

/** Counted calls with a known price: `n` S3 PUTs of the fetch function's client. */
async function puts(n: number): Promise<void> {
  for (let i = 0; i < n; i++)
    await clients.s3.send(new PutObjectCommand({ Bucket: bucket, Key: `budget-test/${i}`, Body: 'x' }));
}

describe('the crawl budget charges counted AWS cost', () => {
  it('charges the counted cost of the calls since the last charge, shared among the crawls by pages', async () => {
    const a = `budget-a-${Date.now()}`;
    const b = `budget-b-${Date.now()}`;
    const configs = await submitted(a, 100);
    await submitted(b, 100);
    const meter = countedCallCost(clients.counter);
    const start = clients.counter!.snapshot();
    await puts(40);
    // What summary.json's figures make of the same calls.
    const expected = costOf(diffSnapshots(start, clients.counter!.snapshot())).total * 1e6;
    assert.ok(expected >= 40 * 5, `40 PUTs at $0.005 per 1,000 are at least 200 µ$, counted ${expected}`);
    const budget = new DynamoCrawlBudget(clients.dynamodb, table, configs, meter);
    assert.deepEqual(
      await budget.charge(
        new Map([
          [a, 3],
          [b, 1],
        ]),
      ),
      [],
    );
    const chargedA = (await counters(a)).charged!;
    const chargedB = (await counters(b)).charged!;
    assert.ok(Math.abs(chargedA - (expected * 3) / 4) < 1e-5, `a: ${chargedA} µ$ of ${expected}`);
    assert.ok(Math.abs(chargedB - expected / 4) < 1e-5, `b: ${chargedB} µ$ of ${expected}`);
    // The next charge counts only what came after this one (the charge's own writes included).
    const second = clients.counter!.snapshot();
    await puts(4);
    const more = costOf(diffSnapshots(second, clients.counter!.snapshot())).total * 1e6;
    await budget.charge(new Map([[a, 1]]));
    const after = (await counters(a)).charged!;
    assert.ok(after - chargedA >= more, `charged ${after - chargedA} µ$ for calls of at least ${more}`);
    assert.ok(after - chargedA < more + expected, 'the first calls are not charged twice');
  });

  it('stops the crawl whose charge reaches its budget, and only that one', async () => {
    const small = `budget-small-${Date.now()}`;
    const large = `budget-large-${Date.now()}`;
    const configs = await submitted(small, 0.0001); // 100 µ$: less than 40 S3 PUTs
    await submitted(large, 100);
    const budget = new DynamoCrawlBudget(clients.dynamodb, table, configs, countedCallCost(clients.counter));
    await puts(40);
    assert.deepEqual(
      await budget.charge(
        new Map([
          [small, 1],
          [large, 1],
        ]),
      ),
      [small],
    );
    assert.equal((await counters(small)).state, 'cancelled');
    assert.notEqual((await counters(large)).state, 'cancelled');
  });

  it('charges nothing to a crawl without a budget', async () => {
    const free = `budget-free-${Date.now()}`;
    const configs = await submitted(free);
    const budget = new DynamoCrawlBudget(clients.dynamodb, table, configs, countedCallCost(clients.counter));
    await puts(10);
    assert.deepEqual(await budget.charge(new Map([[free, 5]])), []);
    assert.equal((await counters(free)).charged, undefined);
  });
});
