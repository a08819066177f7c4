/** `crawler redrive`: dead-lettered messages go back to their queue, only the named crawl's. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { crawlOf, redriveCommand } from '../../cli/redrive-command.ts';
import { resultMessageBodies } from '../../lambdas/core/results/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { ioAgainst } from '../fixtures/local-cli-io.ts';

describe('crawler redrive', () => {
  let local: LocalAws;
  before(async () => {
    local = await startLocalAws({ template: parseTemplate(synthesizeTemplate()), stackName: STACK_NAME });
  });
  after(async () => {
    await local.stop();
  });

  const depth = async (url: string) => {
    const attributes = await local.clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    return Number(attributes.Attributes?.ApproximateNumberOfMessages);
  };

  it('knows which crawl a message belongs to', () => {
    assert.equal(crawlOf('{"v":1,"crawlId":"a","url":"http://x/","depth":0}'), 'a');
    assert.equal(crawlOf('https://example.com/'), 'default');
    assert.equal(crawlOf('{not json'), undefined);
    // A results message carries a flush's records of one crawl, named at its top.
    const record = { v: 1, crawlId: 'b', key: 'k', url: 'http://x/', outcome: 'fetched', bytes: 0 } as const;
    const [packed] = resultMessageBodies([
      { ...record, fetchedAt: '2024-01-01T00:00:00Z', ms: 0, depth: 0, outlinks: 0 },
    ]);
    assert.equal(crawlOf(packed ?? ''), 'b');
  });

  it("moves one crawl's tasks back to the TaskQueue and leaves the others in the DLQ", async () => {
    const task = (crawlId: string, n: number) =>
      JSON.stringify({ v: 1, crawlId, url: `http://x.test/${n}`, depth: 0 });
    const bodies = [task('a', 1), task('a', 2), task('b', 1), task('a', 3), '{broken'];
    await local.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: local.outputs.TaskDlqUrl,
        Entries: bodies.map((body, index) => ({ Id: String(index), MessageBody: body })),
      }),
    );
    const io = ioAgainst(local);
    // The command finds the queues the same way a user's would: through the endpoint.
    const code = await redriveCommand(['a', '--queue', 'tasks', '--endpoint', local.endpoints.sqs], io);
    assert.equal(code, 0);
    assert.match(io.stdout.text, /tasks: moved 3 message\(s\) back, left 2 of other crawls/);
    assert.equal(await depth(local.outputs.TaskQueueUrl!), 3);
    assert.equal(await depth(local.outputs.TaskDlqUrl!), 2);
    const back = await local.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: local.outputs.TaskQueueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
      }),
    );
    assert.deepEqual(
      (back.Messages ?? []).map((message) => message.Body).sort(),
      [task('a', 1), task('a', 2), task('a', 3)].sort(),
    );
  });
});
