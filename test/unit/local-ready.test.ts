/**
 * What `crawler local` prints when it is ready is what a user copies first: its AWS CLI example must
 * work on AWS CLI v1 as well, which downloads a parameter starting with http:// or https:// and sends
 * the downloaded page as the message (docs: "Deploy to AWS", cli_follow_urlparam).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeReady } from '../../cli/local-command.ts';
import { parseTaskMessage } from '../../lambdas/core/crawl/index.ts';
import { OUTPUTS } from '../../lambdas/shared/contracts.ts';

test("the ready text's send-message example is a task AWS CLI v1 sends as written", () => {
  const endpoint = 'http://127.0.0.1:4566';
  const text = describeReady(
    {
      endpoint,
      stateDir: '/tmp/state',
      outputs: {
        [OUTPUTS.taskQueueUrl]: `${endpoint}/000000000000/tasks`,
        [OUTPUTS.pageBucketName]: 'pages',
      },
    },
    { defaults: {} },
  );
  const line = text.split('\n').find((l) => l.includes('sqs send-message'));
  assert.ok(line, text);
  const body = /--message-body '([^']*)'/.exec(line)?.[1];
  assert.ok(body !== undefined, `the message body is quoted for the shell: ${line}`);
  assert.doesNotMatch(body, /^(https?|file):\/\//i, 'AWS CLI v1 would download this body');
  const parsed = parseTaskMessage(body);
  assert.ok(parsed.ok, `the example is a valid task: ${JSON.stringify(parsed)}`);
  assert.equal(parsed.task.crawlId, 'default');
});
