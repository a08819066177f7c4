// Template assertions for the resources' settings. Emulators are not AWS: each queue/bucket/table
// setting the local runtime cannot enforce is pinned here against the template that deploys.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { Template } from 'aws-cdk-lib/assertions';
import { ACCOUNT_CHECK_ID } from '../../cdk/account-concurrency.ts';
import { createCrawlerApp } from '../../cdk/crawler-app.ts';
import {
  AGGREGATE_EVENT_SOURCE,
  AGGREGATE_FUNCTION,
  FETCH_EVENT_SOURCE,
  FETCH_FUNCTION,
  LOGS,
  QUEUE,
  RENDER_EVENT_SOURCE,
  RENDER_FUNCTION,
} from '../../cdk/limits.ts';
import { MONITORING_IDS } from '../../cdk/monitoring.ts';
import { REPO_ROOT } from '../../cdk/paths.ts';
import { synthesizeStack } from '../../cdk/synth.ts';
import { AWS_LIMITS } from '../../lambdas/core/base/index.ts';
import {
  credentialsPrefix,
  DEFAULT_EVENT_BUS,
  HANDLER_METADATA_KEY,
  HANDLERS,
  IDS,
  OUTPUTS,
  STACK_NAME,
} from '../../lambdas/shared/contracts.ts';
import {
  type CfnResource,
  getAttTarget,
  isRecord,
  ofType,
  refTarget,
  resource,
  resourcesOf,
  resourceTargets,
  statementsOfRole,
} from './template.ts';

let template: Template;
let json: Record<string, unknown>;

before(() => {
  const { stack } = synthesizeStack();
  assert.equal(stack.stackName, STACK_NAME);
  template = Template.fromStack(stack);
  json = template.toJSON();
});

const QUEUES = [
  { queue: IDS.taskQueue, dlq: IDS.taskDlq, consumer: IDS.fetchFunction },
  { queue: IDS.resultsQueue, dlq: IDS.resultsDlq, consumer: IDS.aggregateFunction },
  { queue: IDS.renderQueue, dlq: IDS.renderDlq, consumer: IDS.renderFunction },
] as const;

const FUNCTIONS = [
  {
    id: IDS.fetchFunction,
    handler: HANDLERS.fetch,
    fn: FETCH_FUNCTION,
    source: FETCH_EVENT_SOURCE,
    queue: IDS.taskQueue,
  },
  {
    id: IDS.aggregateFunction,
    handler: HANDLERS.aggregate,
    fn: AGGREGATE_FUNCTION,
    source: AGGREGATE_EVENT_SOURCE,
    queue: IDS.resultsQueue,
  },
  {
    id: IDS.renderFunction,
    handler: HANDLERS.render,
    fn: RENDER_FUNCTION,
    source: RENDER_EVENT_SOURCE,
    queue: IDS.renderQueue,
  },
] as const;

/** @sparticuz/chromium is built for x86_64 only; the other functions run on arm64. */
const ARCHITECTURE: Record<string, string> = { [IDS.renderFunction]: 'x86_64' };

/** The one event source mapping of a function. */
function mappingOf(functionId: string): CfnResource {
  const mappings = ofType(json, 'AWS::Lambda::EventSourceMapping').filter(
    ([, m]) => refTarget(m.Properties.FunctionName) === functionId,
  );
  assert.equal(mappings.length, 1, `${functionId} has exactly one event source mapping`);
  return mappings[0]![1];
}

/** TLS-only resource policy: a Deny of everything when aws:SecureTransport is false. */
function deniesInsecureTransport(document: unknown): boolean {
  if (!isRecord(document) || !Array.isArray(document.Statement)) return false;
  return document.Statement.some(
    (s: unknown) =>
      isRecord(s) &&
      s.Effect === 'Deny' &&
      isRecord(s.Condition) &&
      isRecord(s.Condition.Bool) &&
      s.Condition.Bool['aws:SecureTransport'] === 'false' &&
      isRecord(s.Principal) &&
      s.Principal.AWS === '*',
  );
}

