// provisionStack: the template's queues, bucket and table exist in the emulators with the template's
// settings (checked over the wire), and functions, mappings and outputs resolve from it alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, ListQueuesCommand } from '@aws-sdk/client-sqs';
import { createClients, destroyClients, endpointEnv } from '../../local/aws-clients.ts';
import { startEmulators } from '../../local/emulators.ts';
import { startLocalAws } from '../../local/local-aws.ts';
import { provisionStack, roleArn } from '../../local/provision.ts';
import {
  BUCKET,
  DLQ,
  FUNCTION,
  MAPPING,
  patchProperties,
  QUEUE,
  TABLE,
  testTemplate,
} from '../fixtures/local-template.ts';

async function emulatorsWithClients(t: { after: (fn: () => Promise<void>) => void }) {
  const emulators = await startEmulators();
  const clients = createClients(emulators.endpoints);
  t.after(async () => {
    destroyClients(clients);
    await emulators.stop();
  });
  return { emulators, clients };
}

describe('provisionStack', () => {
  it('creates queues (DLQ first), bucket and table with the template’s settings', async (t) => {
    const { clients } = await emulatorsWithClients(t);
    const stack = await provisionStack(testTemplate(), clients, { stackName: 'LocalTest', instanceId: 'i1' });

    const queue = stack.resources[QUEUE];
    const dlq = stack.resources[DLQ];
    assert.ok(queue?.url && dlq?.url && dlq.arn);
    const { Attributes: a = {} } = await clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['All'] }),
    );
    assert.equal(a.VisibilityTimeout, '2');
    assert.equal(a.MessageRetentionPeriod, '86400');
    assert.equal(a.ReceiveMessageWaitTimeSeconds, '0');
    // fauxqs reports SqsManagedSseEnabled=true even when unset, so this only shows it was accepted;
    // the template assertion in test/cdk is what proves the stack asks for it.
    assert.equal(a.SqsManagedSseEnabled, 'true');
    assert.ok(!stack.skipped.some((s) => s.note.includes('SSE')));
    assert.deepEqual(JSON.parse(a.RedrivePolicy ?? '{}'), {
      deadLetterTargetArn: dlq.arn,
      maxReceiveCount: 2,
    });
    const { Attributes: d = {} } = await clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlq.url, AttributeNames: ['MessageRetentionPeriod'] }),
    );
    assert.equal(d.MessageRetentionPeriod, '1209600');
    assert.match(queue.url, /\/LocalTest-WorkQueue1A2B3C4D-[A-Z2-7]{12}$/);

    const bucket = stack.resources[BUCKET]?.physicalId ?? '';
    assert.match(bucket, /^localtest-pagebucket9c8d7e6f-[a-z2-7]{12}$/);
    await clients.s3.send(new HeadBucketCommand({ Bucket: bucket }));

    const tableName = stack.resources[TABLE]?.physicalId ?? '';
    const { Table } = await clients.dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    assert.equal(Table?.TableStatus, 'ACTIVE');
    assert.equal(Table?.BillingModeSummary?.BillingMode, 'PAY_PER_REQUEST');
    assert.deepEqual(Table?.KeySchema, [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    assert.equal(stack.resources[TABLE]?.arn, Table?.TableArn);
  });

  it('resolves outputs, function env and the event source mapping from the template', async (t) => {
    const { clients } = await emulatorsWithClients(t);
    const stack = await provisionStack(testTemplate(), clients, { stackName: 'LocalTest', instanceId: 'i1' });
    const queue = stack.resources[QUEUE];
    const tableName = stack.resources[TABLE]?.physicalId;
    const bucket = stack.resources[BUCKET]?.physicalId;

    assert.deepEqual(stack.outputs, {
      TaskQueueUrl: queue?.url,
      TaskDlqUrl: stack.resources[DLQ]?.url,
      TaskDlqArn: stack.resources[DLQ]?.arn,
      PageBucketName: bucket,
      FrontierTableName: tableName,
      // A role is not created locally, but named as provisioning names it (a schedule passes it on).
      WorkerRoleArn: roleArn(stack, 'WorkerServiceRole5A6B7C8D'),
    });
    assert.match(
      String(stack.outputs.WorkerRoleArn),
      /^arn:aws:iam::000000000000:role\/LocalTest-WorkerServiceRole5A6B7C8D-[A-Z0-9]+$/,
    );

    const fn = stack.functions[FUNCTION];
    assert.ok(fn);
    assert.equal(fn.handlerModule, 'test/fixtures/local-handler.ts');
    assert.ok(fn.handlerPath.endsWith('/test/fixtures/local-handler.ts'));
    assert.equal(fn.timeoutSeconds, 1);
    assert.equal(fn.memorySizeMb, 256);
    assert.match(fn.functionName, /^LocalTest-Worker9E8F7A6B-[A-Z2-7]{12}$/);
    assert.deepEqual(fn.environment, {
      TASK_QUEUE_URL: queue?.url,
      TASK_QUEUE_ARN: queue?.arn,
      TASK_QUEUE_NAME: queue?.arn?.split(':').at(-1),
      PAGE_BUCKET: bucket,
      FRONTIER_TABLE: tableName,
      FRONTIER_TABLE_ARN: stack.resources[TABLE]?.arn,
      PAGES_PREFIX: `s3://${bucket}/pages/us-east-1`,
      WHERE: `aws:000000000000:${tableName}:\${Literal}`,
      MAX_PAGES: '50',
    });

    assert.deepEqual(
      { ...stack.eventSources[MAPPING], uuid: 'x' },
      {
        logicalId: MAPPING,
        uuid: 'x',
        functionLogicalId: FUNCTION,
        queueLogicalId: QUEUE,
        queueUrl: queue?.url,
        queueArn: queue?.arn,
        batchSize: 5,
        maximumBatchingWindowInSeconds: 1,
        maximumConcurrency: 2,
        reportBatchItemFailures: true,
        enabled: true,
      },
    );
  });

  it('lists what it ignored and the settings it could not apply', async (t) => {
    const { clients } = await emulatorsWithClients(t);
    const stack = await provisionStack(testTemplate(), clients, { stackName: 'LocalTest' });
    assert.deepEqual(stack.ignored.map((r) => `${r.logicalId}:${r.type}`).sort(), [
      'AutoDeleteProviderHandler1A2B3C4D:AWS::Lambda::Function',
      'PageBucketPolicy1F2E3D4C:AWS::S3::BucketPolicy',
      'WorkerLogGroup3E4F5A6B:AWS::Logs::LogGroup',
      'WorkerServiceRole5A6B7C8D:AWS::IAM::Role',
    ]);
    const notes = stack.skipped.map((s) => `${s.logicalId}: ${s.note}`);
    assert.ok(
      notes.some((n) =>
        /^FrontierTable0A1B2C3D: TimeToLiveSpecification \(expiresAt\) not applied: UnknownOperation/.test(n),
      ),
      notes.join('\n'),
    );
    assert.ok(
      notes.includes(
        'PageBucket9C8D7E6F: not applied locally: BucketEncryption, PublicAccessBlockConfiguration',
      ),
    );
    assert.ok(!notes.some((n) => n.startsWith('WorkerRoleArn:')), 'a role ARN output is named, not skipped');
  });

  it('re-provisions the same instance idempotently, a new instance side by side', async (t) => {
    const { clients } = await emulatorsWithClients(t);
    const first = await provisionStack(testTemplate(), clients, {
      stackName: 'LocalTest',
      instanceId: 'same',
    });
    const again = await provisionStack(testTemplate(), clients, {
      stackName: 'LocalTest',
      instanceId: 'same',
    });
    assert.deepEqual(again.outputs, first.outputs);
    const other = await provisionStack(testTemplate(), clients, {
      stackName: 'LocalTest',
      instanceId: 'other',
    });
    assert.notEqual(other.outputs.TaskQueueUrl, first.outputs.TaskQueueUrl);
    const { QueueUrls = [] } = await clients.sqs.send(new ListQueuesCommand({}));
    assert.equal(QueueUrls.length, 4);
  });

  it('fails like Lambda on a visibility timeout below the function timeout, and on a big batch without window', async (t) => {
    const { clients } = await emulatorsWithClients(t);
    await assert.rejects(
      provisionStack(patchProperties(testTemplate(), FUNCTION, { Timeout: 5 }), clients, { stackName: 'A' }),
      /queue visibility timeout 2 s is less than function Worker9E8F7A6B timeout 5 s/,
    );
    await assert.rejects(
      provisionStack(
        patchProperties(testTemplate(), MAPPING, { BatchSize: 20, MaximumBatchingWindowInSeconds: 0 }),
        clients,
        {
          stackName: 'B',
        },
      ),
      /BatchSize 20 > 10 needs MaximumBatchingWindowInSeconds > 0/,
    );
  });

  it('names an unsupported intrinsic in a function’s environment', async (t) => {
    const { clients } = await emulatorsWithClients(t);
    const template = patchProperties(testTemplate(), FUNCTION, {
      Environment: { Variables: { SHARED: { 'Fn::ImportValue': 'OtherStack:Thing' } } },
    });
    await assert.rejects(
      provisionStack(template, clients, { stackName: 'C' }),
      /Resources\.Worker9E8F7A6B\.Properties\.Environment\.Variables\.SHARED \(Fn::ImportValue\): intrinsic Fn::ImportValue is not supported/,
    );
  });
});

