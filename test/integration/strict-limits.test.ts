// The strict layer (local/strict-*.ts) over the wire: SDK v3 clients against the embedded emulators
// get AWS's answers (status, error name, message shape) where the emulators alone are lenient.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  ProvisionedThroughputExceededException,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import {
  BatchRequestTooLong,
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
  TooManyEntriesInBatchRequest,
} from '@aws-sdk/client-sqs';
import { QUEUE } from '../../cdk/limits.ts';
import {
  clientSettings,
  dynamodbConfig,
  endpointsFromUrl,
  s3Config,
  sqsConfig,
} from '../../local/aws-clients.ts';
import { startDynaliteServer } from '../../local/dynalite-server.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { type FauxqsServer, type RunningServer, startFauxqsServer } from '../../local/fauxqs-server.ts';
import { DYNAMODB_THROTTLE_ENV } from '../../local/strict-dynamodb.ts';

let emulators: Emulators;
let sqs: SQSClient;
let s3: S3Client;
let dynamodb: DynamoDBClient;
let queueUrl: string;

before(async () => {
  emulators = await startEmulators();
  const settings = clientSettings({ maxAttempts: 1 });
  sqs = new SQSClient(sqsConfig(emulators.endpoints, settings));
  s3 = new S3Client(s3Config(emulators.endpoints, settings));
  dynamodb = new DynamoDBClient(dynamodbConfig(emulators.endpoints, settings));
  // As the stack makes its queues: MaximumMessageSize from cdk/limits.ts.
  const created = await sqs.send(
    new CreateQueueCommand({
      QueueName: 'strict',
      Attributes: { MaximumMessageSize: String(QUEUE.maxMessageSizeBytes) },
    }),
  );
  queueUrl = created.QueueUrl!;
  await s3.send(new CreateBucketCommand({ Bucket: 'strict' }));
  await dynamodb.send(
    new CreateTableCommand({
      TableName: 'strict',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    }),
  );
});

after(async () => {
  for (const client of [sqs, s3, dynamodb]) client?.destroy();
  await emulators?.stop();
});

/** The SDK's error for a call: its class, name, HTTP status and message. */
async function failure(call: Promise<unknown>): Promise<Error & { $metadata: { httpStatusCode?: number } }> {
  try {
    await call;
  } catch (err) {
    return err as Error & { $metadata: { httpStatusCode?: number } };
  }
  assert.fail('the call succeeded');
}

describe('SQS: MessageGroupId', () => {
  it('129 characters are refused (InvalidParameterValue, 400), 128 are accepted, on a standard queue', async () => {
    const err = await failure(
      sqs.send(
        new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', MessageGroupId: 'h'.repeat(129) }),
      ),
    );
    assert.equal(err.name, 'InvalidParameterValue');
    assert.equal(err.$metadata.httpStatusCode, 400);
    assert.match(err.message, /MessageGroupId is invalid.*1 to 128 in length/);
    await sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', MessageGroupId: 'h'.repeat(128) }),
    );
  });

  it('characters outside alphanumerics and punctuation are refused, in a batch entry too', async () => {
    const err = await failure(
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: [
            { Id: 'a', MessageBody: 'x', MessageGroupId: 'example.com' },
            { Id: 'b', MessageBody: 'x', MessageGroupId: 'bücher.example' },
          ],
        }),
      ),
    );
    assert.equal(err.name, 'InvalidParameterValue');
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: 'x',
        MessageGroupId: `[::1]:8080!"#$%&'()*+,-./:;<=>?@\\^_\`{|}~`,
      }),
    );
  });
});

describe('SQS: DelaySeconds', () => {
  it('901 is refused (InvalidParameterValue), 900 is accepted, alone and in a batch', async () => {
    const one = await failure(
      sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', DelaySeconds: 901 })),
    );
    assert.equal(one.name, 'InvalidParameterValue');
    assert.match(one.message, /DelaySeconds/);
    const batch = await failure(
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: [{ Id: 'a', MessageBody: 'x', DelaySeconds: 901 }],
        }),
      ),
    );
    assert.equal(batch.name, 'InvalidParameterValue');
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', DelaySeconds: 900 }));
  });
});

