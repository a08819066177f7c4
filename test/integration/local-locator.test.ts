// locateStack: read-only CLI commands find "the AWS" a crawl ran on - a deployed stack (CloudFormation
// outputs), a running endpoint (names computed, looked up, nothing created), or the embedded AWS on a
// state dir (started on it, or read through the live process that holds it).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GetItemCommand, ListTablesCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, ListBucketsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { ListQueuesCommand } from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { OUTPUTS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { createClients, destroyClients } from '../../local/aws-clients.ts';
import { startEmulators } from '../../local/emulators.ts';
import { startLocalAws } from '../../local/local-aws.ts';
import { locateStack } from '../../local/stack-locator.ts';
import { LOCAL_INSTANCE_ID, NoLocalStateError, stateLayout } from '../../local/state-dir.ts';
import { readStateLock, StateLockedError } from '../../local/state-lock.ts';
import { liveProcess, tempDir, tempStateDir } from '../fixtures/local-state.ts';
import { testTemplate } from '../fixtures/local-template.ts';

const STACK = 'LocalTest';
const ITEM_KEY = { pk: { S: 'crawl#c1' }, sk: { S: 'config' } };

/** A state dir with one S3 object and one DynamoDB item in it, left by a finished process. */
async function stateWithData(t: { after(fn: () => Promise<void>): void }) {
  const stateDir = await tempStateDir(t);
  const local = await startLocalAws({ template: testTemplate(), stackName: STACK, stateDir });
  try {
    await putData(local.clients, local.outputs);
  } finally {
    await local.stop();
  }
  return { stateDir, outputs: local.outputs };
}

async function putData(
  clients: ReturnType<typeof createClients>,
  outputs: Record<string, string>,
): Promise<void> {
  await clients.s3.send(new PutObjectCommand({ Bucket: outputs.PageBucketName, Key: 'k', Body: 'page' }));
  await clients.dynamodb.send(
    new PutItemCommand({ TableName: outputs.FrontierTableName, Item: { ...ITEM_KEY, n: { N: '1' } } }),
  );
}

async function readData(clients: ReturnType<typeof createClients>, outputs: Record<string, string>) {
  const object = await clients.s3.send(new GetObjectCommand({ Bucket: outputs.PageBucketName, Key: 'k' }));
  const { Item } = await clients.dynamodb.send(
    new GetItemCommand({ TableName: outputs.FrontierTableName, Key: ITEM_KEY }),
  );
  return { body: await object.Body?.transformToString(), n: Item?.n?.N };
}

function names(outputs: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(outputs).map(([k, v]) => [k, v.startsWith('http') ? new URL(v).pathname : v]),
  );
}

describe('locateStack: embedded AWS on a state dir', () => {
  it('fails clearly when there is no state', async (t) => {
    const parent = await tempDir(t);
    const missing = join(parent, 'nope');
    const expected = `no local crawl state in ${missing}; run \`crawler crawl\` first or pass --endpoint/--stack`;
    await assert.rejects(locateStack({ stateDir: missing, template: testTemplate() }), (err: unknown) => {
      assert.ok(err instanceof NoLocalStateError);
      assert.equal(err.message, expected);
      return true;
    });
    assert.ok(!existsSync(missing), 'nothing created');
    // An empty (or foreign) directory is no state either.
    await mkdir(missing);
    await assert.rejects(locateStack({ stateDir: missing, template: testTemplate() }), NoLocalStateError);
  });

  it('starts the emulators on the persisted state (no pollers) and stops them on close', async (t) => {
    const { stateDir, outputs } = await stateWithData(t);
    const located = await locateStack({ stateDir, template: testTemplate() });
    try {
      assert.equal(located.mode, 'embedded');
      assert.deepEqual(names(located.outputs), names(outputs));
      assert.deepEqual(await readData(located.clients, located.outputs), { body: 'page', n: '1' });
      assert.equal(readStateLock(stateDir)?.pid, process.pid, 'holds the lock while open');
    } finally {
      await located.close();
      await located.close(); // idempotent
    }
    assert.equal(readStateLock(stateDir), undefined);
  });

  it('reads through the emulators of a live process holding the state (a running crawl)', async (t) => {
    const stateDir = await tempStateDir(t);
    const crawl = await startLocalAws({ template: testTemplate(), stackName: STACK, stateDir });
    t.after(() => crawl.stop());
    await putData(crawl.clients, crawl.outputs);

    const located = await locateStack({ stateDir, template: testTemplate() });
    try {
      assert.equal(located.mode, 'attached');
      assert.match(located.description, new RegExp(`process ${process.pid}`));
      assert.deepEqual(located.outputs, crawl.outputs);
      assert.deepEqual(await readData(located.clients, located.outputs), { body: 'page', n: '1' });
    } finally {
      await located.close();
    }
    // Closing the reader leaves the holder running.
    assert.equal(readStateLock(stateDir)?.pid, process.pid);
    await crawl.clients.s3.send(new ListBucketsCommand({}));
  });

  it('names the live holder when it publishes no endpoints', async (t) => {
    const { stateDir } = await stateWithData(t);
    const pid = await liveProcess(t);
    await writeFile(stateLayout(stateDir).lockFile, `${pid}\n`);
    await assert.rejects(locateStack({ stateDir, template: testTemplate() }), (err: unknown) => {
      assert.ok(err instanceof StateLockedError);
      assert.match(err.message, new RegExp(`in use by process ${pid} `));
      return true;
    });
  });
});

