// The fault proxy (test/fixtures/fault-proxy.ts) must classify calls as AWS names them, shape its
// errors so the SDK reads them as AWS's own (throttling and 5xx, retried by the SDK), fail before or
// after forwarding as asked, delay, duplicate SQS sends, and do all of it deterministically per seed.
// Upstream here is a stub on 127.0.0.1 that records what reached it and answers like the emulators.
// The crashing handler wrapper (test/fixtures/faulty-handler.ts) is checked against the same stub:
// a crash mid-batch stops the invocation's AWS calls, as a dead process would.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import {
  classifyCall,
  type FaultProxy,
  type FaultRule,
  seededRandom,
  startFaultProxy,
} from '../fixtures/fault-proxy.ts';
import {
  type CrashMode,
  crashLog,
  createHandler as createFaultyHandler,
  SimulatedCrash,
} from '../fixtures/faulty-handler.ts';
import { recorder } from '../fixtures/local-handler.ts';

interface Seen {
  method: string;
  path: string;
  target: string;
  body: string;
}

const QUEUE_URL = 'http://127.0.0.1:1/000000000000/ServerlessCrawler-TaskQueue-ABC';

const md5 = (text: string): string => createHash('md5').update(text).digest('hex');

// Answers each call as the emulators would, enough for the SDK to parse.
function answer(req: IncomingMessage, body: string): { status: number; type: string; text: string } {
  const target = String(req.headers['x-amz-target'] ?? '');
  if (target === 'AmazonSQS.SendMessageBatch') {
    const entries = (JSON.parse(body) as { Entries: Array<{ Id: string; MessageBody: string }> }).Entries;
    const successful = entries.map((e) => ({
      Id: e.Id,
      MessageId: crypto.randomUUID(),
      MD5OfMessageBody: md5(e.MessageBody),
    }));
    return {
      status: 200,
      type: 'application/x-amz-json-1.0',
      text: JSON.stringify({ Successful: successful, Failed: [] }),
    };
  }
  if (target === 'AmazonSQS.SendMessage') {
    return {
      status: 200,
      type: 'application/x-amz-json-1.0',
      text: JSON.stringify({
        MessageId: crypto.randomUUID(),
        MD5OfMessageBody: md5((JSON.parse(body) as { MessageBody: string }).MessageBody),
      }),
    };
  }
  if (target.startsWith('DynamoDB_')) return { status: 200, type: 'application/x-amz-json-1.0', text: '{}' };
  return { status: 200, type: 'application/xml', text: '' };
}

async function startUpstream(seen: Seen[]): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({
        method: req.method ?? '',
        path: req.url ?? '',
        target: String(req.headers['x-amz-target'] ?? ''),
        body,
      });
      const out = answer(req, body);
      res.writeHead(out.status, { 'content-type': out.type, etag: '"abc"' });
      res.end(out.text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

function clients(endpoint: string, maxAttempts: number) {
  const common = { region: 'us-east-1', endpoint, credentials, maxAttempts };
  return {
    sqs: new SQSClient(common),
    s3: new S3Client({ ...common, forcePathStyle: true }),
    dynamodb: new DynamoDBClient(common),
  };
}

async function errorOf(
  promise: Promise<unknown>,
): Promise<Error & { $metadata?: { httpStatusCode?: number } }> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  }
  assert.fail('the call succeeded');
}

