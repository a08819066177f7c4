// Counted cost: the counter's arithmetic (SQS 64 KiB chunks, S3 classes, DynamoDB units reported or
// estimated) and the price table's cost per million pages.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AwsCallCounter,
  diffSnapshots,
  estimateItemBytes,
  estimateWriteUnits,
  s3RequestClass,
} from '../../lambdas/shared/aws-call-counter.ts';
import {
  AWS_PRICES,
  costOf,
  crawlCostReport,
  describeCost,
  PER_MILLION_MIN_PAGES,
  perMillionPages,
  requestsPerPage,
} from '../../lambdas/shared/aws-prices.ts';

const near = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} != ${expected}`);

describe('AwsCallCounter', () => {
  it('bills SQS sends per started 64 KiB of request body, per attempt', () => {
    const counter = new AwsCallCounter();
    counter.attempt('SQS', 'SendMessageBatch', 10_000);
    counter.attempt('SQS', 'SendMessageBatch', 64 * 1024);
    counter.attempt('SQS', 'SendMessageBatch', 64 * 1024 + 1);
    counter.attempt('SQS', 'SendMessageBatch', 0);
    counter.call('SQS', 'SendMessageBatch', {}, {}, false);
    const op = counter.snapshot().operations['SQS:SendMessageBatch'];
    assert.deepEqual(
      { requests: op?.requests, billed: op?.sqsBilledRequests, calls: op?.calls },
      { requests: 4, billed: 1 + 1 + 2 + 1, calls: 1 },
    );
  });

  it('bills a ReceiveMessage by the payload it returns, and counts empty receives apart', () => {
    const counter = new AwsCallCounter();
    counter.attempt('SQS', 'ReceiveMessage', 200);
    counter.call(
      'SQS',
      'ReceiveMessage',
      {},
      { Messages: [{ Body: 'x'.repeat(70_000) }, { Body: 'y' }] },
      false,
    );
    counter.attempt('SQS', 'ReceiveMessage', 200);
    counter.call('SQS', 'ReceiveMessage', {}, {}, false);
    const ops = counter.snapshot().operations;
    assert.equal(ops['SQS:ReceiveMessage']?.sqsBilledRequests, 2 + 1);
    assert.equal(ops['SQS:ReceiveMessage']?.messages, 2);
    assert.equal(ops['SQS:ReceiveMessage(empty)']?.calls, 1);
  });

  it('puts S3 operations in their request class', () => {
    assert.equal(s3RequestClass('PutObject'), 'put');
    assert.equal(s3RequestClass('ListObjectsV2'), 'put');
    assert.equal(s3RequestClass('CopyObject'), 'put');
    assert.equal(s3RequestClass('UploadPart'), 'put');
    assert.equal(s3RequestClass('GetObject'), 'get');
    assert.equal(s3RequestClass('HeadObject'), 'get');
    assert.equal(s3RequestClass('DeleteObject'), 'free');
    const counter = new AwsCallCounter();
    counter.attempt('S3', 'PutObject', 5);
    assert.equal(counter.snapshot().operations['S3:PutObject']?.s3Class, 'put');
  });

  it('takes reported DynamoDB capacity, and estimates it when none is reported', () => {
    const counter = new AwsCallCounter();
    counter.call(
      'DynamoDB',
      'UpdateItem',
      {},
      { ConsumedCapacity: { TableName: 't', CapacityUnits: 2 } },
      false,
    );
    // A failed conditional put: billed by AWS, reported by nobody → 1 WRU per started KiB of the item.
    const item = { pk: { S: 'CRAWL#c' }, sk: { S: `URL#${'a'.repeat(64)}` }, url: { S: 'u'.repeat(1500) } };
    counter.call('DynamoDB', 'PutItem', { Item: item }, undefined, true);
    counter.call('DynamoDB', 'GetItem', { ConsistentRead: true }, { Item: { pk: { S: 'x' } } }, false);
    counter.call('DynamoDB', 'GetItem', {}, { Item: { pk: { S: 'x' } } }, false);
    counter.call('DynamoDB', 'CreateTable', {}, {}, false);
    const ops = counter.snapshot().operations;
    assert.equal(ops['DynamoDB:UpdateItem']?.writeUnits, 2);
    assert.equal(ops['DynamoDB:UpdateItem']?.estimatedUnits, 0);
    assert.equal(ops['DynamoDB:PutItem']?.writeUnits, 2);
    assert.equal(ops['DynamoDB:PutItem']?.errors, 1);
    assert.equal(ops['DynamoDB:PutItem']?.estimatedUnits, 1);
    assert.equal(ops['DynamoDB:GetItem']?.readUnits, 1 + 0.5);
    assert.equal(ops['DynamoDB:CreateTable']?.writeUnits, 0);
  });

  it('diffs snapshots per operation and leaves out what did not move', () => {
    const counter = new AwsCallCounter();
    counter.attempt('SQS', 'CreateQueue', 100);
    counter.call('SQS', 'CreateQueue', {}, {}, false);
    const before = counter.snapshot();
    counter.attempt('S3', 'PutObject', 10);
    counter.call('S3', 'PutObject', {}, {}, false);
    const window = diffSnapshots(before, counter.snapshot());
    assert.deepEqual(Object.keys(window.operations), ['S3:PutObject']);
    assert.equal(window.operations['S3:PutObject']?.requests, 1);
  });
});