describe('locateStack: endpoint', () => {
  it('computes the outputs of the stack provisioned there under instance id local, creating nothing', async (t) => {
    const server = await startLocalAws({
      template: testTemplate(),
      stackName: STACK,
      instanceId: LOCAL_INSTANCE_ID,
      port: 0,
    });
    t.after(() => server.stop());
    const endpoint = server.endpoints.sqs;
    const before = await inventory(server.clients);

    const stateDir = join(await tempDir(t), 'unused');
    const located = await locateStack({
      endpoint,
      stateDir,
      template: testTemplate(),
      localStackName: STACK,
    });
    try {
      assert.equal(located.mode, 'endpoint');
      assert.deepEqual(located.outputs, server.outputs);
      await putData(located.clients, located.outputs);
      assert.deepEqual(await readData(server.clients, server.outputs), { body: 'page', n: '1' });
    } finally {
      await located.close();
    }
    assert.deepEqual(await inventory(server.clients), before);
    assert.ok(!existsSync(stateDir));
  });

  it('says what is missing when the stack is not provisioned at the endpoint', async (t) => {
    const emulators = await startEmulators({ port: 0 });
    t.after(() => emulators.stop());
    const clients = createClients(emulators.endpoints);
    t.after(async () => destroyClients(clients));
    const stateDir = join(await tempDir(t), 'unused');
    await assert.rejects(
      locateStack({
        endpoint: emulators.endpoints.sqs,
        stateDir,
        template: testTemplate(),
        localStackName: STACK,
      }),
      /local stack LocalTest at http:\/\/127\.0\.0\.1:\d+: not provisioned \(instance id local\): .*does not exist; run `crawler local`/,
    );
    assert.deepEqual(await inventory(clients), { queues: [], buckets: [], tables: [] }, 'created nothing');
  });

  it('uses the synthesized stack and its name by default', async (t) => {
    const server = await startLocalAws({
      template: synthesizeTemplate(),
      stackName: STACK_NAME,
      instanceId: LOCAL_INSTANCE_ID,
      port: 0,
    });
    t.after(() => server.stop());
    const located = await locateStack({ endpoint: server.endpoints.sqs, stateDir: '/nonexistent' });
    try {
      assert.deepEqual(located.outputs, server.outputs);
      for (const key of Object.values(OUTPUTS)) assert.ok(located.outputs[key], `output ${key}`);
    } finally {
      await located.close();
    }
  });
});

describe('locateStack: deployed stack', () => {
  it('takes the outputs from CloudFormation and clients from the default AWS config', async (t) => {
    const saved = { region: process.env.AWS_REGION };
    process.env.AWS_REGION = 'eu-west-3';
    t.after(() => {
      if (saved.region === undefined) delete process.env.AWS_REGION;
      else process.env.AWS_REGION = saved.region;
    });
    const asked: string[] = [];
    const deployed = {
      TaskQueueUrl: 'https://sqs.eu-west-3.amazonaws.com/123456789012/ServerlessCrawler-TaskQueue-AbC',
      PageBucketName: 'serverlesscrawler-pagestore-abc',
      FrontierTableName: 'ServerlessCrawler-FrontierTable-XYZ',
    };
    const located = await locateStack({
      stateDir: '/nonexistent',
      stackName: 'MyCrawler',
      describeStackOutputs: async (name) => {
        asked.push(name);
        return deployed;
      },
    });
    try {
      assert.equal(located.mode, 'deployed');
      assert.deepEqual(asked, ['MyCrawler']);
      assert.deepEqual(located.outputs, deployed);
      assert.equal(await located.clients.sqs.config.region(), 'eu-west-3');
      assert.equal(await located.clients.dynamodb.config.region(), 'eu-west-3');
      assert.equal(located.clients.s3.config.forcePathStyle, false);
    } finally {
      await located.close();
    }
  });

  it('needs describeStackOutputs for a stack name', async () => {
    await assert.rejects(
      locateStack({ stateDir: '/nonexistent', stackName: 'MyCrawler' }),
      /describeStackOutputs/,
    );
  });
});

async function inventory(clients: ReturnType<typeof createClients>) {
  const queues = (await clients.sqs.send(new ListQueuesCommand({}))).QueueUrls ?? [];
  const buckets = ((await clients.s3.send(new ListBucketsCommand({}))).Buckets ?? []).map((b) => b.Name);
  const tables = (await clients.dynamodb.send(new ListTablesCommand({}))).TableNames ?? [];
  return {
    queues: queues.map((q) => new URL(q).pathname).sort(),
    buckets: buckets.sort(),
    tables: tables.sort(),
  };
}
