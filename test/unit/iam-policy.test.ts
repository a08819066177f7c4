// The tests' IAM evaluation (test/fixtures/iam-policy.ts): what it allows, denies and finds unused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  deniedCalls,
  isAllowed,
  type ResolvedStatement,
  unusedGrants,
  wildcardMatch,
} from '../fixtures/iam-policy.ts';

const QUEUE = 'arn:aws:sqs:us-east-1:000000000000:tasks';
const BUCKET = 'arn:aws:s3:::pages';
const policy: ResolvedStatement[] = [
  { effect: 'Allow', actions: ['sqs:SendMessage'], resources: [QUEUE] },
  { effect: 'Allow', actions: ['s3:GetObject'], resources: [`${BUCKET}/*`] },
];

describe('IAM policy evaluation', () => {
  it('allows a call an Allow matches on action and resource', () => {
    assert.ok(isAllowed(policy, { action: 'sqs:SendMessage', resource: QUEUE }));
    assert.ok(
      isAllowed(policy, { action: 'SQS:sendmessage', resource: QUEUE }),
      'actions are case-insensitive',
    );
    assert.ok(isAllowed(policy, { action: 's3:GetObject', resource: `${BUCKET}/warc/a.warc.gz` }));
  });

  it('reports a call outside the policy: other action, other resource, other case of an ARN', () => {
    const calls = [
      { action: 'sqs:SendMessage', resource: QUEUE },
      { action: 'dynamodb:BatchGetItem', resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/t' },
      { action: 'sqs:SendMessage', resource: `${QUEUE}-dlq` },
      { action: 's3:ListBucket', resource: BUCKET },
      { action: 's3:GetObject', resource: 'arn:aws:s3:::Pages/x' },
    ];
    assert.deepEqual(deniedCalls(policy, calls), calls.slice(1));
  });

  it('an explicit Deny wins over an Allow', () => {
    const withDeny: ResolvedStatement[] = [
      ...policy,
      { effect: 'Deny', actions: ['s3:*'], resources: [`${BUCKET}/secret/*`] },
    ];
    assert.ok(!isAllowed(withDeny, { action: 's3:GetObject', resource: `${BUCKET}/secret/k` }));
    assert.ok(isAllowed(withDeny, { action: 's3:GetObject', resource: `${BUCKET}/open/k` }));
  });

  it('wildcards: * any run, ? one character, nothing else special', () => {
    assert.ok(wildcardMatch('s3:Get*', 's3:GetObjectVersion'));
    assert.ok(wildcardMatch('arn:aws:sqs:*:*:q?', 'arn:aws:sqs:us-east-1:1:q1'));
    assert.ok(!wildcardMatch('arn:aws:sqs:*:*:q?', 'arn:aws:sqs:us-east-1:1:q12'));
    assert.ok(!wildcardMatch('a.b', 'axb'));
  });

  it('finds each granted (action, resource) no call used', () => {
    const grants: ResolvedStatement[] = [
      {
        effect: 'Allow',
        actions: ['sqs:SendMessage', 'sqs:GetQueueUrl'],
        resources: [QUEUE, `${QUEUE}-dlq`],
      },
    ];
    const unused = unusedGrants(grants, [{ action: 'sqs:SendMessage', resource: QUEUE }]);
    assert.deepEqual(unused, [
      { action: 'sqs:SendMessage', resource: `${QUEUE}-dlq` },
      { action: 'sqs:GetQueueUrl', resource: QUEUE },
      { action: 'sqs:GetQueueUrl', resource: `${QUEUE}-dlq` },
    ]);
  });
});