describe('queues', () => {
  for (const { queue, dlq, consumer } of QUEUES) {
    it(`${queue} redrives to ${dlq} after maxReceiveCount >= 5`, () => {
      const q = resource(json, queue, 'AWS::SQS::Queue');
      const redrive = q.Properties.RedrivePolicy;
      assert.ok(isRecord(redrive));
      assert.equal(getAttTarget(redrive.deadLetterTargetArn), dlq);
      assert.equal(redrive.maxReceiveCount, QUEUE.maxReceiveCount);
      assert.ok(Number(redrive.maxReceiveCount) >= 5);
    });

    it(`${queue} visibility timeout >= 6x (${consumer} timeout + batching window), from the template`, () => {
      const q = resource(json, queue, 'AWS::SQS::Queue');
      const fn = resource(json, consumer, 'AWS::Lambda::Function');
      const mapping = mappingOf(consumer);
      assert.equal(getAttTarget(mapping.Properties.EventSourceArn), queue, `${consumer} consumes ${queue}`);
      const timeout = Number(fn.Properties.Timeout);
      const window = Number(mapping.Properties.MaximumBatchingWindowInSeconds ?? 0);
      assert.ok(timeout > 0);
      assert.ok(
        Number(q.Properties.VisibilityTimeout) >= 6 * (timeout + window),
        `${q.Properties.VisibilityTimeout} >= 6 x (${timeout} + ${window})`,
      );
    });

    for (const id of [queue, dlq]) {
      it(`${id} is a standard queue with SQS-managed SSE, a TLS-only policy and explicit size/retention`, () => {
        const q = resource(json, id, 'AWS::SQS::Queue');
        assert.equal(q.Properties.SqsManagedSseEnabled, true);
        assert.equal(q.Properties.KmsMasterKeyId, undefined);
        assert.equal(q.Properties.FifoQueue, undefined);
        assert.equal(q.Properties.QueueName, undefined, 'no physical name');
        assert.equal(q.Properties.MaximumMessageSize, QUEUE.maxMessageSizeBytes);
        // What the senders pack a message to (a flush's results, lambdas/core/results/result-message.ts) fits.
        assert.ok(Number(q.Properties.MaximumMessageSize) >= AWS_LIMITS.sqsMaxMessageBytes);
        const days = id === dlq ? QUEUE.dlqRetentionDays : QUEUE.retentionDays;
        assert.equal(q.Properties.MessageRetentionPeriod, days * 86_400);
        const policies = ofType(json, 'AWS::SQS::QueuePolicy').filter(([, p]) =>
          [p.Properties.Queues ?? []].flat().some((r) => refTarget(r) === id),
        );
        assert.ok(
          policies.some(([, p]) => deniesInsecureTransport(p.Properties.PolicyDocument)),
          `${id} denies non-TLS access`,
        );
      });
    }
  }

  it('DLQs keep messages at least as long as their source queues', () => {
    assert.ok(QUEUE.dlqRetentionDays >= QUEUE.retentionDays);
  });

  it("every queue keeps messages for SQS's maximum, 14 days: a crawl's messages outlive a stall of days", () => {
    for (const [id, q] of ofType(json, 'AWS::SQS::Queue'))
      assert.equal(q.Properties.MessageRetentionPeriod, 14 * 86_400, `${id} retention`);
  });
});