describe('SQS: message and batch sizes', () => {
  const max = QUEUE.maxMessageSizeBytes;

  it("a message over the queue's MaximumMessageSize is refused, its attributes counted", async () => {
    // Body alone fits; name + type + value of the attribute push it one byte over.
    const attributes = { reason: { DataType: 'String', StringValue: 'r' } };
    const over = max - ('reason'.length + 'String'.length + 1) + 1;
    const err = await failure(
      sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: 'x'.repeat(over),
          MessageAttributes: attributes,
        }),
      ),
    );
    assert.equal(err.name, 'InvalidParameterValue');
    assert.match(err.message, new RegExp(`shorter than ${max} bytes`));
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: 'x'.repeat(over - 1),
        MessageAttributes: attributes,
      }),
    );
  });

  it('a message is measured in UTF-8 bytes, not characters', async () => {
    const err = await failure(
      sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'é'.repeat(max / 2 + 1) })),
    );
    assert.equal(err.name, 'InvalidParameterValue');
  });

  it('11 message attributes are refused', async () => {
    const attributes = Object.fromEntries(
      Array.from({ length: 11 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: 'v' }]),
    );
    const err = await failure(
      sqs.send(
        new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', MessageAttributes: attributes }),
      ),
    );
    assert.equal(err.name, 'InvalidParameterValue');
    assert.match(err.message, /\[11\] exceeds the allowed maximum \[10\]/);
  });

  it('a batch of 11 entries is refused (TooManyEntriesInBatchRequest)', async () => {
    const err = await failure(
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: 'x' })),
        }),
      ),
    );
    assert.ok(err instanceof TooManyEntriesInBatchRequest, err.name);
  });

  it('a batch whose messages sum to more than 1 MiB is refused (BatchRequestTooLong)', async () => {
    const body = 'x'.repeat(max); // each at the queue's limit; 5 of them exceed 1 MiB
    const err = await failure(
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Array.from({ length: 5 }, (_, i) => ({ Id: `e${i}`, MessageBody: body })),
        }),
      ),
    );
    assert.ok(err instanceof BatchRequestTooLong, err.name);
    assert.match(err.message, /cannot be longer than 1048576 bytes/);
    const ok = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Array.from({ length: 4 }, (_, i) => ({ Id: `e${i}`, MessageBody: body })),
      }),
    );
    assert.equal(ok.Successful?.length, 4);
  });

  it('accepted messages arrive unchanged', async () => {
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1 }));
    assert.ok(got.Messages?.length === 1);
  });
});

describe('S3: If-None-Match on PutObject', () => {
  it('answers 412 PreconditionFailed when the key exists, and keeps the object', async () => {
    await s3.send(new PutObjectCommand({ Bucket: 'strict', Key: 'once', Body: 'first', IfNoneMatch: '*' }));
    const err = await failure(
      s3.send(new PutObjectCommand({ Bucket: 'strict', Key: 'once', Body: 'second', IfNoneMatch: '*' })),
    );
    assert.ok(err instanceof S3ServiceException);
    assert.equal(err.name, 'PreconditionFailed');
    assert.equal(err.$metadata.httpStatusCode, 412);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'strict', Key: 'once' }));
    assert.equal(await got.Body?.transformToString(), 'first');
    // Without the condition a PUT overwrites, as on S3.
    await s3.send(new PutObjectCommand({ Bucket: 'strict', Key: 'once', Body: 'third' }));
  });

  it('of concurrent conditional PUTs of one key exactly one wins', async () => {
    const puts = Array.from({ length: 8 }, (_, i) =>
      s3
        .send(new PutObjectCommand({ Bucket: 'strict', Key: 'race', Body: `writer ${i}`, IfNoneMatch: '*' }))
        .then(
          () => 'won',
          (err: Error) => err.name,
        ),
    );
    const outcomes = await Promise.all(puts);
    assert.equal(outcomes.filter((o) => o === 'won').length, 1, outcomes.join());
    assert.equal(outcomes.filter((o) => o === 'PreconditionFailed').length, 7, outcomes.join());
  });
});

