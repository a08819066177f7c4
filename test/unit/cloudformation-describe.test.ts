// DescribeStacks as `crawler local` answers it: what the AWS CLI and the SDK parse.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeStacksAnswer, type LocalStackDescription } from '../../local/cloudformation-describe.ts';

const STACK: LocalStackDescription = {
  stackName: 'ServerlessCrawler',
  stackId: 'arn:aws:cloudformation:us-east-1:000000000000:stack/ServerlessCrawler/abc',
  createdAt: new Date('2026-12-01T00:00:00Z'),
  outputs: { TaskQueueUrl: 'http://127.0.0.1:4566/000000000000/q?a=1&b=<2>' },
};
const form = (fields: Record<string, string>) => new URLSearchParams({ Action: 'DescribeStacks', ...fields });

describe('describeStacksAnswer', () => {
  it('answers a stack asked by name or by id with its status and its outputs, XML-escaped', () => {
    for (const name of [STACK.stackName, STACK.stackId]) {
      const answer = describeStacksAnswer(form({ StackName: name }), [STACK]);
      assert.equal(answer.status, 200);
      assert.match(answer.body, /<StackStatus>CREATE_COMPLETE<\/StackStatus>/);
      assert.match(
        answer.body,
        /<OutputKey>TaskQueueUrl<\/OutputKey><OutputValue>http:\/\/127\.0\.0\.1:4566\/000000000000\/q\?a=1&amp;b=&lt;2&gt;<\/OutputValue>/,
      );
    }
  });

  it('answers every stack when none is named', () => {
    const other = { ...STACK, stackName: 'Other', stackId: 'arn:other', status: 'ROLLBACK_COMPLETE' };
    const answer = describeStacksAnswer(form({}), [STACK, other]);
    assert.equal(answer.body.match(/<StackName>/g)?.length, 2);
    assert.match(answer.body, /<StackStatus>ROLLBACK_COMPLETE<\/StackStatus>/);
  });

  it('answers a stack it does not hold as CloudFormation does: 400 ValidationError "does not exist"', () => {
    const answer = describeStacksAnswer(form({ StackName: 'Nope' }), [STACK]);
    assert.equal(answer.status, 400);
    assert.match(
      answer.body,
      /<Code>ValidationError<\/Code><Message>Stack with id Nope does not exist<\/Message>/,
    );
  });
});
