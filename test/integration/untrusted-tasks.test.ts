/**
 * Tasks on the queue are input, not trusted state: anyone who can send to the TaskQueue can send
 * anything, and the fetch function holds each crawl's rules against what it receives. Real pipeline:
 * embedded emulators provisioned from the synthesized stack, real handlers, sites on 127.0.0.1.
 *
 * - a running crawl: an injected task for a host outside its scope, or deeper than its --max-depth,
 *   ends `skipped` (scope, depth) and is never requested;
 * - a finished crawl: tasks and results sent after its end change nothing (results, counters and
 *   summary.json stay as they were), and nothing is requested; malformed tasks naming a complete or
 *   cancelled crawl go to the TaskDLQ with why, without a result;
 * - an unknown crawl id ends in the TaskDLQ at once with its code and reason, and no result;
 * - a body as large as the queue allows still fits its DLQ copy (cut and marked `truncated`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { QUEUE } from '../../cdk/limits.ts';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { cancelCrawl } from '../../lambdas/adapters/frontier-cancel.ts';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { messageBytes } from '../../lambdas/adapters/sqs-batch-sender.ts';
import { readCrawlResults } from '../../lambdas/core/archive/index.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { STACK_NAME, summaryKey } from '../../lambdas/shared/contracts.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

const IDLE_MS = 90_000;

describe('tasks on the queue are input, not trusted state', () => {
  let site: TestSite;
  let outsider: TestSite;
  let local: LocalAws;
  let blobs: S3Blobs;
  const stamp = Date.now().toString(36);

  const send = (bodies: readonly string[], queue: 'TaskQueueUrl' | 'ResultsQueueUrl' = 'TaskQueueUrl') =>
    local.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: local.outputs[queue],
        Entries: bodies.map((body, index) => ({ Id: String(index), MessageBody: body })),
      }),
    );
  const task = (crawlId: string, url: string, depth = 0) => JSON.stringify({ v: 1, crawlId, url, depth });

  before(async () => {
    site = await startSite({
      // Slow enough that injected tasks sent with the seed are decided while the crawl still runs.
      '/': (request, response) => {
        setTimeout(() => html('<a href="/a">a</a>')(request, response), 1500);
      },
      '/a': html('a'),
    });
    outsider = await startSite({ '/': html('outside') });
    local = await startLocalAws({
      template: parseTemplate(synthesizeTemplate()),
      stackName: STACK_NAME,
      handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    });
    blobs = new S3Blobs(local.clients.s3, local.outputs.PageBucketName!);
  });
  after(async () => {
    await local.stop();
    await site.close();
    await outsider.close();
  });

  it('a running crawl skips injected tasks outside its scope or deeper than --max-depth, unrequested', async () => {
    const crawlId = `run-${stamp}`;
    const config = parseCrawlConfig({
      crawlId,
      seeds: [`${site.origin}/`],
      allowPrivate: true,
      delayMs: 0,
      maxDepth: 0,
    });
    await submitCrawl(local, config);
    await send([task(crawlId, `${outsider.origin}/`), task(crawlId, `${site.origin}/hidden`, 9e15)]);
    await local.start();
    await local.waitForIdle({ timeoutMs: IDLE_MS });

    const byUrl = new Map((await readCrawlResults(blobs, crawlId)).map((line) => [line.url, line]));
    assert.equal(byUrl.get(`${outsider.origin}/`)?.outcome, 'skipped');
    assert.equal(byUrl.get(`${outsider.origin}/`)?.code, 'scope');
    assert.equal(byUrl.get(`${site.origin}/hidden`)?.outcome, 'skipped');
    assert.equal(byUrl.get(`${site.origin}/hidden`)?.code, 'depth');
    assert.equal(byUrl.get(`${site.origin}/`)?.outcome, 'fetched');
    assert.equal(outsider.hits.size, 0, 'the host outside the scope was never contacted');
    assert.equal(site.hits.get('/hidden'), undefined, 'the too-deep URL was never requested');
    const counters = await createFrontierStore(
      local.clients.dynamodb,
      local.outputs.FrontierTableName!,
    ).readCounters(crawlId);
    assert.equal(counters?.state, 'complete');
    assert.equal(counters?.done, byUrl.size, 'the injected URLs are counted like any other');
  });

  it('a finished crawl: tasks and results sent after its end change nothing and request nothing', async () => {
    const crawlId = `done-${stamp}`;
    const config = parseCrawlConfig({ crawlId, seeds: [`${site.origin}/`], allowPrivate: true, delayMs: 0 });
    await submitCrawl(local, config);
    await local.waitForIdle({ timeoutMs: IDLE_MS });
    const frontier = createFrontierStore(local.clients.dynamodb, local.outputs.FrontierTableName!);
    const results = await readCrawlResults(blobs, crawlId);
    const summary = new TextDecoder().decode(await blobs.get(summaryKey(crawlId)));
    const counters = await frontier.readCounters(crawlId);
    assert.equal(counters?.state, 'complete');
    const hitsBefore = new Map(site.hits);

    // A task out of its scope, one in scope it never had, and a forged result for a URL it never had.
    const forged: CrawlResult = { ...results[0]!, key: 'f'.repeat(64), url: `${site.origin}/forged` };
    await send([task(crawlId, `${outsider.origin}/`), task(crawlId, `${site.origin}/late`)]);
    await send([JSON.stringify(forged)], 'ResultsQueueUrl');
    await local.waitForIdle({ timeoutMs: IDLE_MS });

    assert.deepEqual(await readCrawlResults(blobs, crawlId), results, 'the index is unchanged');
    assert.equal(
      new TextDecoder().decode(await blobs.get(summaryKey(crawlId))),
      summary,
      'so is summary.json',
    );
    assert.deepEqual(await frontier.readCounters(crawlId), counters, 'and the counters');
    assert.equal(outsider.hits.size, 0);
    assert.deepEqual(site.hits, hitsBefore, 'nothing was requested');
  });

  it('a finished crawl, complete or cancelled: malformed tasks naming it go to the DLQ with why and change nothing', async () => {
    const frontier = createFrontierStore(local.clients.dynamodb, local.outputs.FrontierTableName!);
    const complete = `mal-${stamp}`;
    await submitCrawl(
      local,
      parseCrawlConfig({ crawlId: complete, seeds: [`${site.origin}/`], allowPrivate: true, delayMs: 0 }),
    );
    await local.start(); // (already started when the tests above ran)
    await local.waitForIdle({ timeoutMs: IDLE_MS });
    assert.equal((await frontier.readCounters(complete))?.state, 'complete');
    const cancelled = `malc-${stamp}`;
    await submitCrawl(
      local,
      parseCrawlConfig({ crawlId: cancelled, seeds: [`${site.origin}/`], allowPrivate: true, delayMs: 0 }),
    );
    assert.equal(
      (await cancelCrawl(local.clients.dynamodb, local.outputs.FrontierTableName!, cancelled)).status,
      'cancelled',
    );
    await local.waitForIdle({ timeoutMs: IDLE_MS });

    // The four of issue 22: a wrong version, a negative depth (for a URL the crawl has), a script URL,
    // and a URL of 250,000 characters.
    const malformed = (crawlId: string) => [
      JSON.stringify({ v: 2, crawlId, url: `${site.origin}/`, depth: 0 }),
      JSON.stringify({ v: 1, crawlId, url: `${site.origin}/a`, depth: -5 }),
      JSON.stringify({ v: 1, crawlId, url: 'javascript:alert(1)', depth: 0 }),
      JSON.stringify({ v: 1, crawlId, url: `${site.origin}/${'x'.repeat(250_000)}`, depth: 0 }),
    ];
    const before = new Map<string, unknown>();
    for (const crawlId of [complete, cancelled]) {
      const summary = (await blobs.exists(summaryKey(crawlId)))
        ? new TextDecoder().decode(await blobs.get(summaryKey(crawlId)))
        : undefined;
      const snapshot = {
        results: await readCrawlResults(blobs, crawlId),
        counters: await frontier.readCounters(crawlId),
        summary,
      };
      assert.ok(snapshot.results.length > 0, `${crawlId} has results`);
      before.set(crawlId, snapshot);
      for (const body of malformed(crawlId)) await send([body]);
    }
    await local.waitForIdle({ timeoutMs: IDLE_MS });

    for (const crawlId of [complete, cancelled]) {
      const results = await readCrawlResults(blobs, crawlId);
      const urls = results.map((line) => line.url);
      assert.equal(new Set(urls).size, urls.length, `${crawlId}: a URL has two result lines`);
      const summary = (await blobs.exists(summaryKey(crawlId)))
        ? new TextDecoder().decode(await blobs.get(summaryKey(crawlId)))
        : undefined;
      assert.deepEqual(
        { results, counters: await frontier.readCounters(crawlId), summary },
        before.get(crawlId),
        `${crawlId}: results, counters and summary.json are unchanged`,
      );
    }

    // Each is in the TaskDLQ, kept as sent, with its code and a reason that says why it has no result.
    const wanted = new Set([...malformed(complete), ...malformed(cancelled)]);
    const letters = new Map<string, Record<string, string>>();
    for (let round = 0; round < 20 && letters.size < wanted.size; round++) {
      const got = await local.clients.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: local.outputs.TaskDlqUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ['All'],
        }),
      );
      for (const letter of got.Messages ?? []) {
        if (!wanted.has(letter.Body ?? '')) continue;
        letters.set(
          letter.Body ?? '',
          Object.fromEntries(
            Object.entries(letter.MessageAttributes ?? {}).map(([name, value]) => [
              name,
              value.StringValue ?? '',
            ]),
          ),
        );
        await local.clients.sqs.send(
          new DeleteMessageCommand({
            QueueUrl: local.outputs.TaskDlqUrl,
            ReceiptHandle: letter.ReceiptHandle,
          }),
        );
      }
    }
    for (const [crawlId, state] of [
      [complete, 'complete'],
      [cancelled, 'cancelled'],
    ] as const) {
      const codes = malformed(crawlId).map((body) => {
        const letter = letters.get(body);
        assert.ok(letter, `${body.slice(0, 80)}… is in the DLQ`);
        assert.match(letter.reason ?? '', new RegExp(`crawl ${crawlId} is ${state}: no result`));
        return letter.code;
      });
      assert.deepEqual(codes, ['invalid-task', 'invalid-task', 'unsupported-scheme', 'url-too-long']);
    }
  });

  it('an unknown crawl id goes to the DLQ at once with its code and reason; a full-size body fits its DLQ copy', async () => {
    const unknown = `nosuch-${stamp}`;
    const target = `${site.origin}/unknown-target`;
    // A task exactly as large as the queue takes: its URL is far too long, so it is invalid.
    const skeleton = task('default', 'http://127.0.0.1/');
    const pad = 'a'.repeat(QUEUE.maxMessageSizeBytes - Buffer.byteLength(skeleton));
    const full = task('default', `http://127.0.0.1/${pad}`);
    assert.equal(Buffer.byteLength(full), QUEUE.maxMessageSizeBytes);
    const started = Date.now();
    await local.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: local.outputs.TaskQueueUrl, MessageBody: task(unknown, target) }),
    );
    await local.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: local.outputs.TaskQueueUrl, MessageBody: full }),
    );
    await local.waitForIdle({ timeoutMs: IDLE_MS });
    // Redrive by maxReceiveCount would take 5 × the 6-minute visibility timeout: this is "at once".
    assert.ok(Date.now() - started < 45_000, `took ${Date.now() - started} ms`);

    const dlq = await local.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: local.outputs.TaskDlqUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
      }),
    );
    const letters = dlq.Messages ?? [];
    const byCode = new Map(letters.map((letter) => [letter.MessageAttributes?.code?.StringValue, letter]));
    const unknownLetter = byCode.get('unknown-crawl');
    assert.ok(unknownLetter, `a letter with code unknown-crawl among ${[...byCode.keys()].join(', ')}`);
    assert.equal(unknownLetter.Body, task(unknown, target), 'kept as sent');
    assert.match(unknownLetter.MessageAttributes?.reason?.StringValue ?? '', new RegExp(unknown));
    assert.equal(site.hits.get('/unknown-target'), undefined, 'never requested');
    const parts: string[] = [];
    for await (const key of blobs.list(`results/${unknown}/`)) parts.push(key);
    assert.deepEqual(parts, [], 'no results for a crawl that does not exist');

    const bigLetter = letters.find((letter) => letter.Body?.startsWith(skeleton.slice(0, 20)));
    assert.ok(bigLetter, 'the full-size task is in the DLQ');
    const attributes = Object.fromEntries(
      Object.entries(bigLetter.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        value.StringValue ?? '',
      ]),
    );
    assert.equal(attributes.code, 'url-too-long');
    assert.equal(attributes.truncated, String(QUEUE.maxMessageSizeBytes), 'marked with its full length');
    assert.ok(full.startsWith(bigLetter.Body ?? '-'), 'cut, not changed');
    assert.ok(
      messageBytes({ body: bigLetter.Body ?? '', attributes }) <= QUEUE.maxMessageSizeBytes,
      'body and attributes fit the queue',
    );
  });
});
