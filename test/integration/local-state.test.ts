// The embedded AWS keeps its state on disk between processes (startLocalAws({ stateDir })): S3 objects,
// DynamoDB items and queued messages survive a restart, names stay the same, provisioning reuses what
// exists, and a lock file keeps a second process out.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { createClients, destroyClients } from '../../local/aws-clients.ts';
import { startEmulators } from '../../local/emulators.ts';
import { type LocalAws, type LocalAwsOptions, startLocalAws } from '../../local/local-aws.ts';
import { provisionStack } from '../../local/provision.ts';
import {
  DEFAULT_STATE_DIR,
  LOCAL_INSTANCE_ID,
  readStateMarker,
  resolveStateDir,
  STATE_DIR_ENV,
  stateLayout,
} from '../../local/state-dir.ts';
import { acquireStateLock, readStateLock, StateLockedError } from '../../local/state-lock.ts';
import { deadPid, liveProcess, tempStateDir } from '../fixtures/local-state.ts';
import { DLQ, patchProperties, QUEUE, TABLE, testTemplate } from '../fixtures/local-template.ts';

const STACK = 'LocalTest';

function start(stateDir: string, extra: Partial<LocalAwsOptions> = {}): Promise<LocalAws> {
  return startLocalAws({ template: testTemplate(), stackName: STACK, stateDir, ...extra });
}

/** Outputs without the per-run port in queue URLs: what must stay the same across restarts. */
function stableOutputs(outputs: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(outputs).map(([key, value]) => [
      key,
      value.startsWith('http') ? new URL(value).pathname : value,
    ]),
  );
}

describe('startLocalAws({ stateDir })', () => {
  it('keeps S3 objects, DynamoDB items and queued messages across a restart, with the same names', async (t) => {
    const stateDir = await tempStateDir(t);
    const first = await start(stateDir);
    let outputs = first.outputs;
    // Drawn at random for this dir (names no web page can guess), and kept in it.
    const instanceId = first.stack.instanceId;
    try {
      assert.match(instanceId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.equal((await readFile(stateLayout(stateDir).instanceIdFile, 'utf8')).trim(), instanceId);
      assert.equal(first.stateDir, stateDir);
      const { s3, dynamodb, sqs } = first.clients;
      await s3.send(
        new PutObjectCommand({ Bucket: outputs.PageBucketName, Key: 'warc/c1/a.warc.gz', Body: 'WARC' }),
      );
      await dynamodb.send(
        new PutItemCommand({
          TableName: outputs.FrontierTableName,
          Item: { pk: { S: 'crawl#c1' }, sk: { S: 'config' }, pages: { N: '7' } },
        }),
      );
      await sqs.send(new SendMessageCommand({ QueueUrl: outputs.TaskDlqUrl, MessageBody: 'poison' }));
      await sqs.send(new SendMessageCommand({ QueueUrl: outputs.TaskQueueUrl, MessageBody: 'pending' }));
    } finally {
      await first.stop();
    }

    const layout = stateLayout(stateDir);
    assert.ok(!existsSync(layout.lockFile), 'stop() releases the lock');
    assert.ok(existsSync(join(layout.dynamodbDir, 'CURRENT')), 'LevelDB under dynamodb/');
    assert.ok(existsSync(join(layout.sqsDir, 'fauxqs.db')), 'SQLite under sqs/');
    const objectFile = join(
      layout.s3Dir,
      'buckets',
      outputs.PageBucketName ?? '',
      'objects/warc/c1/a.warc.gz.data',
    );
    assert.equal(await readFile(objectFile, 'utf8'), 'WARC', 'objects are plain files under s3/');
    assert.equal(await readFile(join(stateDir, '.gitignore'), 'utf8'), '*\n');
    assert.deepEqual(readStateMarker(stateDir), {
      format: 1,
      stackName: STACK,
      instanceId,
      createdAt: readStateMarker(stateDir)?.createdAt,
      storage: { PageBucketName: outputs.PageBucketName, FrontierTableName: outputs.FrontierTableName },
    });

    const second = await start(stateDir);
    try {
      assert.equal(second.stack.instanceId, instanceId);
      assert.deepEqual(stableOutputs(second.outputs), stableOutputs(outputs));
      outputs = second.outputs;
      // Queues loaded from disk are addressed at this run's port, which clients and handlers use.
      assert.equal(new URL(outputs.TaskQueueUrl ?? '').host, new URL(second.endpoints.sqs).host);
      const { s3, dynamodb, sqs } = second.clients;
      const object = await s3.send(
        new GetObjectCommand({ Bucket: outputs.PageBucketName, Key: 'warc/c1/a.warc.gz' }),
      );
      assert.equal(await object.Body?.transformToString(), 'WARC');
      const { Item } = await dynamodb.send(
        new GetItemCommand({
          TableName: outputs.FrontierTableName,
          Key: { pk: { S: 'crawl#c1' }, sk: { S: 'config' } },
        }),
      );
      assert.equal(Item?.pages?.N, '7');
      const dlq = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: outputs.TaskDlqUrl, WaitTimeSeconds: 1 }),
      );
      assert.equal(dlq.Messages?.[0]?.Body, 'poison', 'DLQ contents are kept for inspection');
      const pending = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: outputs.TaskQueueUrl, WaitTimeSeconds: 1 }),
      );
      assert.equal(pending.Messages?.[0]?.Body, 'pending', 'queued tasks survive');
      // The redrive policy still points at the (same) DLQ.
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: outputs.TaskQueueUrl, AttributeNames: ['RedrivePolicy'] }),
      );
      assert.equal(JSON.parse(Attributes?.RedrivePolicy ?? '{}').deadLetterTargetArn, outputs.TaskDlqArn);
    } finally {
      await second.stop();
    }
  });

  it('serves persisted queues through the one-port router at its new port', async (t) => {
    const stateDir = await tempStateDir(t);
    const first = await start(stateDir, { port: 0 });
    try {
      await first.clients.sqs.send(
        new SendMessageCommand({ QueueUrl: first.outputs.TaskQueueUrl, MessageBody: 'via router' }),
      );
    } finally {
      await first.stop();
    }
    const second = await start(stateDir, { port: 0 });
    try {
      const url = second.outputs.TaskQueueUrl ?? '';
      assert.equal(new URL(url).origin, second.endpoints.sqs);
      const got = await second.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 1 }),
      );
      assert.equal(got.Messages?.[0]?.Body, 'via router');
    } finally {
      await second.stop();
    }
  });

  it('refuses a stateDir together with an endpoint or an s3Dir', async () => {
    await assert.rejects(
      start('/nonexistent', { endpoint: 'http://127.0.0.1:1' }),
      /embedded emulators only/,
    );
    await assert.rejects(start('/nonexistent', { s3Dir: '/tmp/x' }), /not both/);
  });
});

