// The IAM ledger's mapping from an SDK call to the permissions IAM checks, and its snapshot/absorb.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwsCallLedger, type CallFacts, permissionsFor } from '../../lambdas/shared/aws-call-ledger.ts';

const call = (
  service: string,
  operation: string,
  input: Record<string, unknown>,
  extra: Partial<CallFacts> = {},
) => permissionsFor({ service, operation, input, region: 'eu-west-1', accountId: '111122223333', ...extra });

describe('permissionsFor', () => {
  it('SQS: a batch is authorized as its single action, on the queue of the URL', () => {
    const url = 'https://sqs.eu-west-1.amazonaws.com/444455556666/tasks';
    const arn = 'arn:aws:sqs:eu-west-1:444455556666:tasks';
    assert.deepEqual(call('SQS', 'SendMessageBatch', { QueueUrl: url }), [
      { action: 'sqs:SendMessage', resource: arn },
    ]);
    assert.deepEqual(call('SQS', 'DeleteMessageBatch', { QueueUrl: url }), [
      { action: 'sqs:DeleteMessage', resource: arn },
    ]);
    assert.deepEqual(call('SQS', 'ChangeMessageVisibilityBatch', { QueueUrl: url }), [
      { action: 'sqs:ChangeMessageVisibility', resource: arn },
    ]);
    assert.deepEqual(call('SQS', 'ReceiveMessage', { QueueUrl: 'http://127.0.0.1:4566/000000000000/q' }), [
      { action: 'sqs:ReceiveMessage', resource: 'arn:aws:sqs:eu-west-1:000000000000:q' },
    ]);
    assert.deepEqual(call('SQS', 'GetQueueUrl', { QueueName: 'q', QueueOwnerAWSAccountId: '999988887777' }), [
      { action: 'sqs:GetQueueUrl', resource: 'arn:aws:sqs:eu-west-1:999988887777:q' },
    ]);
  });

  it('S3: HEAD is GetObject, listing is ListBucket on the bucket, a read of a missing key also needs ListBucket', () => {
    assert.deepEqual(call('S3', 'HeadObject', { Bucket: 'b', Key: 'k/1' }), [
      { action: 's3:GetObject', resource: 'arn:aws:s3:::b/k/1' },
    ]);
    assert.deepEqual(call('S3', 'ListObjectsV2', { Bucket: 'b', Prefix: 'k/' }), [
      { action: 's3:ListBucket', resource: 'arn:aws:s3:::b' },
    ]);
    assert.deepEqual(call('S3', 'PutObject', { Bucket: 'b', Key: 'w.warc.gz' }), [
      { action: 's3:PutObject', resource: 'arn:aws:s3:::b/w.warc.gz' },
    ]);
    const missing = Object.assign(new Error('no such key'), {
      name: 'NoSuchKey',
      $metadata: { httpStatusCode: 404 },
    });
    assert.deepEqual(call('S3', 'GetObject', { Bucket: 'b', Key: 'gone' }, { error: missing }), [
      { action: 's3:GetObject', resource: 'arn:aws:s3:::b/gone' },
      { action: 's3:ListBucket', resource: 'arn:aws:s3:::b' },
    ]);
    const denied = Object.assign(new Error('denied'), {
      name: 'AccessDenied',
      $metadata: { httpStatusCode: 403 },
    });
    assert.equal(call('S3', 'GetObject', { Bucket: 'b', Key: 'x' }, { error: denied }).length, 1);
  });

  it('DynamoDB: the table (and index) ARN in the account; BatchGetItem on each table; transactions per item', () => {
    const table = 'arn:aws:dynamodb:eu-west-1:111122223333:table/frontier';
    assert.deepEqual(call('DynamoDB', 'UpdateItem', { TableName: 'frontier' }), [
      { action: 'dynamodb:UpdateItem', resource: table },
    ]);
    assert.deepEqual(call('DynamoDB', 'Query', { TableName: 'frontier', IndexName: 'byHost' }), [
      { action: 'dynamodb:Query', resource: `${table}/index/byHost` },
    ]);
    assert.deepEqual(call('DynamoDB', 'BatchGetItem', { RequestItems: { frontier: {}, other: {} } }), [
      { action: 'dynamodb:BatchGetItem', resource: table },
      { action: 'dynamodb:BatchGetItem', resource: 'arn:aws:dynamodb:eu-west-1:111122223333:table/other' },
    ]);
    assert.deepEqual(
      call('DynamoDB', 'TransactWriteItems', {
        TransactItems: [{ Put: { TableName: 'frontier' } }, { ConditionCheck: { TableName: 'frontier' } }],
      }),
      [
        { action: 'dynamodb:PutItem', resource: table },
        { action: 'dynamodb:ConditionCheckItem', resource: table },
      ],
    );
    assert.deepEqual(call('DynamoDB', 'GetItem', { TableName: table }), [
      { action: 'dynamodb:GetItem', resource: table },
    ]);
  });

  it('CloudFormation: DescribeStacks on the stack id the answer gives, else the stack name with any id', () => {
    const id = 'arn:aws:cloudformation:eu-west-1:111122223333:stack/ServerlessCrawler/abc';
    assert.deepEqual(
      call(
        'CloudFormation',
        'DescribeStacks',
        { StackName: 'ServerlessCrawler' },
        { output: { Stacks: [{ StackId: id }] } },
      ),
      [{ action: 'cloudformation:DescribeStacks', resource: id }],
    );
    assert.deepEqual(call('CloudFormation', 'DescribeStacks', { StackName: 'ServerlessCrawler' }), [
      {
        action: 'cloudformation:DescribeStacks',
        resource: 'arn:aws:cloudformation:eu-west-1:111122223333:stack/ServerlessCrawler/*',
      },
    ]);
  });

  it('an input it cannot place gets a resource no policy can match', () => {
    const [permission] = call('SQS', 'SendMessage', {});
    assert.match(String(permission?.resource), /^unknown:/);
  });
});

describe('AwsCallLedger', () => {
  it('records nothing until enabled (it keeps an entry per object key: unbounded in a long-lived container)', () => {
    const ledger = new AwsCallLedger();
    ledger.record('fn', [{ action: 'sqs:SendMessage', resource: 'arn:aws:sqs:r:1:q' }], false);
    assert.equal(ledger.enabled, false);
    assert.deepEqual(ledger.snapshot().entries, []);
  });

  it('keeps distinct (principal, action, resource) with counts; a snapshot is plain data that absorb adds up', () => {
    const ledger = new AwsCallLedger();
    ledger.enable();
    const send = { action: 'sqs:SendMessage', resource: 'arn:aws:sqs:r:1:q' };
    ledger.record('fn', [send], false);
    ledger.record('fn', [send], true);
    ledger.record('operator', [send], false);
    const snapshot = ledger.snapshot();
    assert.deepEqual(JSON.parse(JSON.stringify(snapshot)), snapshot);
    assert.deepEqual(snapshot.entries, [
      { principal: 'fn', ...send, calls: 2, errors: 1 },
      { principal: 'operator', ...send, calls: 1, errors: 0 },
    ]);
    const main = new AwsCallLedger();
    main.enable();
    main.record('fn', [send], false);
    main.absorb(structuredClone(snapshot));
    assert.deepEqual(main.snapshot().entries[0], { principal: 'fn', ...send, calls: 3, errors: 1 });
    main.reset();
    assert.deepEqual(main.snapshot().entries, []);
  });
});
