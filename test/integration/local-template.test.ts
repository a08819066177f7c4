// biome-ignore-all lint/suspicious/noTemplateCurlyInString: CloudFormation Fn::Sub syntax, not JS templates
// Pure parts of the local runtime: intrinsics, physical names, dependency order, Lambda's SQS contract.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ResolveContext, resolveValue } from '../../local/cfn-resolver.ts';
import { dependencyOrder, parseTemplate } from '../../local/cfn-template.ts';
import { physicalName } from '../../local/physical-names.ts';
import { judgeResponse, toSqsRecord } from '../../local/sqs-event.ts';

const ctx: ResolveContext = {
  region: 'eu-west-1',
  accountId: '123456789012',
  stackName: 'Crawler',
  stackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/Crawler/x',
  ref: (id) => {
    if (id === 'Q') return 'https://queue/Q';
    if (id === 'B') return 'bucket-b';
    throw new Error(`no ${id}`);
  },
  getAtt: (id, attribute) => `${id}#${attribute}`,
};
const r = (value: unknown) => resolveValue(value, ctx, 'X');

describe('cfn-resolver', () => {
  it('resolves Ref, pseudo parameters and Fn::GetAtt in both forms', () => {
    assert.equal(r({ Ref: 'Q' }), 'https://queue/Q');
    assert.equal(r({ Ref: 'AWS::Region' }), 'eu-west-1');
    assert.equal(r({ Ref: 'AWS::AccountId' }), '123456789012');
    assert.equal(r({ Ref: 'AWS::Partition' }), 'aws');
    assert.equal(r({ Ref: 'AWS::URLSuffix' }), 'amazonaws.com');
    assert.equal(r({ Ref: 'AWS::StackName' }), 'Crawler');
    assert.equal(r({ 'Fn::GetAtt': ['Q', 'Arn'] }), 'Q#Arn');
    assert.equal(r({ 'Fn::GetAtt': 'Q.QueueName' }), 'Q#QueueName');
  });

  it('resolves Fn::Join, Fn::Sub (pseudo, resource, attribute, local vars, escapes), Fn::Select, Fn::Split', () => {
    assert.equal(r({ 'Fn::Join': ['/', ['s3:', { Ref: 'B' }, 'x']] }), 's3:/bucket-b/x');
    assert.equal(
      r({ 'Fn::Sub': 'arn:${AWS::Partition}:s3:::${B}/${Q.Arn}/${!Literal}' }),
      'arn:aws:s3:::bucket-b/Q#Arn/${Literal}',
    );
    assert.equal(r({ 'Fn::Sub': ['${Name}-${AWS::Region}', { Name: { Ref: 'B' } }] }), 'bucket-b-eu-west-1');
    assert.equal(r({ 'Fn::Select': [1, { 'Fn::Split': [',', 'a,b,c'] }] }), 'b');
  });

  it('drops AWS::NoValue from objects and lists', () => {
    assert.deepEqual(r({ A: { Ref: 'AWS::NoValue' }, B: [1, { Ref: 'AWS::NoValue' }, 2] }), { B: [1, 2] });
  });

  it('names an unsupported intrinsic and where it is', () => {
    assert.throws(
      () => r({ Variables: { FOO: { 'Fn::ImportValue': 'Shared' } } }),
      /X\.Variables\.FOO \(Fn::ImportValue\): intrinsic Fn::ImportValue is not supported/,
    );
    assert.throws(() => r({ 'Fn::If': ['C', 'a', 'b'] }), /Fn::If is not supported/);
    assert.throws(() => r({ Ref: 'AWS::NotificationARNs' }), /pseudo parameter AWS::NotificationARNs/);
  });
});

describe('physical-names', () => {
  it('builds <stack>-<LogicalId>-<SUFFIX>, deterministic per instance', () => {
    const a = physicalName('queue', 'Crawler', 'TaskQueue1234', 'one');
    assert.match(a, /^Crawler-TaskQueue1234-[A-Z2-7]{12}$/);
    assert.equal(physicalName('queue', 'Crawler', 'TaskQueue1234', 'one'), a);
    assert.notEqual(physicalName('queue', 'Crawler', 'TaskQueue1234', 'two'), a);
    assert.notEqual(physicalName('queue', 'Crawler', 'TaskDlq5678', 'one').split('-')[2], a.split('-')[2]);
  });

  it('keeps each service’s length and character rules', () => {
    const long = 'A'.repeat(120);
    const queue = physicalName('queue', `My.Stack_${long}`, `Logical${long}`, 'i');
    assert.ok(queue.length <= 80 && /^[A-Za-z0-9_-]+$/.test(queue), queue);
    const fifo = physicalName('queue', 'S', `L${long}`, 'i', { fifo: true });
    assert.ok(fifo.endsWith('.fifo') && fifo.length <= 80, fifo);
    const bucket = physicalName('bucket', `-My_Stack.${long}`, `PageBucket${long}`, 'i');
    assert.ok(
      bucket.length <= 63 && /^[a-z0-9][a-z0-9-]*[a-z0-9]$/.test(bucket) && !bucket.includes('--'),
      bucket,
    );
    assert.match(physicalName('bucket', 'Crawler', 'PageBucket', 'i'), /^crawler-pagebucket-[a-z2-7]{12}$/);
    const fn = physicalName('function', long, long, 'i');
    assert.ok(fn.length <= 64 && /^[A-Za-z0-9_-]+$/.test(fn), fn);
    assert.ok(physicalName('table', 'S', 'T', 'i').length >= 3);
  });
});