describe('item size and write units', () => {
  it('follows DynamoDB sizing: names plus values', () => {
    assert.equal(estimateItemBytes({ ab: { S: 'xyz' } }), 5);
    assert.equal(estimateItemBytes({ n: { N: '12345' } }), 1 + 4);
    assert.equal(estimateItemBytes({ b: { BOOL: true } }), 2);
    assert.equal(estimateItemBytes({ m: { M: { a: { S: 'x' } } } }), 1 + 3 + 2 + 1);
    assert.equal(estimateItemBytes({ l: { L: [{ S: 'ab' }, { N: '1' }] } }), 1 + 3 + 3 + 3);
  });

  it('rounds writes up to whole KiB, at least one unit per item', () => {
    assert.equal(estimateWriteUnits('PutItem', { Item: { a: { S: 'x' } } }), 1);
    assert.equal(estimateWriteUnits('PutItem', { Item: { a: { S: 'x'.repeat(2048) } } }), 3);
    assert.equal(estimateWriteUnits('DeleteItem', { Key: { pk: { S: 'k' } } }), 1);
    const batch = {
      RequestItems: {
        t: [{ PutRequest: { Item: { a: { S: 'x' } } } }, { DeleteRequest: { Key: { pk: { S: 'k' } } } }],
      },
    };
    assert.equal(estimateWriteUnits('BatchWriteItem', batch), 2);
  });
});