describe('classifyCall', () => {
  const none = Buffer.alloc(0);

  it('reads SQS and DynamoDB operations from X-Amz-Target, with the queue and table', () => {
    const sqs = classifyCall(
      'POST',
      '/',
      { 'x-amz-target': 'AmazonSQS.SendMessageBatch' },
      Buffer.from(JSON.stringify({ QueueUrl: QUEUE_URL, Entries: [] })),
    );
    assert.deepEqual([sqs.service, sqs.operation, sqs.queueUrl], ['sqs', 'SendMessageBatch', QUEUE_URL]);
    const ddb = classifyCall(
      'POST',
      '/',
      { 'x-amz-target': 'DynamoDB_20120810.UpdateItem' },
      Buffer.from(JSON.stringify({ TableName: 'Frontier' })),
    );
    assert.deepEqual([ddb.service, ddb.operation, ddb.table], ['dynamodb', 'UpdateItem', 'Frontier']);
  });

  it('reads the SQS query protocol from its Action parameter', () => {
    const call = classifyCall(
      'POST',
      '/',
      { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      Buffer.from('Action=ReceiveMessage&QueueUrl=http%3A%2F%2Fq'),
    );
    assert.deepEqual([call.service, call.operation, call.queueUrl], ['sqs', 'ReceiveMessage', 'http://q']);
  });

  it('reads S3 operations from method, path and query (path style), keys decoded', () => {
    const cases: Array<[string, string, Record<string, string>, string, string?]> = [
      ['PUT', '/bucket/crawls/c%201/summary.json?x-id=PutObject', {}, 'PutObject', 'crawls/c 1/summary.json'],
      ['PUT', '/bucket/a/b', { 'x-amz-copy-source': '/bucket/x' }, 'CopyObject', 'a/b'],
      ['PUT', '/bucket/a?partNumber=1&uploadId=u', {}, 'UploadPart', 'a'],
      ['GET', '/bucket/a/b.gz', {}, 'GetObject', 'a/b.gz'],
      ['HEAD', '/bucket/a', {}, 'HeadObject', 'a'],
      ['DELETE', '/bucket/a', {}, 'DeleteObject', 'a'],
      ['GET', '/bucket?list-type=2&prefix=results%2F', {}, 'ListObjectsV2'],
      ['HEAD', '/bucket', {}, 'HeadBucket'],
      ['PUT', '/bucket', {}, 'CreateBucket'],
      ['POST', '/bucket?delete', {}, 'DeleteObjects'],
    ];
    for (const [method, path, headers, operation, key] of cases) {
      const call = classifyCall(method, path, headers, none);
      assert.equal(call.service, 's3', path);
      assert.equal(call.operation, operation, `${method} ${path}`);
      assert.equal(call.bucket, 'bucket', path);
      assert.equal(call.key, key, path);
    }
  });
});

describe('seededRandom', () => {
  it('is deterministic per seed and uniform enough', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const draws = Array.from({ length: 1000 }, () => a());
    assert.deepEqual(
      draws,
      Array.from({ length: 1000 }, () => b()),
    );
    assert.ok(draws.every((x) => x >= 0 && x < 1));
    const low = draws.filter((x) => x < 0.1).length;
    assert.ok(low > 60 && low < 140, `${low} of 1000 below 0.1`);
  });
});

