// The counting middleware on real SDK clients against the embedded emulators: every call and every
// HTTP attempt counted per service and operation, SQS billed chunks, S3 classes, DynamoDB units.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { countedCallCost } from '../../lambdas/adapters/crawl-budget.ts';
import { AwsCallCounter, countAwsCalls, diffSnapshots } from '../../lambdas/shared/aws-call-counter.ts';
import { type AwsMeters, createAwsClients } from '../../lambdas/shared/aws-clients.ts';
import { FUNCTION_ENV } from '../../lambdas/shared/contracts.ts';
import { AggregateEnvSchema, loadEnv } from '../../lambdas/shared/env.ts';
import { type AwsClients, createClients, destroyClients, endpointEnv } from '../../local/aws-clients.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { processMeters } from '../../local/process-meters.ts';
import { closedPort } from '../fixtures/http-test-server.ts';

describe('counting AWS calls', () => {
  let emulators: Emulators;
  let clients: AwsClients;

  before(async () => {
    emulators = await startEmulators();
    clients = createClients(emulators.endpoints);
  });
  after(async () => {
    destroyClients(clients);
    await emulators.stop();
  });

  it('counts SQS calls, billed 64 KiB chunks and received messages', async () => {
    const from = processMeters.counter.snapshot();
    const { QueueUrl } = await clients.sqs.send(new CreateQueueCommand({ QueueName: 'counted' }));
    const body = 'x'.repeat(10_000);
    await clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: Array.from({ length: 10 }, (_, i) => ({ Id: String(i), MessageBody: body })),
      }),
    );
    const got = await clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    const ops = diffSnapshots(from, processMeters.counter.snapshot()).operations;
    const send = ops['SQS:SendMessageBatch'];
    assert.equal(send?.calls, 1);
    assert.equal(send?.requests, 1);
    // 10 × 10,000 bytes of bodies plus framing: two started 64 KiB chunks.
    assert.equal(send?.sqsBilledRequests, 2);
    assert.ok((send?.bytesOut ?? 0) > 100_000);
    const receive = ops['SQS:ReceiveMessage'];
    assert.equal(receive?.messages, got.Messages?.length);
    assert.equal(
      receive?.sqsBilledRequests,
      Math.max(1, Math.ceil(((got.Messages?.length ?? 0) * 10_000) / 65_536)),
    );
    assert.equal(ops['SQS:CreateQueue']?.calls, 1);
  });

  it('puts S3 requests in their class', async () => {
    const from = processMeters.counter.snapshot();
    await clients.s3.send(new CreateBucketCommand({ Bucket: 'counted' }));
    await clients.s3.send(new PutObjectCommand({ Bucket: 'counted', Key: 'a', Body: 'hello' }));
    const object = await clients.s3.send(new GetObjectCommand({ Bucket: 'counted', Key: 'a' }));
    assert.equal(await object.Body?.transformToString(), 'hello');
    const ops = diffSnapshots(from, processMeters.counter.snapshot()).operations;
    assert.deepEqual([ops['S3:PutObject']?.s3Class, ops['S3:PutObject']?.requests], ['put', 1]);
    assert.deepEqual([ops['S3:GetObject']?.s3Class, ops['S3:GetObject']?.requests], ['get', 1]);
  });

  it('asks DynamoDB for consumed capacity and estimates it for failed conditional writes', async () => {
    const from = processMeters.counter.snapshot();
    await clients.dynamodb.send(
      new CreateTableCommand({
        TableName: 'counted',
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      }),
    );
    const item = { pk: { S: 'k1' }, data: { S: 'd'.repeat(1500) } };
    await clients.dynamodb.send(new PutItemCommand({ TableName: 'counted', Item: item }));
    await assert.rejects(
      clients.dynamodb.send(
        new PutItemCommand({
          TableName: 'counted',
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
      { name: 'ConditionalCheckFailedException' },
    );
    await clients.dynamodb.send(
      new UpdateItemCommand({
        TableName: 'counted',
        Key: { pk: { S: 'k1' } },
        UpdateExpression: 'SET n = :n',
        ExpressionAttributeValues: { ':n': { N: '1' } },
      }),
    );
    const read = await clients.dynamodb.send(
      new GetItemCommand({ TableName: 'counted', Key: { pk: { S: 'k1' } }, ConsistentRead: true }),
    );
    assert.ok(read.ConsumedCapacity, 'the middleware asked for ReturnConsumedCapacity');
    const ops = diffSnapshots(from, processMeters.counter.snapshot()).operations;
    const put = ops['DynamoDB:PutItem'];
    // ~1.5 KiB item: 2 WRU reported for the put that succeeded, 2 estimated for the one that failed.
    assert.deepEqual(
      { calls: put?.calls, errors: put?.errors, estimated: put?.estimatedUnits, wru: put?.writeUnits },
      { calls: 2, errors: 1, estimated: 1, wru: 4 },
    );
    assert.equal(ops['DynamoDB:UpdateItem']?.writeUnits, 2);
    assert.equal(ops['DynamoDB:UpdateItem']?.estimatedUnits, 0);
    assert.equal(ops['DynamoDB:GetItem']?.readUnits, 1);
    assert.equal(ops['DynamoDB:CreateTable']?.writeUnits, 0);
  });

  it('counts every HTTP attempt: SDK retries are requests too', async () => {
    const counter = new AwsCallCounter();
    const port = await closedPort();
    const sqs = countAwsCalls(
      new SQSClient({
        region: 'us-east-1',
        endpoint: `http://127.0.0.1:${port}`,
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
        maxAttempts: 3,
      }),
      counter,
    );
    countAwsCalls(sqs, counter); // a second attachment is a no-op
    await assert.rejects(sqs.send(new CreateQueueCommand({ QueueName: 'nowhere' })));
    sqs.destroy();
    const op = counter.snapshot().operations['SQS:CreateQueue'];
    assert.deepEqual(
      { calls: op?.calls, errors: op?.errors, requests: op?.requests },
      { calls: 1, errors: 1, requests: 3 },
    );
  });

  const functionEnv = (counting?: string) =>
    loadEnv(
      AggregateEnvSchema,
      {
        ...endpointEnv(emulators.endpoints),
        RESULTS_QUEUE_URL: 'http://127.0.0.1:1/000000000000/counted',
        TASK_QUEUE_URL: 'http://127.0.0.1:1/000000000000/counted-tasks',
        PAGE_BUCKET: 'counted',
        FRONTIER_TABLE: 'counted',
        ...(counting === undefined ? {} : { [FUNCTION_ENV.callCounting]: counting }),
      },
      'test',
    );

  /** One GetItem of a function's clients (createAwsClients), what it counted and whether it asked for capacity. */
  async function functionGetItem(env: ReturnType<typeof functionEnv>, wiring: { meters?: AwsMeters } = {}) {
    const clients = createAwsClients(env, wiring);
    const asked: unknown[] = [];
    clients.dynamodb.middlewareStack.add(
      (next) => async (args) => {
        asked.push((args.input as { ReturnConsumedCapacity?: unknown }).ReturnConsumedCapacity);
        return next(args);
      },
      { step: 'build', name: 'testSeesInput' },
    );
    const from = clients.counter?.snapshot();
    await clients.dynamodb.send(new GetItemCommand({ TableName: 'counted', Key: { pk: { S: 'absent' } } }));
    clients.sqs.destroy();
    clients.s3.destroy();
    clients.dynamodb.destroy();
    const op =
      from && clients.counter
        ? diffSnapshots(from, clients.counter.snapshot()).operations['DynamoDB:GetItem']
        : undefined;
    return { counter: clients.counter, op, asked: asked[0] };
  }

  it("on Lambda a function counts into its own counter, estimating DynamoDB's units without asking for them", async () => {
    const { counter, op, asked } = await functionGetItem(functionEnv());
    assert.ok(counter, 'the default (estimated) counts');
    assert.notEqual(counter, processMeters.counter, 'not the local process’s counter: the function’s own');
    assert.equal(op?.calls, 1);
    assert.equal(op?.estimatedUnits, 1, 'the unit is estimated from the item size');
    assert.equal(op?.readUnits, 0.5, 'an eventually consistent read of a missing item: half a unit');
    assert.equal(asked, undefined, 'no ReturnConsumedCapacity is added to the request');
  });

  it('CRAWLER_CALL_COUNTING=reported asks DynamoDB for the units it consumed', async () => {
    const { op, asked } = await functionGetItem(functionEnv('reported'));
    assert.equal(asked, 'TOTAL');
    assert.equal(op?.calls, 1);
    assert.equal(op?.estimatedUnits, 0, 'dynalite reports the units');
  });

  it('CRAWLER_CALL_COUNTING=off counts nothing: no counter, no middleware, a budget meter that reads 0', async () => {
    const { counter, asked } = await functionGetItem(functionEnv('off'));
    assert.equal(counter, undefined);
    assert.equal(asked, undefined);
    assert.equal(countedCallCost(undefined)(), 0);
  });

  it('a runtime that hands meters over (the local one) gets its calls counted there, capacity asked for', async () => {
    const meters = { counter: new AwsCallCounter(), reportCapacity: true };
    const { counter, op, asked } = await functionGetItem(functionEnv('off'), { meters });
    assert.equal(counter, meters.counter, 'the meters handed over win over the variable');
    assert.equal(op?.calls, 1);
    assert.equal(asked, 'TOTAL');
  });

  it('an unknown CRAWLER_CALL_COUNTING is refused in one line naming the variable and the choices', () => {
    assert.throws(
      () => functionEnv('sometimes'),
      (error: Error) => {
        assert.match(error.message, /CRAWLER_CALL_COUNTING/);
        assert.match(error.message, /estimated.*reported.*off/);
        assert.doesNotMatch(error.message, /\n/);
        return true;
      },
    );
  });

  it('leaves a client built elsewhere alone until asked', () => {
    const plain = new DynamoDBClient({ region: 'us-east-1' });
    const counter = new AwsCallCounter();
    countAwsCalls(plain, counter);
    assert.deepEqual(counter.snapshot().operations, {});
    plain.destroy();
  });
});