describe('DynamoDB: item size', () => {
  // 210,000 × 'é' is 420,000 UTF-8 bytes (over 400 KB) in 210,000 characters (under it).
  const wide = 'é'.repeat(210_000);

  it('PutItem of an item over 400 KB in UTF-8 bytes is refused (ValidationException)', async () => {
    const err = await failure(
      dynamodb.send(new PutItemCommand({ TableName: 'strict', Item: { pk: { S: 'big' }, v: { S: wide } } })),
    );
    assert.equal(err.name, 'ValidationException');
    assert.equal(err.$metadata.httpStatusCode, 400);
    assert.match(err.message, /Item size has exceeded the maximum allowed size/);
  });

  it('UpdateItem that grows an item over 400 KB is refused', async () => {
    const half = 'é'.repeat(105_000); // 210,000 bytes each
    await dynamodb.send(
      new PutItemCommand({ TableName: 'strict', Item: { pk: { S: 'grow' }, a: { S: half } } }),
    );
    const err = await failure(
      dynamodb.send(
        new UpdateItemCommand({
          TableName: 'strict',
          Key: { pk: { S: 'grow' } },
          UpdateExpression: 'SET b = :b',
          ExpressionAttributeValues: { ':b': { S: half } },
        }),
      ),
    );
    assert.equal(err.name, 'ValidationException');
    assert.match(err.message, /Item size to update has exceeded the maximum allowed size/);
  });

  it('an item of just under 400 KB is stored', async () => {
    const fits = 'x'.repeat(409_600 - 'pk'.length - 'fits'.length - 'v'.length);
    await dynamodb.send(
      new PutItemCommand({ TableName: 'strict', Item: { pk: { S: 'fits' }, v: { S: fits } } }),
    );
  });
});