describe('startFaultProxy', () => {
  const seen: Seen[] = [];
  let upstream: { server: Server; url: string };
  let proxy: FaultProxy;

  before(async () => {
    upstream = await startUpstream(seen);
    const url = upstream.url;
    proxy = await startFaultProxy({ upstream: { sqs: url, s3: url, dynamodb: url }, seed: 3 });
  });
  after(async () => {
    await proxy.stop();
    await new Promise<void>((resolve) => {
      upstream.server.closeAllConnections();
      upstream.server.close(() => resolve());
    });
  });
  beforeEach(() => {
    seen.length = 0;
    proxy.setRules([]);
    proxy.setEnabled(true);
    proxy.resetStats();
  });

  it('forwards untouched when no rule matches', async () => {
    const c = clients(proxy.url, 1);
    await c.dynamodb.send(new GetItemCommand({ TableName: 'Frontier', Key: { pk: { S: 'a' } } }));
    await c.s3.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'k 1', Body: 'hello' }));
    assert.deepEqual(
      seen.map((s) => [s.method, s.target || s.path.split('?')[0]]),
      [
        ['POST', 'DynamoDB_20120810.GetItem'],
        ['PUT', '/bucket/k%201'],
      ],
    );
    const writes = proxy.objectWrites();
    assert.deepEqual(
      writes.map((w) => [w.key, w.effect, w.clientStatus]),
      [['k 1', true, 200]],
    );
  });

  it('throttles before forwarding, shaped so the SDK names and retries the error as AWS', async () => {
    proxy.setRules([{ failBefore: 1, errors: ['throttle'] }]);
    const once = clients(proxy.url, 1);
    const ddb = await errorOf(
      once.dynamodb.send(new PutItemCommand({ TableName: 'Frontier', Item: { pk: { S: 'a' } } })),
    );
    assert.match(ddb.name, /^(ProvisionedThroughputExceededException|ThrottlingException)$/);
    assert.equal(ddb.$metadata?.httpStatusCode, 400);
    const sqs = await errorOf(
      once.sqs.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'x' })),
    );
    assert.match(sqs.name, /^(RequestThrottled|ThrottlingException)$/);
    const s3 = await errorOf(once.s3.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'k', Body: 'x' })));
    assert.equal(s3.name, 'SlowDown');
    assert.equal(s3.$metadata?.httpStatusCode, 503);
    assert.deepEqual(seen, [], 'nothing reached the emulator');
    assert.deepEqual(
      proxy.objectWrites().map((w) => [w.key, w.effect, w.fault]),
      [['k', false, 'before']],
    );

    // With the SDK's retries (3 attempts) every attempt is a call; all are throttled.
    const retrying = clients(proxy.url, 3);
    await errorOf(retrying.dynamodb.send(new GetItemCommand({ TableName: 'T', Key: { pk: { S: 'a' } } })));
    assert.equal(proxy.stats().byOperation['dynamodb:GetItem']?.calls, 3, 'the SDK retried a throttle');
    await errorOf(retrying.sqs.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'x' })));
    assert.equal(proxy.stats().byOperation['sqs:SendMessage']?.calls, 4, 'the SDK retried an SQS throttle');
    await errorOf(retrying.s3.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'k', Body: 'x' })));
    assert.equal(proxy.stats().byOperation['s3:PutObject']?.calls, 4, 'the SDK retried SlowDown');
  });

  it('fails with 500/503 internal errors that the SDK retries', async () => {
    proxy.setRules([{ failBefore: 1, errors: ['internal', 'unavailable'] }]);
    const retrying = clients(proxy.url, 3);
    const error = await errorOf(
      retrying.sqs.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'x' })),
    );
    assert.match(error.name, /^(InternalFailure|ServiceUnavailable)$/);
    assert.ok([500, 503].includes(error.$metadata?.httpStatusCode ?? 0));
    assert.equal(proxy.stats().byOperation['sqs:SendMessage']?.calls, 3);
    const s3 = await errorOf(
      clients(proxy.url, 1).s3.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: 'x' })),
    );
    assert.match(s3.name, /^(InternalError|ServiceUnavailable)$/);
  });

  it('fails after forwarding: the call took effect, the client sees an error', async () => {
    proxy.setRules([{ services: ['s3'], operations: ['PutObject'], failAfter: 1, errors: ['internal'] }]);
    const c = clients(proxy.url, 1);
    const error = await errorOf(c.s3.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'k', Body: 'x' })));
    assert.equal(error.name, 'InternalError');
    assert.equal(seen.length, 1, 'the emulator got the write');
    assert.deepEqual(
      proxy.objectWrites().map((w) => [w.key, w.effect, w.clientStatus, w.fault]),
      [['k', true, 500, 'after']],
    );
    // Other services and operations are not matched.
    await c.dynamodb.send(new GetItemCommand({ TableName: 'T', Key: { pk: { S: 'a' } } }));
    const stats = proxy.stats();
    assert.equal(stats.byOperation['s3:PutObject']?.failedAfter, 1);
    assert.equal(stats.byOperation['dynamodb:GetItem']?.failedAfter, 0);
    assert.deepEqual(
      proxy.faults().map((f) => [f.service, f.operation, f.timing, f.kind, f.detail]),
      [['s3', 'PutObject', 'after', 'internal', 'k']],
    );
  });

  it('fails about the asked fraction, the same calls for the same seed', async () => {
    const rules: FaultRule[] = [{ operations: ['GetItem'], failBefore: 0.1, failAfter: 0.1 }];
    const run = async (): Promise<string> => {
      const url = upstream.url;
      const p = await startFaultProxy({ upstream: { sqs: url, s3: url, dynamodb: url }, seed: 99, rules });
      const c = clients(p.url, 1);
      let pattern = '';
      try {
        for (let i = 0; i < 200; i++) {
          try {
            await c.dynamodb.send(new GetItemCommand({ TableName: 'T', Key: { pk: { S: String(i) } } }));
            pattern += '.';
          } catch {
            pattern += 'x';
          }
        }
        const s = p.stats().byOperation['dynamodb:GetItem'];
        assert.equal((s?.failedBefore ?? 0) + (s?.failedAfter ?? 0), pattern.split('x').length - 1);
        assert.ok((s?.failedBefore ?? 0) > 5 && (s?.failedAfter ?? 0) > 5, JSON.stringify(s));
      } finally {
        await p.stop();
      }
      return pattern;
    };
    const first = await run();
    const failures = first.split('x').length - 1;
    assert.ok(failures > 20 && failures < 60, `${failures} of 200 failed, asked 20 %`);
    assert.equal(await run(), first, 'same seed, same faults');
  });

  it('delays answers by the asked jitter', async () => {
    proxy.setRules([{ services: ['dynamodb'], delayMs: [60, 80] }]);
    const c = clients(proxy.url, 1);
    const started = performance.now();
    await c.dynamodb.send(new GetItemCommand({ TableName: 'T', Key: { pk: { S: 'a' } } }));
    assert.ok(performance.now() - started >= 58);
    proxy.setEnabled(false);
    const quick = performance.now();
    await c.dynamodb.send(new GetItemCommand({ TableName: 'T', Key: { pk: { S: 'a' } } }));
    assert.ok(performance.now() - quick < 60, 'disabled: no delay');
    assert.equal(proxy.stats().byOperation['dynamodb:GetItem']?.delayed, 1);
  });

  it('duplicates accepted SQS entries to the matching queue as new messages with the same content', async () => {
    proxy.setRules([
      {
        operations: ['SendMessageBatch', 'SendMessage'],
        when: (call) => call.queueUrl === QUEUE_URL,
        duplicate: 1,
        duplicateDelaySeconds: [3, 3],
      },
    ]);
    const c = clients(proxy.url, 1);
    await c.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: QUEUE_URL,
        Entries: [
          { Id: 'a', MessageBody: 'task a', MessageGroupId: 'host' },
          { Id: 'b', MessageBody: 'task b', DelaySeconds: 7 },
        ],
      }),
    );
    await c.sqs.send(new SendMessageCommand({ QueueUrl: `${QUEUE_URL}-other`, MessageBody: 'other' }));
    const batches = seen.filter((s) => s.target === 'AmazonSQS.SendMessageBatch');
    assert.equal(batches.length, 2, 'the original batch and one batch of copies');
    const copies = (JSON.parse(batches[1]?.body ?? '{}') as { QueueUrl: string; Entries: unknown[] }).Entries;
    assert.deepEqual(copies, [
      { Id: 'dup0', MessageBody: 'task a', MessageGroupId: 'host', DelaySeconds: 3 },
      { Id: 'dup1', MessageBody: 'task b', DelaySeconds: 7 },
    ]);
    assert.equal(seen.filter((s) => s.target === 'AmazonSQS.SendMessage').length, 1, 'other queue: no copy');
    assert.equal(proxy.stats().byOperation['sqs:SendMessageBatch']?.duplicated, 2);

    // The chance may depend on the message body.
    seen.length = 0;
    proxy.setRules([
      { operations: ['SendMessageBatch'], duplicate: (body) => (body.includes('keep') ? 1 : 0) },
    ]);
    await c.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: QUEUE_URL,
        Entries: [
          { Id: 'a', MessageBody: 'drop me' },
          { Id: 'b', MessageBody: 'keep me' },
        ],
      }),
    );
    const again = seen.filter((s) => s.target === 'AmazonSQS.SendMessageBatch').at(1);
    assert.deepEqual((JSON.parse(again?.body ?? '{}') as { Entries: unknown[] }).Entries, [
      { Id: 'dup0', MessageBody: 'keep me' },
    ]);
  });
});

