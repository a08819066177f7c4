/**
 * `crawler redrive` over the real pipeline (embedded emulators, real handlers): messages the crawler
 * dead-lettered as malformed stay in the DLQ unless --include-malformed, and a malformed message
 * redriven anyway ends as the same result line it made the first time (its key comes from its body,
 * not from the new message's id), never a second one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { GetQueueAttributesCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { redriveCommand } from '../../cli/redrive-command.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { DEFAULT_CRAWL_ID } from '../../lambdas/core/crawl/index.ts';
import { resultsPrefix, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { ioAgainst } from '../fixtures/local-cli-io.ts';

describe('crawler redrive of malformed tasks', () => {
  let local: LocalAws;
  before(async () => {
    local = await startLocalAws({
      template: parseTemplate(synthesizeTemplate()),
      stackName: STACK_NAME,
      handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    });
  });
  after(async () => {
    await local?.stop();
  });

  const depth = async (url: string | undefined) => {
    const attributes = await local.clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return (
      Number(attributes.Attributes?.ApproximateNumberOfMessages) +
      Number(attributes.Attributes?.ApproximateNumberOfMessagesNotVisible)
    );
  };

  const redrive = async (...args: string[]) => {
    const io = ioAgainst(local);
    const code = await redriveCommand([DEFAULT_CRAWL_ID, '--queue', 'tasks', ...args], io);
    return { code, printed: io.stdout.text };
  };

  /** Every stored index line of the default crawl's invalid results, duplicates included (no reader's dedup). */
  const invalidLines = async () => {
    const blobs = new S3Blobs(local.clients.s3, local.outputs.PageBucketName!);
    const keys: string[] = [];
    for await (const part of blobs.list(resultsPrefix(DEFAULT_CRAWL_ID))) {
      for (const text of gunzipSync(await blobs.get(part))
        .toString('utf8')
        .split('\n')) {
        if (text.trim() === '') continue;
        const line = JSON.parse(text) as { outcome: string; key: string };
        if (line.outcome === 'invalid') keys.push(line.key);
      }
    }
    return keys.sort();
  };

  it('leaves malformed messages in the DLQ unless asked, and never makes a second line for one', async () => {
    // Bodies with no crawl id belong to the default crawl, which takes messages for ever.
    const bad = ['not a task at all', '<html><body>a page, not a task</body></html>', '{"v":1,"url":42}'];
    await local.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: local.outputs.TaskQueueUrl,
        Entries: bad.map((body, index) => ({ Id: String(index), MessageBody: body })),
      }),
    );
    await local.start();
    await local.waitForIdle({ timeoutMs: 60_000 });
    const first = await invalidLines();
    assert.equal(first.length, bad.length, 'one invalid line per malformed message');
    assert.equal(await depth(local.outputs.TaskDlqUrl), bad.length);

    // Without the flag: nothing moves (sent back as they are they would only bounce).
    const kept = await redrive();
    assert.equal(kept.code, 0);
    assert.match(
      kept.printed,
      /tasks: moved 0 message\(s\) back, left 0 of other crawls, left 3 dead-lettered as malformed/,
    );
    assert.equal(await depth(local.outputs.TaskDlqUrl), bad.length);
    assert.equal(await depth(local.outputs.TaskQueueUrl), 0);

    // Asked: they go back, end invalid again under the same keys, and come back to the DLQ.
    const moved = await redrive('--include-malformed');
    assert.match(moved.printed, /tasks: moved 3 message\(s\) back/);
    await local.waitForIdle({ timeoutMs: 60_000 });
    assert.deepEqual(await invalidLines(), first, 'the redriven messages made result lines of their own');
    assert.equal(await depth(local.outputs.TaskDlqUrl), bad.length);
  });
});