describe('the price table and cost per million pages', () => {
  it('prices each service from the counted requests and Lambda GB-seconds', () => {
    const counter = new AwsCallCounter();
    for (let i = 0; i < 10; i++) counter.attempt('SQS', 'SendMessageBatch', 1000);
    counter.attempt('S3', 'PutObject', 10);
    counter.attempt('S3', 'GetObject', 0);
    counter.attempt('SQS', 'GetQueueAttributes', 100); // local idle detection: not billed
    counter.call('DynamoDB', 'PutItem', {}, { ConsumedCapacity: { CapacityUnits: 4 } }, false);
    counter.call('DynamoDB', 'GetItem', {}, { ConsumedCapacity: { CapacityUnits: 2 } }, false);
    const cost = costOf(counter.snapshot(), [{ invocations: 2, durationMs: 3000, memoryMb: 2048 }]);
    near(cost.sqs, 10 * AWS_PRICES.sqs.request, 'sqs');
    near(cost.s3, AWS_PRICES.s3.putClassRequest + AWS_PRICES.s3.getClassRequest, 's3');
    near(
      cost.dynamodb,
      4 * AWS_PRICES.dynamodb.writeRequestUnit + 2 * AWS_PRICES.dynamodb.readRequestUnit,
      'ddb',
    );
    near(cost.lambda, 3 * 2 * AWS_PRICES.lambda.arm64GbSecond + 2 * AWS_PRICES.lambda.request, 'lambda');
    near(cost.total, cost.sqs + cost.s3 + cost.dynamodb + cost.lambda, 'total');
  });

  it('bills each PutEvents entry as one event per started 64 KiB', () => {
    const counter = new AwsCallCounter();
    const small = { Source: 's', DetailType: 't', Detail: '{}' };
    const large = { ...small, Detail: JSON.stringify({ text: 'x'.repeat(100 * 1024) }) };
    counter.call('EventBridge', 'PutEvents', { Entries: [small, small, large] }, {}, false);
    const snapshot = counter.snapshot();
    assert.equal(snapshot.operations['EventBridge:PutEvents']?.billedEvents, 4);
    near(costOf(snapshot).eventbridge, 4 * AWS_PRICES.eventbridge.event, 'eventbridge');
  });

  it('scales to a million pages and reports billed requests per page', () => {
    const scaled = perMillionPages(
      { lambda: 0.001, sqs: 0.002, s3: 0, dynamodb: 0.004, eventbridge: 0.001, total: 0.008 },
      1000,
    );
    assert.deepEqual(scaled, { lambda: 1, sqs: 2, s3: 0, dynamodb: 4, eventbridge: 1, total: 8 });
    const counter = new AwsCallCounter();
    for (let i = 0; i < 5; i++) counter.attempt('DynamoDB', 'PutItem', 100);
    counter.attempt('SQS', 'SendMessageBatch', 100 * 1024);
    counter.attempt('SQS', 'GetQueueAttributes', 10);
    assert.deepEqual(requestsPerPage(counter.snapshot(), 10), {
      'DynamoDB:PutItem': 0.5,
      'SQS:SendMessageBatch': 0.2,
    });
  });

  it('builds the summary.json report and its one line', () => {
    const counter = new AwsCallCounter();
    counter.attempt('S3', 'PutObject', 10);
    counter.call('DynamoDB', 'UpdateItem', {}, { ConsumedCapacity: { CapacityUnits: 1 } }, false);
    const report = crawlCostReport(
      counter.snapshot(),
      { FetchFunction: { invocations: 1, durationMs: 1000, memoryMb: 1024 } },
      100,
    );
    assert.equal(report.pages, 100);
    assert.equal(report.dynamodb.writeUnitsPerPage, 0.01);
    assert.equal(report.lambda.FetchFunction?.gbSeconds, 1);
    assert.ok(report.costPerMillionPages.total > 0);
    assert.deepEqual(
      report.cost,
      costOf(counter.snapshot(), [{ invocations: 1, durationMs: 1000, memoryMb: 1024 }]),
    );
    assert.match(describeCost(report), /^\$0\.0\d+ for this crawl at us-east-1 list prices \(lambda/);
  });

  it("the cost line gives this crawl's dollars, and per million pages only from 1,000 pages or when verbose", () => {
    const counter = new AwsCallCounter();
    counter.attempt('S3', 'PutObject', 10);
    const usage = { FetchFunction: { invocations: 1, durationMs: 8000, memoryMb: 1024 } };
    // One page: its fixed costs scaled to a million pages read as ~$100, which alarms and means nothing.
    const one = crawlCostReport(counter.snapshot(), usage, 1);
    const line = describeCost(one);
    assert.match(line, /^\$0\.000\d\d for this crawl at us-east-1 list prices/);
    assert.doesNotMatch(line, /per million/);
    assert.match(describeCost(one, { verbose: true }), /; \$\d+\.\d\d per million pages$/);
    const big = crawlCostReport(counter.snapshot(), usage, PER_MILLION_MIN_PAGES);
    assert.match(describeCost(big), /^\$0\.000\d\d for this crawl .*; \$0\.11 per million pages$/);
    assert.doesNotMatch(
      describeCost(crawlCostReport(counter.snapshot(), usage, PER_MILLION_MIN_PAGES - 1)),
      /per million/,
    );
  });
});