describe('state lock', () => {
  it('a second start on a state dir in use fails, naming the holder’s pid; the first keeps working', async (t) => {
    const stateDir = await tempStateDir(t);
    const first = await start(stateDir);
    t.after(() => first.stop());
    const holder = readStateLock(stateDir);
    assert.equal(holder?.pid, process.pid);
    assert.deepEqual(holder?.endpoints, first.endpoints, 'the holder publishes its endpoints');
    await assert.rejects(start(stateDir), (err: unknown) => {
      assert.ok(err instanceof StateLockedError);
      assert.match(err.message, new RegExp(`in use by this process \\(pid ${process.pid}\\)`));
      assert.ok(err.message.includes(stateDir));
      return true;
    });
    // The failed start neither stole nor removed the lock.
    assert.equal(readStateLock(stateDir)?.token, holder?.token);
    await first.clients.s3.send(
      new PutObjectCommand({ Bucket: first.outputs.PageBucketName, Key: 'still-alive', Body: 'yes' }),
    );
  });

  it('names another live process holding the lock, and touches nothing', async (t) => {
    const stateDir = await tempStateDir(t);
    const pid = await liveProcess(t);
    const layout = stateLayout(stateDir);
    await mkdir(stateDir, { recursive: true });
    await writeFile(layout.lockFile, `${pid}\n`); // a bare pid is understood too
    await assert.rejects(start(stateDir), new RegExp(`in use by process ${pid} `));
    assert.ok(!existsSync(layout.dynamodbDir), 'no emulator opened the state');
    assert.equal(await readFile(layout.lockFile, 'utf8'), `${pid}\n`);
  });

  it('takes over a stale lock (its process is gone) and releases it on stop', async (t) => {
    const stateDir = await tempStateDir(t);
    const pid = await deadPid();
    await mkdir(stateDir, { recursive: true });
    const layout = stateLayout(stateDir);
    await writeFile(layout.lockFile, JSON.stringify({ pid, host: 'x', startedAt: 'then', token: 't' }));
    // Another host's lock cannot be judged: it counts as live.
    await assert.rejects(start(stateDir), /in use by process \d+ on x /);
    await writeFile(layout.lockFile, `${pid}\n`);
    const local = await start(stateDir);
    assert.equal(readStateLock(stateDir)?.pid, process.pid);
    await local.stop();
    assert.ok(!existsSync(layout.lockFile));
  });

  it('lets exactly one of two concurrent takers win, also over a stale lock', async (t) => {
    const stateDir = await tempStateDir(t);
    for (const stale of [false, true]) {
      if (stale) {
        await mkdir(stateDir, { recursive: true });
        await writeFile(stateLayout(stateDir).lockFile, `${await deadPid()}\n`);
      }
      const results = await Promise.allSettled([acquireStateLock(stateDir), acquireStateLock(stateDir)]);
      const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      assert.equal(won.length, 1, `stale=${stale}`);
      assert.ok(lost[0] instanceof StateLockedError);
      assert.equal(readStateLock(stateDir)?.token, won[0]?.holder().token);
      await won[0]?.release();
      assert.equal(readStateLock(stateDir), undefined);
    }
  });
});