describe('page store bucket', () => {
  it('is S3-managed encrypted, blocks all public access, and has no physical name', () => {
    const bucket = resource(json, IDS.pageStore, 'AWS::S3::Bucket');
    assert.equal(bucket.Properties.BucketName, undefined);
    assert.deepEqual(bucket.Properties.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    assert.deepEqual(bucket.Properties.BucketEncryption, {
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    assert.deepEqual(bucket.Properties.OwnershipControls, {
      Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }],
    });
  });

  it('has a bucket policy that denies non-TLS requests', () => {
    const policies = ofType(json, 'AWS::S3::BucketPolicy').filter(
      ([, p]) => refTarget(p.Properties.Bucket) === IDS.pageStore,
    );
    assert.equal(policies.length, 1);
    assert.ok(deniesInsecureTransport(policies[0]![1].Properties.PolicyDocument));
  });

  it('writes server access logs to a private, encrypted, TLS-only log bucket that expires them', () => {
    const logging = resource(json, IDS.pageStore, 'AWS::S3::Bucket').Properties.LoggingConfiguration;
    assert.ok(isRecord(logging));
    const logBucketId = refTarget(logging.DestinationBucketName);
    assert.ok(logBucketId && logBucketId !== IDS.pageStore);
    const logBucket = resource(json, logBucketId, 'AWS::S3::Bucket');
    assert.equal(logBucket.Properties.BucketName, undefined);
    assert.equal(logBucket.Properties.AccessControl, undefined, 'log delivery by bucket policy, not ACLs');
    assert.ok(isRecord(logBucket.Properties.PublicAccessBlockConfiguration));
    assert.equal(logBucket.Properties.PublicAccessBlockConfiguration.BlockPublicPolicy, true);
    assert.ok(isRecord(logBucket.Properties.BucketEncryption));
    assert.deepEqual(logBucket.Properties.LifecycleConfiguration, {
      Rules: [{ ExpirationInDays: LOGS.accessLogExpirationDays, Status: 'Enabled' }],
    });
    const policy = ofType(json, 'AWS::S3::BucketPolicy').find(
      ([, p]) => refTarget(p.Properties.Bucket) === logBucketId,
    );
    assert.ok(policy && deniesInsecureTransport(policy[1].Properties.PolicyDocument));
  });

  it('is kept when the stack is deleted (it holds the crawl output)', () => {
    const raw = (json.Resources as Record<string, Record<string, unknown>>)[IDS.pageStore];
    assert.equal(raw?.DeletionPolicy, 'Retain');
  });
});

describe('frontier table', () => {
  it('has pk (S) / sk (S) keys, on-demand billing, TTL on expiresAt, PITR, and no physical name', () => {
    const table = resource(json, IDS.frontierTable, 'AWS::DynamoDB::Table');
    assert.equal(table.Properties.TableName, undefined);
    assert.deepEqual(table.Properties.KeySchema, [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    assert.deepEqual(table.Properties.AttributeDefinitions, [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
    ]);
    assert.equal(table.Properties.BillingMode, 'PAY_PER_REQUEST');
    assert.equal(table.Properties.ProvisionedThroughput, undefined);
    assert.deepEqual(table.Properties.TimeToLiveSpecification, { AttributeName: 'expiresAt', Enabled: true });
    assert.deepEqual(table.Properties.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true });
  });
});

describe('functions', () => {
  it('are the three crawler functions and the account check (no other custom-resource Lambda the local runtime would skip)', () => {
    const ids = ofType(json, 'AWS::Lambda::Function').map(([id]) => id);
    // The account concurrency check only reads the account's Lambda quota, which a local run has not.
    const check = ids.filter((id) => id.startsWith(`${ACCOUNT_CHECK_ID}Function`));
    assert.equal(check.length, 1);
    assert.deepEqual(ids.filter((id) => !check.includes(id)).sort(), [
      IDS.aggregateFunction,
      IDS.fetchFunction,
      IDS.renderFunction,
    ]);
  });

  it('RenderFunction: the Chromium layer, /tmp room for the unpacked browser, and its own environment', () => {
    const props = resource(json, IDS.renderFunction, 'AWS::Lambda::Function').Properties;
    assert.deepEqual(props.Layers, [{ Ref: IDS.chromiumLayer }]);
    resource(json, IDS.chromiumLayer, 'AWS::Lambda::LayerVersion');
    assert.deepEqual(props.EphemeralStorage, { Size: RENDER_FUNCTION.ephemeralStorageMiB });
    assert.deepEqual(props.Environment, {
      Variables: {
        NODE_OPTIONS: '--enable-source-maps',
        RENDER_QUEUE_URL: { Ref: IDS.renderQueue },
        RENDER_DLQ_URL: { Ref: IDS.renderDlq },
        TASK_QUEUE_URL: { Ref: IDS.taskQueue },
        RESULTS_QUEUE_URL: { Ref: IDS.resultsQueue },
        PAGE_BUCKET: { Ref: IDS.pageStore },
        FRONTIER_TABLE: { Ref: IDS.frontierTable },
        EVENT_BUS_NAME: DEFAULT_EVENT_BUS,
      },
    });
  });

  it('a stack deployed without -c render=true has no render function, queue or layer, and its fetch function no render queue', () => {
    const { stack } = createCrawlerApp({ skipBundling: true, cfnValidation: false });
    const plain = Template.fromStack(stack).toJSON();
    const ids = Object.keys(resourcesOf(plain));
    for (const id of [IDS.renderFunction, IDS.renderQueue, IDS.renderDlq, IDS.chromiumLayer])
      assert.ok(!ids.includes(id), `${id} is not deployed`);
    const env = resource(plain, IDS.fetchFunction, 'AWS::Lambda::Function').Properties.Environment;
    assert.ok(isRecord(env) && isRecord(env.Variables) && !('RENDER_QUEUE_URL' in env.Variables));
    assert.ok(isRecord(plain.Outputs) && !(OUTPUTS.renderQueueUrl in plain.Outputs));
  });

  for (const { id, handler, fn } of FUNCTIONS) {
    it(`${id}: nodejs24.x on ${ARCHITECTURE[id] ?? 'arm64'}, ESM bundle handler, timeout and memory from limits`, () => {
      const props = resource(json, id, 'AWS::Lambda::Function').Properties;
      assert.equal(props.Runtime, 'nodejs24.x');
      assert.deepEqual(props.Architectures, [ARCHITECTURE[id] ?? 'arm64']);
      assert.equal(props.Handler, 'index.handler');
      assert.equal(props.Timeout, fn.timeoutSeconds);
      assert.equal(props.MemorySize, fn.memoryMb);
      assert.equal(props.FunctionName, undefined, 'no physical name');
    });

    it(`${id}: Metadata ${HANDLER_METADATA_KEY} names ${handler}`, () => {
      const fnResource = resource(json, id, 'AWS::Lambda::Function');
      assert.equal(fnResource.Metadata[HANDLER_METADATA_KEY], handler);
    });

    it(`${id}: logs to its own log group with a retention`, () => {
      const props = resource(json, id, 'AWS::Lambda::Function').Properties;
      assert.ok(isRecord(props.LoggingConfig));
      const groupId = refTarget(props.LoggingConfig.LogGroup);
      assert.ok(groupId);
      const group = resource(json, groupId, 'AWS::Logs::LogGroup');
      assert.equal(group.Properties.RetentionInDays, LOGS.functionLogRetentionDays);
    });
  }

  it('FetchFunction allows recursive loops (it feeds its own queue); AggregateFunction terminates them', () => {
    assert.equal(
      resource(json, IDS.fetchFunction, 'AWS::Lambda::Function').Properties.RecursiveLoop,
      'Allow',
    );
    assert.equal(
      resource(json, IDS.aggregateFunction, 'AWS::Lambda::Function').Properties.RecursiveLoop,
      'Terminate',
    );
  });

  it('FetchFunction environment: queue URLs (TaskDLQ too), bucket and table names as Refs, source maps on', () => {
    const env = resource(json, IDS.fetchFunction, 'AWS::Lambda::Function').Properties.Environment;
    assert.deepEqual(env, {
      Variables: {
        NODE_OPTIONS: '--enable-source-maps',
        TASK_QUEUE_URL: { Ref: IDS.taskQueue },
        TASK_DLQ_URL: { Ref: IDS.taskDlq },
        RESULTS_QUEUE_URL: { Ref: IDS.resultsQueue },
        PAGE_BUCKET: { Ref: IDS.pageStore },
        FRONTIER_TABLE: { Ref: IDS.frontierTable },
        EVENT_BUS_NAME: DEFAULT_EVENT_BUS,
        RENDER_QUEUE_URL: { Ref: IDS.renderQueue },
      },
    });
  });

  it('AggregateFunction environment: the queue it consumes (for redelivery), the task queue (visits of hosts awaiting its results), bucket and table names as Refs, source maps on', () => {
    const env = resource(json, IDS.aggregateFunction, 'AWS::Lambda::Function').Properties.Environment;
    assert.deepEqual(env, {
      Variables: {
        NODE_OPTIONS: '--enable-source-maps',
        RESULTS_QUEUE_URL: { Ref: IDS.resultsQueue },
        TASK_QUEUE_URL: { Ref: IDS.taskQueue },
        PAGE_BUCKET: { Ref: IDS.pageStore },
        FRONTIER_TABLE: { Ref: IDS.frontierTable },
        EVENT_BUS_NAME: DEFAULT_EVENT_BUS,
      },
    });
  });
});

describe('event source mappings', () => {
  for (const { id, source, queue } of FUNCTIONS) {
    it(`${id} consumes ${queue} with ReportBatchItemFailures and the limits.ts settings`, () => {
      const m = mappingOf(id).Properties;
      assert.equal(getAttTarget(m.EventSourceArn), queue);
      assert.deepEqual(m.FunctionResponseTypes, ['ReportBatchItemFailures']);
      assert.equal(m.BatchSize, source.batchSize);
      assert.equal(m.MaximumBatchingWindowInSeconds, source.maxBatchingWindowSeconds);
      assert.deepEqual(m.ScalingConfig, { MaximumConcurrency: source.maxConcurrency });
      assert.ok(source.maxConcurrency >= 2, 'Lambda rejects a MaximumConcurrency below 2');
      assert.notEqual(m.Enabled, false);
    });
  }
});

describe('outputs', () => {
  const expected: Record<string, string> = {
    [OUTPUTS.taskQueueUrl]: IDS.taskQueue,
    [OUTPUTS.taskDlqUrl]: IDS.taskDlq,
    [OUTPUTS.resultsQueueUrl]: IDS.resultsQueue,
    [OUTPUTS.resultsDlqUrl]: IDS.resultsDlq,
    [OUTPUTS.pageBucketName]: IDS.pageStore,
    [OUTPUTS.frontierTableName]: IDS.frontierTable,
    [OUTPUTS.alarmTopicArn]: MONITORING_IDS.alarmTopic,
    [OUTPUTS.dashboardName]: MONITORING_IDS.dashboard,
    [OUTPUTS.operatorPolicyArn]: IDS.operatorPolicy,
    [OUTPUTS.crawlEventsQueueUrl]: IDS.crawlEventsQueue,
    [OUTPUTS.scheduleGroupName]: IDS.scheduleGroup,
  };
  for (const [key, target] of Object.entries(expected)) {
    it(`${key} is the Ref of ${target}`, () => {
      template.hasOutput(key, { Value: { Ref: target } });
    });
  }

  it(`${OUTPUTS.accessLogBucketName} is the Ref of the page store's access-log bucket`, () => {
    const logs = ofType(json, 'AWS::S3::Bucket').filter(([id]) =>
      id.startsWith(`${IDS.pageStore}AccessLogs`),
    );
    assert.equal(logs.length, 1);
    template.hasOutput(OUTPUTS.accessLogBucketName, { Value: { Ref: logs[0]?.[0] } });
  });

  it(`${OUTPUTS.eventBusName} names the bus crawl events go to: the default bus unless -c eventBusName`, () => {
    template.hasOutput(OUTPUTS.eventBusName, { Value: DEFAULT_EVENT_BUS });
  });

  it(`${OUTPUTS.schedulerRoleArn} and ${OUTPUTS.taskQueueArn}: the role schedules send as, and where to`, () => {
    template.hasOutput(OUTPUTS.schedulerRoleArn, { Value: { 'Fn::GetAtt': [IDS.schedulerRole, 'Arn'] } });
    template.hasOutput(OUTPUTS.taskQueueArn, { Value: { 'Fn::GetAtt': [IDS.taskQueue, 'Arn'] } });
  });

  it(`${OUTPUTS.credentialsPrefix}: where the crawls' credentials are kept, under the stack's name`, () => {
    template.hasOutput(OUTPUTS.credentialsPrefix, { Value: credentialsPrefix(STACK_NAME) });
  });

  it('has exactly the documented output keys', () => {
    assert.ok(isRecord(json.Outputs));
    assert.deepEqual(
      Object.keys(json.Outputs).sort(),
      [
        ...Object.keys(expected),
        OUTPUTS.accessLogBucketName,
        OUTPUTS.eventBusName,
        OUTPUTS.schedulerRoleArn,
        OUTPUTS.taskQueueArn,
        OUTPUTS.credentialsPrefix,
        OUTPUTS.renderQueueUrl,
        OUTPUTS.renderDlqUrl,
      ].sort(),
    );
  });
});

describe('schedules', () => {
  it('SchedulerRole is assumed by EventBridge Scheduler of this account only, and may only send to the task queue', () => {
    const role = resource(json, IDS.schedulerRole, 'AWS::IAM::Role').Properties;
    assert.deepEqual((role.AssumeRolePolicyDocument as { Statement: unknown }).Statement, [
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
      },
    ]);
    const statements = statementsOfRole(json, IDS.schedulerRole);
    assert.deepEqual(
      statements.map((s) => [s.Actions, resourceTargets(s)]),
      [[['sqs:SendMessage'], [IDS.taskQueue]]],
    );
  });
});

describe('logical ids', () => {
  it('are the construct ids, unhashed, for the main and monitoring resources', () => {
    const resources = resourcesOf(json);
    for (const id of [...Object.values(IDS), ...Object.values(MONITORING_IDS)]) {
      assert.ok(resources[id], `${id} is a logical id`);
    }
  });
});

describe('what a teardown leaves', () => {
  /** How docs/deploy.md names a kind of resource. */
  const NAMED_AS: Record<string, RegExp> = {
    'AWS::S3::Bucket': /bucket/i,
    'AWS::DynamoDB::Table': /table/i,
    'AWS::Logs::LogGroup': /log groups?/i,
  };

  it('docs/deploy.md\'s "Tear down" names every kind of resource the stack retains, and says how to delete it', () => {
    const deploy = readFileSync(join(REPO_ROOT, 'docs', 'deploy.md'), 'utf8');
    const start = deploy.indexOf('### 8. Tear down');
    assert.ok(start >= 0, 'docs/deploy.md has its Tear down step');
    const teardown = deploy.slice(start, deploy.indexOf('\n## ', start));
    const retained = new Set(
      Object.values(json.Resources as Record<string, CfnResource>)
        .filter((r) => (r as { DeletionPolicy?: string }).DeletionPolicy === 'Retain')
        .map((r) => r.Type),
    );
    assert.ok(retained.size > 0);
    for (const type of retained) {
      const named = NAMED_AS[type];
      assert.ok(named, `the stack retains ${type}: say in docs/deploy.md what a teardown leaves of it`);
      const said = teardown
        .split(/\n\n/)
        .find((paragraph) => named.test(paragraph) && /retained/i.test(paragraph));
      assert.ok(said, `"Tear down" says that ${type} resources are retained`);
    }
    assert.match(teardown, /aws logs delete-log-group/);
  });
});
