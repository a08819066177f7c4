// The aggregate handler with little time left (the real handler, emulators, the real stack): it starts
// no work it cannot finish, and the results it did not start go back to the ResultsQueue as new
// messages, not as batch item failures, so running out of time never walks a result toward the
// ResultsDLQ. Sent again, they are indexed like any others.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { createHandler } from '../../lambdas/aggregate/handler.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { toSqsRecord } from '../../local/sqs-event.ts';

let aws: LocalAws;
let resultsQueue: string;
let resultsArn: string;

before(async () => {
  // Pollers never started: the test plays Lambda's part and calls the handler itself.
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    log: () => {},
  });
  resultsQueue = aws.outputs.ResultsQueueUrl!;
  const source = aws.pollers.find((p) => p.eventSource.functionLogicalId === 'AggregateFunction');
  assert.ok(source);
  resultsArn = source.eventSource.queueArn;
});
after(() => aws?.stop());

function result(crawlId: string, path: string): CrawlResult {
  const normalized = normalizeUrl(`http://site.test${path}`);
  if (!normalized.ok) throw new Error(path);
  return {
    v: 1,
    crawlId,
    key: normalized.key,
    url: normalized.url,
    status: 200,
    outcome: 'fetched',
    contentType: 'text/html',
    bytes: 10,
    fetchedAt: new Date().toISOString(),
    ms: 3,
    depth: 0,
    outlinks: 0,
  };
}

async function receiveAll(expected: number): Promise<Message[]> {
  const messages: Message[] = [];
  for (let round = 0; round < 20 && messages.length < expected; round++) {
    const out = await aws.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: resultsQueue,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    messages.push(...(out.Messages ?? []));
  }
  return messages;
}

function eventOf(messages: readonly Message[]): SQSEvent {
  return { Records: messages.map((m) => toSqsRecord(m, resultsArn, 'us-east-1')) };
}

async function settle(messages: readonly Message[]): Promise<void> {
  // What Lambda does with a batch whose response names no failure: delete every message.
  await aws.clients.sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: resultsQueue,
      Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
    }),
  );
}

async function dlqDepth(): Promise<number> {
  const out = await aws.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: aws.outputs.ResultsDlqUrl!,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

describe('aggregate handler near its timeout', () => {
  it('starts nothing it cannot finish and sends the rest back as new messages, which are then indexed', async () => {
    const crawlId = `deadline-${randomUUID().slice(0, 8)}`;
    const results = ['/a', '/b', '/c'].map((path) => result(crawlId, path));
    const bodies = results.map((r) => JSON.stringify(r));
    await aws.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: resultsQueue,
        Entries: bodies.map((body, i) => ({ Id: String(i), MessageBody: body })),
      }),
    );
    const handler = createHandler(aws.functionEnv.AggregateFunction!);
    const blobs = new S3Blobs(aws.clients.s3, aws.outputs.PageBucketName!);
    const lines = async () => {
      let count = 0;
      for await (const key of blobs.list(`results/${crawlId}/`))
        count += gunzipSync(await blobs.get(key))
          .toString('utf8')
          .split('\n')
          .filter((line) => line !== '').length;
      return count;
    };

    const first = await receiveAll(3);
    assert.equal(first.length, 3);
    // Half a second left: not enough to start a crawl's results (they keep a reserve of at least 1 s).
    const response = await handler(eventOf(first), {
      awsRequestId: randomUUID(),
      getRemainingTimeInMillis: () => 500,
    });
    assert.deepEqual(response.batchItemFailures, [], 'nothing reported failed: no receive spent');
    await settle(first);
    assert.equal(await lines(), 0, 'no work started');

    // The same results are back on the queue as new messages: first receive, same bodies.
    const again = await receiveAll(3);
    assert.deepEqual(again.map((m) => m.Body).sort(), [...bodies].sort());
    for (const m of again) assert.equal(m.Attributes?.ApproximateReceiveCount, '1');

    // With time, they are done.
    const done = await handler(eventOf(again), {
      awsRequestId: randomUUID(),
      getRemainingTimeInMillis: () => 60_000,
    });
    assert.deepEqual(done.batchItemFailures, []);
    await settle(again);
    assert.equal(await lines(), 3);
    assert.equal(await dlqDepth(), 0);
  });
});
