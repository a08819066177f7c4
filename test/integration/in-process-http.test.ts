/**
 * The in-process transport (local/in-process-http.ts) against the wire: the same calls to the same
 * emulators give the same answers, errors included; bodies arrive byte for byte; a long poll is cut
 * short by its abort signal; and what a server refuses over HTTP it refuses in process.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { CreateQueueCommand, QueueDoesNotExist, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { HttpHandlerOptions, HttpRequest } from '@smithy/types';
import { dynamodbConfig, s3Config, sqsConfig } from '../../local/aws-clients.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';

let emulators: Emulators;
const clients: Array<{ destroy(): void }> = [];
const kinds = ['over HTTP', 'in process'] as const;
type Kind = (typeof kinds)[number];

function transport(kind: Kind) {
  return kind === 'in process' ? emulators.inProcess : {};
}
function dynamodb(kind: Kind): DynamoDBClient {
  const client = new DynamoDBClient({ ...dynamodbConfig(emulators.endpoints), ...transport(kind) });
  clients.push(client);
  return client;
}
function s3(kind: Kind): S3Client {
  const client = new S3Client({ ...s3Config(emulators.endpoints), ...transport(kind) });
  clients.push(client);
  return client;
}
function sqs(kind: Kind): SQSClient {
  const client = new SQSClient({ ...sqsConfig(emulators.endpoints), ...transport(kind) });
  clients.push(client);
  return client;
}

before(async () => {
  emulators = await startEmulators();
  await dynamodb('over HTTP').send(
    new CreateTableCommand({
      TableName: 'things',
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    }),
  );
  await s3('over HTTP').send(new CreateBucketCommand({ Bucket: 'bucket' }));
});

after(async () => {
  for (const client of clients) client.destroy();
  await emulators?.stop();
});

describe('in-process transport', () => {
  for (const kind of kinds) {
    it(`${kind}: service errors arrive typed, as the SDK parses them from the wire`, async () => {
      const table = dynamodb(kind);
      const item = { pk: { S: `once-${kind}` } };
      await table.send(new PutItemCommand({ TableName: 'things', Item: item }));
      await assert.rejects(
        table.send(
          new PutItemCommand({
            TableName: 'things',
            Item: item,
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        ),
        ConditionalCheckFailedException,
      );
      await assert.rejects(
        s3(kind).send(new GetObjectCommand({ Bucket: 'bucket', Key: 'absent' })),
        NoSuchKey,
      );
      await assert.rejects(
        sqs(kind).send(
          new ReceiveMessageCommand({
            QueueUrl: `${emulators.endpoints.sqs}/000000000000/no-such-queue`,
            WaitTimeSeconds: 0,
          }),
        ),
        QueueDoesNotExist,
      );
    });

    it(`${kind}: an object's bytes arrive exactly, whole and by range, whichever way it was written`, async () => {
      const body = randomBytes(1_500_000);
      const key = `blob-${kind}`;
      await s3(kind).send(new PutObjectCommand({ Bucket: 'bucket', Key: key, Body: body }));
      for (const reader of kinds) {
        const whole = await s3(reader).send(new GetObjectCommand({ Bucket: 'bucket', Key: key }));
        assert.deepEqual(Buffer.from((await whole.Body?.transformToByteArray()) ?? []), body, reader);
        const part = await s3(reader).send(
          new GetObjectCommand({ Bucket: 'bucket', Key: key, Range: 'bytes=1000-1999' }),
        );
        assert.deepEqual(
          Buffer.from((await part.Body?.transformToByteArray()) ?? []),
          body.subarray(1000, 2000),
          reader,
        );
      }
    });
  }

  it('keys and query values with reserved, encoded-looking and non-ASCII characters list and read the same both ways', async () => {
    const odd = "odd/!'()* &=+?#%2F%zz ü 日本/";
    const keys = [`${odd}a`, `${odd}b c`, 'odd/plain'];
    for (const key of keys)
      await s3('over HTTP').send(new PutObjectCommand({ Bucket: 'bucket', Key: key, Body: key }));
    for (const kind of kinds) {
      const listed = await s3(kind).send(new ListObjectsV2Command({ Bucket: 'bucket', Prefix: odd }));
      assert.deepEqual(
        (listed.Contents ?? []).map((object) => object.Key),
        [`${odd}a`, `${odd}b c`],
        kind,
      );
      for (const key of keys) {
        const got = await s3(kind).send(new GetObjectCommand({ Bucket: 'bucket', Key: key }));
        assert.equal(await got.Body?.transformToString(), key, `${kind}: ${key}`);
      }
    }
  });

  it('a long poll aborted while it waits rejects at once with AbortError, not at the end of its wait', async () => {
    const { requestHandler, signer } = emulators.inProcess;
    let reached: () => void = () => {};
    const handed = new Promise<void>((resolve) => {
      reached = resolve;
    });
    // Told when the request is handed to the server, so the abort comes while it waits there.
    const client = new SQSClient({
      ...sqsConfig(emulators.endpoints),
      signer,
      requestHandler: {
        ...requestHandler,
        handle: (request: HttpRequest, options?: HttpHandlerOptions) => {
          const answer = requestHandler.handle(request, options);
          reached();
          return answer;
        },
      },
    });
    clients.push(client);
    const { QueueUrl } = await sqs('in process').send(new CreateQueueCommand({ QueueName: 'long-poll' }));
    const abort = new AbortController();
    const started = Date.now();
    const receive = client.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 20 }), {
      abortSignal: abort.signal,
    });
    await handed;
    abort.abort();
    await assert.rejects(receive, { name: 'AbortError' });
    assert.ok(Date.now() - started < 10_000, 'the 20 s wait was not waited out');
  });

  it('a call to an origin no server here listens on fails with one line naming it, and reaches nothing', async () => {
    const client = new SQSClient({
      ...sqsConfig({ sqs: 'http://127.0.0.1:9', s3: 'http://127.0.0.1:9', dynamodb: 'http://127.0.0.1:9' }),
      ...emulators.inProcess,
      maxAttempts: 1,
    });
    clients.push(client);
    await assert.rejects(
      client.send(new CreateQueueCommand({ QueueName: 'nowhere' })),
      /in-process AWS: nothing serves http:\/\/127\.0\.0\.1:9 in this process/,
    );
  });

  it('the request guard still judges each request: one a web page could send is refused', async () => {
    const origin = new URL(emulators.endpoints.sqs);
    const request = {
      method: 'POST',
      protocol: 'http:',
      hostname: origin.hostname,
      port: Number(origin.port),
      path: '/',
      query: {},
      headers: {
        host: origin.host,
        origin: 'https://attacker.example',
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.ListQueues',
      },
      body: '{}',
    };
    const signed = await emulators.inProcess.signer.sign(request as never, {
      signingRegion: 'us-east-1',
      signingService: 'sqs',
    });
    const { response } = await emulators.inProcess.requestHandler.handle(signed);
    assert.equal(response.statusCode, 403);
    const text = await new Response(response.body as ReadableStream).text();
    assert.match(text, /AccessDenied/);
  });
});