describe('startLocalAws with an endpoint', () => {
  it('provisions into an already-running endpoint and leaves it running on stop()', async (t) => {
    const { emulators, clients } = await emulatorsWithClients(t);
    const aws = await startLocalAws({
      template: testTemplate(),
      stackName: 'External',
      endpoint: emulators.endpoints,
      handlerEnvOverrides: { TEST_RUN_ID: 'external' },
    });
    assert.deepEqual(aws.endpoints, emulators.endpoints);
    assert.equal(aws.functionEnv[FUNCTION]?.AWS_ENDPOINT_URL_SQS, emulators.endpoints.sqs);
    await aws.stop();
    const { QueueUrls = [] } = await clients.sqs.send(new ListQueuesCommand({}));
    assert.ok(QueueUrls.includes(aws.outputs.TaskQueueUrl ?? ''));
  });

  it('takes one URL for all services', async (t) => {
    const { emulators } = await emulatorsWithClients(t);
    // fauxqs alone serves SQS and S3: drop the table and what refers to it.
    const template = testTemplate();
    delete template.Resources[TABLE];
    delete template.Outputs?.FrontierTableName;
    patchProperties(template, FUNCTION, { Environment: { Variables: { TASK_QUEUE_URL: { Ref: QUEUE } } } });
    const aws = await startLocalAws({ template, stackName: 'One', endpoint: `${emulators.endpoints.sqs}/` });
    t.after(() => aws.stop());
    assert.deepEqual(aws.endpoints, {
      sqs: emulators.endpoints.sqs,
      s3: emulators.endpoints.sqs,
      dynamodb: emulators.endpoints.sqs,
      events: emulators.endpoints.sqs,
      scheduler: emulators.endpoints.sqs,
      ssm: emulators.endpoints.sqs,
    });
    assert.deepEqual(aws.functionEnv[FUNCTION], {
      ...aws.functionEnv[FUNCTION],
      TASK_QUEUE_URL: aws.outputs.TaskQueueUrl,
      ...endpointEnv(aws.endpoints),
    });
  });
});
