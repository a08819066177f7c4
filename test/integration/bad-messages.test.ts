/**
 * Bad input never crash-loops (DESIGN invariant 3): a malformed task is recorded as `invalid` with its
 * reason and moved to the TaskDLQ at once, with that reason, without breaking its batch neighbours.
 * Real pipeline: embedded emulators provisioned from the synthesized stack, real handlers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { readCrawlResults } from '../../lambdas/core/archive/index.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

describe('malformed tasks', () => {
  let site: TestSite;
  let local: LocalAws;
  const crawlId = `bad-${Date.now().toString(36)}`;

  before(async () => {
    site = await startSite({ '/': html('fine') });
    local = await startLocalAws({
      template: parseTemplate(synthesizeTemplate()),
      stackName: STACK_NAME,
      handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    });
  });
  after(async () => {
    await local.stop();
    await site.close();
  });

  it('are recorded as invalid, moved to the DLQ at once with the reason, and spare their neighbours', async () => {
    const config = parseCrawlConfig({ crawlId, seeds: [`${site.origin}/`], allowPrivate: true, delayMs: 0 });
    await submitCrawl(local, config);
    const huge = `http://127.0.0.1/${'a'.repeat(100_000)}`;
    const bad = [
      'this is not json',
      JSON.stringify({ v: 1, crawlId, url: 'http://x.test/', depth: 'deep' }),
      JSON.stringify({ v: 1, crawlId, url: 'ftp://x.test/file', depth: 0 }),
      JSON.stringify({ v: 1, crawlId, url: huge, depth: 0 }),
      // Control characters and a lone surrogate, escaped by JSON so SQS accepts the body, plus a wrong field.
      JSON.stringify({ v: 1, crawlId, url: 'http://x.test/\u0000\ud800', depth: 0, attempt: 'x' }),
    ];
    // One batch: the good seed task is already queued; the bad ones ride along.
    await local.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: local.outputs.TaskQueueUrl,
        Entries: bad.map((body, index) => ({ Id: String(index), MessageBody: body })),
      }),
    );
    const started = Date.now();
    await local.start();
    await local.waitForIdle({ timeoutMs: 60_000 });
    // Redrive by maxReceiveCount would take 5 × the 6-minute visibility timeout: this is "at once".
    assert.ok(Date.now() - started < 30_000, `took ${Date.now() - started} ms`);

    const results = await readCrawlResults(
      new S3Blobs(local.clients.s3, local.outputs.PageBucketName!),
      crawlId,
    );
    const fetched = results.filter((result) => result.outcome === 'fetched');
    assert.deepEqual(
      fetched.map((result) => result.url),
      [`${site.origin}/`],
      'the good neighbour was fetched',
    );
    const invalid = results.filter((result) => result.outcome === 'invalid');
    // The non-JSON body has no crawl id: it is recorded in the default crawl, the other four here.
    assert.equal(invalid.length, 4);
    const codes = invalid.map((result) => result.code).sort();
    assert.deepEqual(codes, ['invalid-task', 'invalid-task', 'unsupported-scheme', 'url-too-long']);
    for (const result of invalid) assert.ok((result.reason ?? '').length > 10, `reason for ${result.code}`);
    assert.ok(
      invalid.every((result) => result.url.length <= 2048),
      'urls are clipped in records',
    );

    const dlq = await local.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: local.outputs.TaskDlqUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    const letters = dlq.Messages ?? [];
    assert.equal(letters.length, bad.length, 'every malformed task is in the DLQ');
    assert.deepEqual(
      letters.map((letter) => letter.Body).sort(),
      [...bad].sort(),
      'kept as sent, for inspection',
    );
    for (const letter of letters) {
      assert.ok(letter.MessageAttributes?.code?.StringValue, 'with its code');
      assert.ok((letter.MessageAttributes?.reason?.StringValue ?? '').length > 10, 'and its reason');
    }
    assert.ok(
      letters.some((letter) =>
        /not valid JSON|neither a task JSON object nor a URL/.test(
          letter.MessageAttributes?.reason?.StringValue ?? '',
        ),
      ),
    );
  });
});