describe('cfn-template', () => {
  const template = parseTemplate({
    Resources: {
      Source: {
        Type: 'AWS::SQS::Queue',
        Properties: { RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': ['Dlq', 'Arn'] } } },
      },
      Fn: {
        Type: 'AWS::Lambda::Function',
        Properties: { Environment: { Variables: { A: { 'Fn::Sub': '${Bucket}' } } } },
      },
      Dlq: { Type: 'AWS::SQS::Queue' },
      Bucket: { Type: 'AWS::S3::Bucket', DependsOn: 'Dlq' },
    },
  });

  it('orders dependencies first (Ref, GetAtt, Sub, DependsOn)', () => {
    const order = dependencyOrder(template, ['Source', 'Fn', 'Dlq', 'Bucket']);
    assert.ok(order.indexOf('Dlq') < order.indexOf('Source'));
    assert.ok(order.indexOf('Bucket') < order.indexOf('Fn'));
    assert.ok(order.indexOf('Dlq') < order.indexOf('Bucket'));
  });

  it('reports cycles', () => {
    const cyclic = parseTemplate({
      Resources: { A: { Type: 'T', Properties: { X: { Ref: 'B' } } }, B: { Type: 'T', DependsOn: ['A'] } },
    });
    assert.throws(() => dependencyOrder(cyclic, ['A', 'B']), /circular dependency: A -> B -> A/);
  });

  it('rejects what is not a template', () => {
    assert.throws(() => parseTemplate({ Resources: { A: {} } }), /Resources\.A\.Type/);
  });
});

describe('sqs-event: judgeResponse (Lambda reading a batch response)', () => {
  const ids = ['m1', 'm2'];
  it('treats empty responses and lists as success', () => {
    for (const value of [undefined, null, {}, { batchItemFailures: [] }, { batchItemFailures: null }]) {
      assert.deepEqual(
        judgeResponse(value, ids, true),
        { kind: 'success', ignoredFailures: 0 },
        JSON.stringify(value),
      );
    }
  });

  it('keeps the reported items and deletes the rest', () => {
    const verdict = judgeResponse({ batchItemFailures: [{ itemIdentifier: 'm2' }] }, ids, true);
    assert.deepEqual(verdict, { kind: 'partial', failed: new Set(['m2']) });
  });

  it('fails the whole batch on entries naming no message, and on non-object responses', () => {
    for (const value of [
      { batchItemFailures: [{ itemIdentifier: '' }] },
      { batchItemFailures: [{ itemIdentifier: null }] },
      { batchItemFailures: [{ id: 'm1' }] },
      { batchItemFailures: [{ itemIdentifier: 'other' }] },
      { batchItemFailures: 'm1' },
      'ok',
      [1],
    ]) {
      assert.equal(judgeResponse(value, ids, true).kind, 'invalid', JSON.stringify(value));
    }
    assert.equal(judgeResponse({ n: 1n }, ids, true).kind, 'invalid');
  });

  it('ignores batchItemFailures when the mapping does not report them (the known trap)', () => {
    assert.deepEqual(judgeResponse({ batchItemFailures: [{ itemIdentifier: 'm1' }] }, ids, false), {
      kind: 'success',
      ignoredFailures: 1,
    });
    assert.deepEqual(judgeResponse('anything', ids, false), { kind: 'success', ignoredFailures: 0 });
  });
});

describe('sqs-event: toSqsRecord', () => {
  it('has Lambda’s keys, in Lambda’s order, and its attribute shape', () => {
    const record = toSqsRecord(
      {
        MessageId: 'id',
        ReceiptHandle: 'rh',
        Body: 'b',
        MD5OfBody: 'md5',
        MD5OfMessageAttributes: 'md5a',
        Attributes: {
          ApproximateReceiveCount: '3',
          SentTimestamp: '1',
          SenderId: 'S',
          ApproximateFirstReceiveTimestamp: '2',
        },
        MessageAttributes: {
          s: { DataType: 'String', StringValue: 'v' },
          bin: { DataType: 'Binary', BinaryValue: new Uint8Array([1, 2, 3]) },
        },
      },
      'arn:aws:sqs:us-east-1:000000000000:q',
      'us-east-1',
    );
    assert.deepEqual(Object.keys(record), [
      'messageId',
      'receiptHandle',
      'body',
      'attributes',
      'messageAttributes',
      'md5OfMessageAttributes',
      'md5OfBody',
      'eventSource',
      'eventSourceARN',
      'awsRegion',
    ]);
    assert.equal(record.eventSource, 'aws:sqs');
    assert.equal(record.attributes.ApproximateReceiveCount, '3');
    assert.deepEqual(record.messageAttributes, {
      s: { stringValue: 'v', stringListValues: [], binaryListValues: [], dataType: 'String' },
      bin: { binaryValue: 'AQID', stringListValues: [], binaryListValues: [], dataType: 'Binary' },
    });
  });

  it('has no md5OfMessageAttributes without message attributes', () => {
    const record = toSqsRecord({ MessageId: 'id', Body: 'b' }, 'arn', 'us-east-1');
    assert.equal('md5OfMessageAttributes' in record, false);
    assert.deepEqual(record.messageAttributes, {});
  });
});
