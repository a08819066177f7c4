// The embedded AWS: fauxqs (SQS + S3) and dynalite (DynamoDB) on loopback, over the real wire protocol.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import {
  createClients,
  destroyClients,
  endpointEnv,
  endpointsFromUrl,
  s3Config,
} from '../../local/aws-clients.ts';
import { startEmulators } from '../../local/emulators.ts';
import { waitFor } from '../fixtures/wait-for.ts';

describe('startEmulators', () => {
  it('serves SQS, path-style S3 and DynamoDB on 127.0.0.1', async (t) => {
    const emulators = await startEmulators();
    const clients = createClients(emulators.endpoints);
    t.after(async () => {
      destroyClients(clients);
      await emulators.stop();
    });
    for (const url of Object.values(emulators.endpoints)) assert.equal(new URL(url).hostname, '127.0.0.1');
    assert.equal(emulators.endpoints.sqs, emulators.endpoints.s3);

    const { QueueUrl } = await clients.sqs.send(new CreateQueueCommand({ QueueName: 'q1' }));
    // Queue URLs carry the endpoint's own host: an SDK client configured only through
    // AWS_ENDPOINT_URL_SQS sends to the QueueUrl's host, and sqs.<region>.localhost does not resolve.
    assert.equal(new URL(QueueUrl ?? '').host, new URL(emulators.endpoints.sqs).host);
    await clients.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'hi' }));
    const got = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    assert.equal(got.Messages?.[0]?.Body, 'hi');

    assert.equal(s3Config(emulators.endpoints).forcePathStyle, true);
    await clients.s3.send(new CreateBucketCommand({ Bucket: 'pages' }));
    await clients.s3.send(new PutObjectCommand({ Bucket: 'pages', Key: 'a/b.txt', Body: 'body' }));
    const object = await clients.s3.send(new GetObjectCommand({ Bucket: 'pages', Key: 'a/b.txt' }));
    assert.equal(await object.Body?.transformToString(), 'body');

    await clients.dynamodb.send(
      new CreateTableCommand({
        TableName: 'frontier',
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      }),
    );
    // Like DynamoDB, dynalite answers CREATING first, then ACTIVE.
    const status = await waitFor(
      async () => {
        const table = await clients.dynamodb.send(new DescribeTableCommand({ TableName: 'frontier' }));
        return table.Table?.TableStatus === 'ACTIVE' ? table.Table.TableStatus : undefined;
      },
      { what: 'the table to become ACTIVE', timeoutMs: 30_000, intervalMs: 5 },
    );
    assert.equal(status, 'ACTIVE');
  });

  it('keeps S3 objects as files under s3Dir, across restarts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'local-s3-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const first = await startEmulators({ s3Dir: dir });
    let clients = createClients(first.endpoints);
    await clients.s3.send(new CreateBucketCommand({ Bucket: 'pages' }));
    await clients.s3.send(new PutObjectCommand({ Bucket: 'pages', Key: 'warc/1.warc.gz', Body: 'WARC' }));
    destroyClients(clients);
    await first.stop();
    assert.equal(await readFile(join(dir, 'buckets/pages/objects/warc/1.warc.gz.data'), 'utf8'), 'WARC');

    const second = await startEmulators({ s3Dir: dir });
    clients = createClients(second.endpoints);
    const object = await clients.s3.send(new GetObjectCommand({ Bucket: 'pages', Key: 'warc/1.warc.gz' }));
    assert.equal(await object.Body?.transformToString(), 'WARC');
    destroyClients(clients);
    await second.stop();
    assert.ok(existsSync(join(dir, 'buckets/pages/.bucket.json')));
  });

  it('serves all services on one port when asked (like LocalStack)', async (t) => {
    const emulators = await startEmulators({ port: 0 });
    const clients = createClients(emulators.endpoints);
    t.after(async () => {
      destroyClients(clients);
      await emulators.stop();
    });
    const { sqs, s3, dynamodb } = emulators.endpoints;
    assert.ok(sqs === s3 && s3 === dynamodb);
    assert.equal(new URL(sqs).hostname, '127.0.0.1');

    const { QueueUrl } = await clients.sqs.send(new CreateQueueCommand({ QueueName: 'q1' }));
    assert.equal(new URL(QueueUrl ?? '').host, new URL(sqs).host);
    await clients.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'via router' }));
    const got = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    assert.equal(got.Messages?.[0]?.Body, 'via router');

    // Big enough for the SDK's Expect: 100-continue, streamed through both ways.
    const big = Buffer.alloc(3 * 1024 * 1024, 'x');
    await clients.s3.send(new CreateBucketCommand({ Bucket: 'pages' }));
    await clients.s3.send(new PutObjectCommand({ Bucket: 'pages', Key: 'big', Body: big }));
    const object = await clients.s3.send(new GetObjectCommand({ Bucket: 'pages', Key: 'big' }));
    assert.equal(Buffer.compare(Buffer.from((await object.Body?.transformToByteArray()) ?? []), big), 0);

    await clients.dynamodb.send(
      new CreateTableCommand({
        TableName: 'frontier',
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      }),
    );
    const table = await clients.dynamodb.send(new DescribeTableCommand({ TableName: 'frontier' }));
    assert.equal(table.Table?.TableName, 'frontier');
  });

  it('stop() frees the ports', async () => {
    const emulators = await startEmulators();
    const clients = createClients(emulators.endpoints, {
      region: 'us-east-1',
      accessKeyId: 'a',
      secretAccessKey: 'b',
      maxAttempts: 1,
    });
    await clients.sqs.send(new ListQueuesCommand({}));
    await emulators.stop();
    await assert.rejects(clients.sqs.send(new ListQueuesCommand({})), /ECONNREFUSED|socket|connect/i);
    destroyClients(clients);
  });
});

describe('aws-clients', () => {
  it('gives handlers the env the SDK honours, plus the path-style flag', () => {
    const env = endpointEnv(endpointsFromUrl('http://127.0.0.1:4566/ignored/path'));
    assert.deepEqual(env, {
      AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566',
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4566',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:4566',
      AWS_ENDPOINT_URL_EVENTBRIDGE: 'http://127.0.0.1:4566',
      AWS_ENDPOINT_URL_SSM: 'http://127.0.0.1:4566',
      AWS_REGION: 'us-east-1',
      AWS_DEFAULT_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ACCOUNT_ID: '000000000000',
      AWS_S3_FORCE_PATH_STYLE: 'true',
    });
  });

  it('leaves EventBridge out of endpoints that have none (handlers then publish no events)', () => {
    const env = endpointEnv({
      sqs: 'http://127.0.0.1:1',
      s3: 'http://127.0.0.1:1',
      dynamodb: 'http://127.0.0.1:2',
    });
    assert.equal(env.AWS_ENDPOINT_URL_EVENTBRIDGE, undefined);
    assert.equal(env.AWS_ENDPOINT_URL_SSM, undefined, 'nor SSM: crawls with credentials cannot run there');
  });
});