describe('idempotent provisioning (instance id local)', () => {
  it('provisions the same names twice without error, and updates a kept queue to the template', async (t) => {
    const emulators = await startEmulators();
    const clients = createClients(emulators.endpoints);
    t.after(async () => {
      destroyClients(clients);
      await emulators.stop();
    });
    const options = { stackName: STACK, instanceId: LOCAL_INSTANCE_ID };
    const one = await provisionStack(testTemplate(), clients, options);
    const two = await provisionStack(testTemplate(), clients, options);
    assert.deepEqual(two.outputs, one.outputs);
    assert.deepEqual(
      Object.keys(two.resources).map((id) => two.resources[id]?.physicalId),
      Object.keys(one.resources).map((id) => one.resources[id]?.physicalId),
    );

    // A newer template with another visibility timeout: the queue is kept and updated, like a stack update.
    const changed = patchProperties(testTemplate(), QUEUE, { VisibilityTimeout: 45 });
    const three = await provisionStack(changed, clients, options);
    assert.equal(three.outputs.TaskQueueUrl, one.outputs.TaskQueueUrl);
    assert.equal(three.resources[QUEUE]?.attributes?.VisibilityTimeout, '45');
    assert.ok(three.skipped.some((s) => s.logicalId === QUEUE && s.note.includes('attributes updated')));
    assert.equal(three.resources[DLQ]?.url, one.resources[DLQ]?.url);

    // A table whose keys changed cannot be kept: a clear error rather than silently wrong items.
    const rekeyed = patchProperties(testTemplate(), TABLE, {
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    });
    await assert.rejects(provisionStack(rekeyed, clients, options), /already exists with keys.*incompatible/);
  });
});

describe('resolveStateDir', () => {
  it('takes an explicit dir, else $CRAWLER_STATE_DIR, else .crawler in cwd', () => {
    assert.equal(DEFAULT_STATE_DIR, '.crawler');
    assert.equal(STATE_DIR_ENV, 'CRAWLER_STATE_DIR');
    assert.equal(resolveStateDir(undefined, {}, '/work/x'), '/work/x/.crawler');
    assert.equal(resolveStateDir(undefined, { CRAWLER_STATE_DIR: 'st' }, '/work/x'), '/work/x/st');
    assert.equal(resolveStateDir(undefined, { CRAWLER_STATE_DIR: '/abs' }, '/work/x'), '/abs');
    assert.equal(resolveStateDir('flag', { CRAWLER_STATE_DIR: '/abs' }, '/work/x'), '/work/x/flag');
    assert.equal(resolveStateDir(undefined, { CRAWLER_STATE_DIR: '' }, '/work/x'), '/work/x/.crawler');
  });
});