describe('faulty handler (test/fixtures/faulty-handler.ts)', () => {
  const seen: Seen[] = [];
  let upstream: { server: Server; url: string };

  before(async () => {
    upstream = await startUpstream(seen);
  });
  after(
    () =>
      new Promise<void>((resolve) => {
        upstream.server.closeAllConnections();
        upstream.server.close(() => resolve());
      }),
  );

  // Wraps the runtime's test handler: each `spawn` record makes one SendMessageBatch call.
  async function faulty(mode: CrashMode, runId: string) {
    return createFaultyHandler({
      FAULTY_HANDLER_TARGET: 'test/fixtures/local-handler.ts',
      FAULTY_RUN_ID: runId,
      FAULTY_CRASH_RATE: '1',
      FAULTY_CRASH_MODES: mode,
      FAULTY_MID_MAX_CALLS: '1',
      TEST_RUN_ID: runId,
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_SQS: upstream.url,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      TASK_QUEUE_URL: QUEUE_URL,
    });
  }

  const spawn = JSON.stringify({ do: 'spawn', n: 1, depth: 1 });
  const event: SQSEvent = {
    Records: ['m1', 'm2', 'm3'].map(
      (messageId) =>
        ({
          messageId,
          body: spawn,
          receiptHandle: messageId,
          attributes: { ApproximateReceiveCount: '1' },
        }) as unknown as SQSRecord,
    ),
  };
  const context = {
    awsRequestId: 'req-1',
    functionName: 'fn',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:fn',
    memoryLimitInMB: '128',
    logGroupName: 'g',
    logStreamName: 's',
    getRemainingTimeInMillis: () => 10_000,
  } as unknown as Context;
  const sends = () => seen.filter((s) => s.target === 'AmazonSQS.SendMessageBatch').length;

  beforeEach(() => {
    seen.length = 0;
  });

  it('mid: dies at the K-th AWS call, and no later call of that invocation reaches AWS', async () => {
    const handler = await faulty('mid', 'unit-mid');
    await assert.rejects(handler(event, context), SimulatedCrash);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const log = crashLog('unit-mid');
    assert.equal(log.crashes.length, 1);
    const crash = log.crashes[0];
    assert.equal(crash?.mode, 'mid');
    assert.deepEqual(crash?.diedAt?.call, 'SQS.SendMessageBatch');
    assert.equal(sends(), crash?.diedAt?.tookEffect ? 1 : 0, 'only the dying call may have reached AWS');
    assert.equal(recorder('unit-mid').completed.size, 0, 'the rest of the batch never ran');
  });

  it('before: no side effect; after: every side effect; each crash restarts the container', async () => {
    const before = await faulty('before', 'unit-before');
    await assert.rejects(before(event, context), SimulatedCrash);
    assert.equal(sends(), 0);
    assert.equal(recorder('unit-before').invocations.length, 0);

    const afterAll = await faulty('after', 'unit-after');
    await assert.rejects(afterAll(event, context), SimulatedCrash);
    assert.equal(sends(), 3, 'the real handler did all its work');
    assert.equal(recorder('unit-after').completed.get(spawn), 3);
    await assert.rejects(afterAll(event, context), SimulatedCrash);
    assert.equal(crashLog('unit-after').realInstances, 2, 'a crash ends the container: a cold start follows');
  });

  it('other SDK calls in the process are not tapped', async () => {
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: upstream.url, credentials, maxAttempts: 1 });
    await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: 'a', MessageBody: 'x' }] }),
    );
    assert.equal(sends(), 1);
  });
});