describe('DynamoDB: throttling a hot partition', () => {
  let server: RunningServer;
  let client: DynamoDBClient;

  before(async () => {
    // Throttled: the first request to the hot partition (the random draws below the rate), then none.
    const draws = [0];
    server = await startDynaliteServer({
      throttle: { rate: 0.5, keyPrefix: 'HOT#', random: () => draws.shift() ?? 0.99 },
    });
    const endpoints = { sqs: server.url, s3: server.url, dynamodb: server.url };
    client = new DynamoDBClient(dynamodbConfig(endpoints, clientSettings({ maxAttempts: 1 })));
    await client.send(
      new CreateTableCommand({
        TableName: 'hot',
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
  });
  after(async () => {
    client?.destroy();
    await server?.stop();
  });

  it('answers ProvisionedThroughputExceededException with a key-range reason, and writes nothing', async () => {
    const put = () => client.send(new PutItemCommand({ TableName: 'hot', Item: { pk: { S: 'HOT#1' } } }));
    const err = await failure(put());
    assert.ok(err instanceof ProvisionedThroughputExceededException, err.name);
    assert.equal(err.$metadata.httpStatusCode, 400);
    assert.deepEqual((err as unknown as { ThrottlingReasons?: unknown }).ThrottlingReasons, [
      {
        reason: 'TableWriteKeyRangeThroughputExceeded',
        resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/hot',
      },
    ]);
    const read = await client.send(new GetItemCommand({ TableName: 'hot', Key: { pk: { S: 'HOT#1' } } }));
    assert.equal(read.Item, undefined, 'the throttled write did not happen');
    await put(); // the next one passes
    assert.ok(
      (await client.send(new GetItemCommand({ TableName: 'hot', Key: { pk: { S: 'HOT#1' } } }))).Item,
    );
  });

  it('leaves other partitions alone', async () => {
    for (let i = 0; i < 6; i++)
      await client.send(new PutItemCommand({ TableName: 'hot', Item: { pk: { S: `COLD#${i}` } } }));
  });

  it(`is configured by ${DYNAMODB_THROTTLE_ENV} when no option is given`, async () => {
    const saved = process.env[DYNAMODB_THROTTLE_ENV];
    process.env[DYNAMODB_THROTTLE_ENV] = '1:ALWAYS#';
    let fromEnv: RunningServer | undefined;
    try {
      fromEnv = await startDynaliteServer();
    } finally {
      if (saved === undefined) delete process.env[DYNAMODB_THROTTLE_ENV];
      else process.env[DYNAMODB_THROTTLE_ENV] = saved;
    }
    const endpoints = { sqs: fromEnv.url, s3: fromEnv.url, dynamodb: fromEnv.url };
    const envClient = new DynamoDBClient(dynamodbConfig(endpoints, clientSettings({ maxAttempts: 1 })));
    try {
      const err = await failure(
        envClient.send(new GetItemCommand({ TableName: 'any', Key: { pk: { S: 'ALWAYS#1' } } })),
      );
      assert.ok(err instanceof ProvisionedThroughputExceededException, err.name);
      const other = await failure(
        envClient.send(new GetItemCommand({ TableName: 'any', Key: { pk: { S: 'OTHER#1' } } })),
      );
      assert.equal(other.name, 'ResourceNotFoundException', 'other keys reach dynalite');
    } finally {
      envClient.destroy();
      await fromEnv.stop();
    }
  });
});

describe('SQS on disk (fauxqs SQLite store): a message made visible again', () => {
  let server: FauxqsServer;
  let dir: string;
  let disk: SQSClient;
  let url: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strict-sqs-disk-'));
    server = await startFauxqsServer({ sqsDir: dir });
    disk = new SQSClient(sqsConfig(endpointsFromUrl(server.url), clientSettings({ maxAttempts: 1 })));
    url = (await disk.send(new CreateQueueCommand({ QueueName: 'disk' }))).QueueUrl!;
  });
  after(async () => {
    disk?.destroy();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const visible = async () =>
    Number(
      (
        await disk.send(
          new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }),
        )
      ).Attributes?.ApproximateNumberOfMessages,
    );

  // fauxqs 2.4 wrote NULL into a NOT NULL column here: the call failed and the message vanished
  // from the queue until a restart (issue 22, `crawler redrive` against `crawler local`).
  it('ChangeMessageVisibility to 0 makes it visible at once, its receive count kept', async () => {
    await disk.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'one' }));
    const first = await disk.send(new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 600 }));
    const handle = first.Messages?.[0]?.ReceiptHandle;
    assert.ok(handle, 'received');
    await disk.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: 0 }),
    );
    assert.equal(await visible(), 1);
    const again = await disk.send(
      new ReceiveMessageCommand({ QueueUrl: url, MessageSystemAttributeNames: ['ApproximateReceiveCount'] }),
    );
    assert.equal(again.Messages?.[0]?.Body, 'one');
    assert.equal(again.Messages?.[0]?.Attributes?.ApproximateReceiveCount, '2');
    await disk.send(
      new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again.Messages![0]!.ReceiptHandle! }),
    );
  });

  it('ChangeMessageVisibilityBatch to 0 makes every entry visible at once', async () => {
    await disk.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: ['a', 'b', 'c'].map((body) => ({ Id: body, MessageBody: body })),
      }),
    );
    const got = await disk.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 600 }),
    );
    assert.equal(got.Messages?.length, 3);
    const out = await disk.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: got.Messages!.map((m, i) => ({
          Id: String(i),
          ReceiptHandle: m.ReceiptHandle!,
          VisibilityTimeout: 0,
        })),
      }),
    );
    assert.equal(out.Failed?.length ?? 0, 0);
    assert.equal(await visible(), 3);
  });
});
