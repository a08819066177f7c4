// The constructs refuse settings that would deploy a broken or wasteful pipeline.
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { describe, it } from 'node:test';
import { App, Duration, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { CrawlerFunction, type QueueConsumerSettings } from '../../cdk/crawler-function.ts';
import { QueueWithDlq, visibilityTimeoutFor } from '../../cdk/queue-with-dlq.ts';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { HANDLER_METADATA_KEY, HANDLERS, IDS } from '../../lambdas/shared/contracts.ts';
import { resource } from './template.ts';

function testStack(): Stack {
  return new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Test');
}

function fn(stack: Stack, timeoutSeconds: number): CrawlerFunction {
  return new CrawlerFunction(stack, 'Fn', {
    handlerModule: HANDLERS.fetch,
    description: 'test',
    timeoutSeconds,
    memoryMb: 256,
    recursiveLoop: lambda.RecursiveLoop.TERMINATE,
  });
}

const OK: QueueConsumerSettings = { batchSize: 10, maxBatchingWindowSeconds: 1, maxConcurrency: 2 };

describe('QueueWithDlq', () => {
  it('computes the visibility timeout as 6x the consumer timeout and the batching window together', () => {
    assert.equal(visibilityTimeoutFor(Duration.seconds(60), Duration.seconds(1)).toSeconds(), 366);
    const queue = new QueueWithDlq(testStack(), 'Q', {
      dlqId: 'QDLQ',
      consumerTimeout: Duration.minutes(2),
      consumerMaxBatchingWindow: Duration.seconds(5),
    });
    assert.equal(queue.visibilityTimeout.toSeconds(), 750);
    assert.equal(queue.dlq.node.id, 'QDLQ');
    assert.equal(queue.dlq.node.scope, queue.node.scope, 'the DLQ is a sibling in the same scope');
  });

  it('rejects a maxReceiveCount below 5', () => {
    assert.throws(
      () =>
        new QueueWithDlq(testStack(), 'Q', {
          dlqId: 'QDLQ',
          consumerTimeout: Duration.seconds(60),
          consumerMaxBatchingWindow: Duration.seconds(0),
          maxReceiveCount: 4,
        }),
      /maxReceiveCount must be an integer >= 5/,
    );
  });

  it('rejects a consumer timeout whose 6x exceeds the SQS 12 h maximum', () => {
    assert.throws(
      () =>
        new QueueWithDlq(testStack(), 'Q', {
          dlqId: 'QDLQ',
          consumerTimeout: Duration.hours(3),
          consumerMaxBatchingWindow: Duration.seconds(0),
        }),
      /exceeds the SQS maximum/,
    );
  });
});

describe('CrawlerFunction.consumeFrom', () => {
  it('refuses a queue sized for a shorter consumer timeout', () => {
    const stack = testStack();
    const queue = new QueueWithDlq(stack, 'Q', {
      dlqId: 'QDLQ',
      consumerTimeout: Duration.seconds(10),
      consumerMaxBatchingWindow: Duration.seconds(1),
    });
    assert.throws(() => fn(stack, 60).consumeFrom(queue, OK), /visibility timeout 66 s < 366 s/);
  });

  const bad: Array<[string, QueueConsumerSettings, RegExp]> = [
    ['maxConcurrency below 2', { ...OK, maxConcurrency: 1 }, /maxConcurrency must be 2\.\.1000/],
    [
      'batchSize > 10 without a window',
      { ...OK, batchSize: 11, maxBatchingWindowSeconds: 0 },
      /batching window/,
    ],
    ['batchSize 0', { ...OK, batchSize: 0 }, /batchSize must be 1\.\.10000/],
    ['window over 300 s', { ...OK, maxBatchingWindowSeconds: 301 }, /maxBatchingWindow must be 0\.\.300/],
  ];
  for (const [what, settings, error] of bad) {
    it(`rejects ${what}`, () => {
      const stack = testStack();
      const queue = new QueueWithDlq(stack, 'Q', {
        dlqId: 'QDLQ',
        consumerTimeout: Duration.seconds(60),
        consumerMaxBatchingWindow: Duration.seconds(settings.maxBatchingWindowSeconds),
      });
      assert.throws(() => fn(stack, 60).consumeFrom(queue, settings), error);
    });
  }
});

describe('synthesizeTemplate', () => {
  it('works from any working directory (handler paths resolve from the repo root)', () => {
    const cwd = process.cwd();
    process.chdir(tmpdir());
    try {
      const template = synthesizeTemplate();
      const fetch = resource(template, IDS.fetchFunction, 'AWS::Lambda::Function');
      assert.equal(fetch.Metadata[HANDLER_METADATA_KEY], HANDLERS.fetch);
      assert.ok(JSON.parse(JSON.stringify(template)), 'plain JSON');
    } finally {
      process.chdir(cwd);
    }
  });
});
