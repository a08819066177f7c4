// The aggregate function on the emulators, provisioned from the real stack template: result messages
// go to the ResultsQueue, only the aggregate event source runs (the real handler, the real DynamoDB
// frontier store, S3). The fetch side is played by the test the way it now works (docs/frontier.md):
// URLs are admitted into their host's partition and the host woken; once their results are finalized
// a visit drains the host (its DONE# tally, the host item deleted) and sends a `drained` record, and
// only then may the crawl complete. Checks one index line per URL, exact counters, completion once
// with its summary, duplicates dropped, malformed messages in the ResultsDLQ, the crash window
// between finalize and the index part (a redelivered message writes the line), and what becomes of a
// result for a URL the frontier never admitted.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  ChangeMessageVisibilityCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { createFrontierStore, type FrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { readCrawlResults, WarcFileBuilder } from '../../lambdas/core/archive/index.ts';
import type { DrainedRecord } from '../../lambdas/core/batches/index.ts';
import { addToTally, emptyTally, frontierHost, type HostTally } from '../../lambdas/core/crawl/index.ts';
import { type CrawlResult, resultId, resultMessageBodies } from '../../lambdas/core/results/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { resultPartKey, STACK_NAME, summaryKey } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import type { InvocationReport } from '../../local/event-source-poller.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { allUrls } from '../fixtures/host-urls.ts';

const AGGREGATE = 'AggregateFunction';
let aws: LocalAws;
let frontier: FrontierStore;
let blobs: S3Blobs;
let resultsQueue: string;
let resultsDlq: string;
let started = false;
const reports: InvocationReport[] = [];

before(async () => {
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    log: () => {},
    onInvocation: (report) => reports.push(report),
  });
  frontier = createFrontierStore(aws.clients.dynamodb, aws.outputs.FrontierTableName!);
  blobs = new S3Blobs(aws.clients.s3, aws.outputs.PageBucketName!);
  resultsQueue = aws.outputs.ResultsQueueUrl!;
  resultsDlq = aws.outputs.ResultsDlqUrl!;
});
after(() => aws?.stop());

/** Starts only the aggregate function's event source (the fetch side is not under test here). */
async function runAggregate(): Promise<void> {
  if (!started) {
    const pollers = aws.pollers.filter((p) => p.eventSource.functionLogicalId === AGGREGATE);
    assert.equal(pollers.length, 1);
    await Promise.all(pollers.map((p) => p.start()));
    started = true;
  }
  await aws.waitForIdle({ timeoutMs: 60_000 });
  const broken = reports.filter((r) => r.error !== undefined);
  assert.deepEqual(
    broken.map((r) => String(r.error)),
    [],
    'no invocation threw',
  );
}

async function send(bodies: string[]): Promise<void> {
  for (let i = 0; i < bodies.length; i += 10) {
    const out = await aws.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: resultsQueue,
        Entries: bodies.slice(i, i + 10).map((body, j) => ({ Id: String(j), MessageBody: body })),
      }),
    );
    assert.deepEqual(out.Failed ?? [], []);
  }
}

async function depth(queueUrl: string): Promise<number> {
  const out = await aws.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

/** Every line of every index part of the crawl, as stored (not deduplicated like readers do). */
async function storedLines(crawlId: string): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  for await (const key of blobs.list(`results/${crawlId}/`))
    for (const line of gunzipSync(await blobs.get(key))
      .toString('utf8')
      .split('\n'))
      if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
  return lines;
}

interface Page {
  path: string;
  status: number;
  body: string;
}

/**
 * A crawl as the fetch side leaves it: URLs admitted into their host's partition (the skipped ones
 * `held`, as link admission does), queued, their host woken (the ticket is the visit message's), one
 * WARC file, one result per URL.
 */
async function fetchedCrawl(pages: Page[], skipped: string[] = []) {
  const crawlId = `agg-${randomUUID().slice(0, 8)}`;
  const origin = 'http://site.test';
  const url = (raw: string, depth: number, held: boolean) => {
    const n = normalizeUrl(raw);
    assert.ok(n.ok);
    return { url: n.url, key: n.key, depth, ...(held ? { held } : {}) };
  };
  const urls = [
    ...pages.map((p) => url(`${origin}${p.path}`, 0, false)),
    ...skipped.map((p) => url(`${origin}${p}`, 1, true)),
  ];
  const { admitted } = await frontier.admit(crawlId, 'seed', urls);
  assert.equal(admitted.length, urls.length);
  assert.ok(admitted.every((a) => a.fresh));
  await frontier.addQueued(crawlId, urls.length);
  const host = frontierHost(origin);
  assert.ok(urls.every((u) => frontierHost(u.url) === host));
  const ticket = await frontier.wake(crawlId, host, Date.now());
  assert.ok(ticket, 'the first wake of a new host sends its visit');

  const warcKey = `warc/${crawlId}/2024-05-01/test.warc.gz`;
  const builder = new WarcFileBuilder({ filename: 'test.warc.gz' });
  builder.addWarcinfo({ software: 'test' });
  const results: CrawlResult[] = pages.map((page, i) => {
    const url = urls[i]!;
    const body = new TextEncoder().encode(page.body);
    const written = builder.addResponse({
      targetUri: url.url,
      date: new Date(),
      httpVersion: '1.1',
      status: page.status,
      statusText: page.status === 200 ? 'OK' : 'Error',
      headers: [['Content-Type', 'text/html; charset=utf-8']],
      body,
    });
    return {
      v: 1,
      crawlId,
      key: url.key,
      url: url.url,
      finalUrl: url.url,
      status: page.status,
      outcome: page.status === 200 ? 'fetched' : 'failed',
      ...(page.status === 200 ? {} : { code: `http-${page.status}`, reason: `HTTP ${page.status}` }),
      contentType: 'text/html; charset=utf-8',
      bytes: body.byteLength,
      sha1: written.payloadSha1Hex,
      warc: { key: warcKey, offset: written.offset, length: written.length },
      fetchedAt: new Date().toISOString(),
      ms: 3,
      depth: 0,
      outlinks: 0,
    };
  });
  for (const [j, path] of skipped.entries()) {
    const url = urls[pages.length + j]!;
    results.push({
      v: 1,
      crawlId,
      key: url.key,
      url: url.url,
      outcome: 'skipped',
      code: 'out-of-scope',
      reason: `${path} is out of scope`,
      bytes: 0,
      fetchedAt: new Date().toISOString(),
      ms: 0,
      depth: 1,
      outlinks: 0,
    });
  }
  await blobs.put(warcKey, builder.toBytes(), 'application/warc');
  return { crawlId, host, ticket, results };
}

/**
 * The visit that finds every URL of the host finalized (docs/frontier.md, "Ending a visit"): it takes
 * the host with the ticket its wake sent, reads the partition, writes the DONE# tally and deletes the
 * host item, then sends the `drained` record to the results queue. (It stands in for the visits that
 * fetched the URLs and handed the host back: their releases and tickets are not under test here.)
 */
async function drainHost(crawlId: string, host: string, ticket: string): Promise<HostTally> {
  const now = Date.now();
  const holder = `visit-${randomUUID().slice(0, 8)}`;
  const lease = await frontier.acquire(crawlId, host, holder, now + 60_000, now, ticket);
  assert.ok(!('busy' in lease), `the visit takes the host: ${JSON.stringify(lease)}`);
  const urls = await allUrls(frontier, crawlId, host);
  assert.deepEqual(
    urls.filter((u) => u.st !== 'done').map((u) => u.url),
    [],
    'every URL of the host is finalized',
  );
  const tally = urls.reduce(addToTally, emptyTally());
  assert.equal(
    await frontier.drain(crawlId, host, holder, lease.wake, tally, { nextAt: lease.nextAt }),
    true,
    'the host is drained',
  );
  const record: DrainedRecord = { v: 1, kind: 'drained', crawlId };
  await send([JSON.stringify(record)]);
  return tally;
}

/** Results alone do not complete a crawl while its host is active: no summary yet. */
async function assertRunning(crawlId: string): Promise<void> {
  assert.equal(await frontier.anyActive(crawlId), true, 'the host is still active');
  assert.equal((await frontier.readCounters(crawlId))?.state, 'running');
  assert.equal(await blobs.exists(summaryKey(crawlId)), false);
}

describe('aggregate function on the emulators', () => {
  it('a result redelivered after a crash between finalize and the index part gets its line', async () => {
    // Runs first: the aggregate event source must not be polling yet while this test plays the crashed invocation.
    assert.equal(started, false);
    const { crawlId, host, ticket, results } = await fetchedCrawl([
      { path: '/x', status: 200, body: 'x' },
      { path: '/y', status: 200, body: 'yy' },
    ]);
    const [x, y] = results as [CrawlResult, CrawlResult];
    // The crashed invocation: received x, finalized it, died before writing the part or the counters.
    await send([JSON.stringify(x)]);
    const received = await aws.clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: resultsQueue, MaxNumberOfMessages: 1, WaitTimeSeconds: 1 }),
    );
    const message = received.Messages?.[0];
    assert.ok(message?.ReceiptHandle && message.Body);
    const lostPart = resultPartKey(crawlId, new Date(), 'crashed');
    assert.deepEqual(
      await frontier.finalize(crawlId, {
        key: x.key,
        url: x.url,
        outcome: x.outcome,
        bytes: x.bytes,
        requests: 1,
        rid: resultId(message.Body),
        part: lostPart,
      }),
      { won: true, repeat: false, created: false, part: lostPart },
    );
    // Its visibility timeout runs out (made immediate here): SQS redelivers with a receive count of 2.
    await aws.clients.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: resultsQueue,
        ReceiptHandle: message.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    await send([JSON.stringify(y)]);
    await runAggregate();
    await assertRunning(crawlId);

    // The visit finds both finalized: x points at the part its redelivery wrote, not the lost one.
    const tally = await drainHost(crawlId, host, ticket);
    assert.equal(tally.total, 2);
    assert.equal(tally.parts.includes(lostPart), false);
    await runAggregate();

    const lines = await readCrawlResults(blobs, crawlId);
    assert.deepEqual(lines.map((l) => l.url).sort(), [x.url, y.url]);
    assert.equal(await blobs.exists(lostPart), false, "the crashed invocation's part was never written");
    const counters = await frontier.readCounters(crawlId);
    assert.equal(counters?.state, 'complete');
    assert.equal(counters?.queued, 2);
    assert.equal(counters?.done, 2);
    assert.equal(counters?.bytes, 3);
    assert.equal(counters?.requests, 2);
    const summary = JSON.parse(new TextDecoder().decode(await blobs.get(summaryKey(crawlId))));
    assert.equal(summary.done, 2);
  });

  it('indexes each URL once, counts exactly, completes once and writes the summary', async () => {
    const pages: Page[] = [
      { path: '/', status: 200, body: '<html>home</html>' },
      { path: '/a', status: 200, body: '<html>a</html>' },
      { path: '/b', status: 500, body: 'oops' },
    ];
    const { crawlId, host, ticket, results } = await fetchedCrawl(pages, ['/out']);
    const bodies = results.map((r) => JSON.stringify(r));
    // The same record sent twice, another result for /a (the URL fetched twice; same numbers, so
    // whichever wins the counters are the same) and a malformed message, in the same stream.
    const refetched = JSON.stringify({
      ...results[1]!,
      fetchedAt: new Date(Date.now() + 1000).toISOString(),
    });
    await send([...bodies, bodies[1]!, refetched, '{"not":"a result"}']);
    await runAggregate();
    await assertRunning(crawlId);
    assert.equal((await drainHost(crawlId, host, ticket)).total, 4);
    await runAggregate();

    const lines = await readCrawlResults(blobs, crawlId);
    assert.deepEqual(lines.map((l) => l.url).sort(), results.map((r) => r.url).sort());
    // Every stored line of /a is of one result (the same record's repeat may be stored twice).
    const storedA = (await storedLines(crawlId)).filter((line) => line.url === results[1]!.url);
    assert.ok(storedA.length >= 1);
    assert.equal(new Set(storedA.map((line) => line.fetchedAt)).size, 1, 'one result of /a, never both');
    let stored = 0;
    for await (const _ of blobs.list(`results/${crawlId}/`)) stored++;
    assert.ok(stored >= 1);

    const counters = await frontier.readCounters(crawlId);
    assert.equal(counters?.state, 'complete');
    assert.equal(counters?.queued, 4);
    assert.equal(counters?.done, 4);
    assert.deepEqual(
      Object.fromEntries(Object.entries(counters?.byOutcome ?? {}).filter(([, n]) => n !== 0)),
      { fetched: 2, failed: 1, skipped: 1 },
    );
    assert.equal(
      counters?.bytes,
      pages.reduce((sum, p) => sum + Buffer.byteLength(p.body), 0),
    );
    assert.equal(counters?.requests, 3);

    const summary = JSON.parse(new TextDecoder().decode(await blobs.get(summaryKey(crawlId))));
    assert.equal(summary.crawlId, crawlId);
    assert.equal(summary.state, 'complete');
    assert.equal(summary.done, 4);
    assert.equal(summary.byOutcome.fetched, 2);
    assert.equal(summary.requests, 3);
    assert.equal(summary.endedAt, counters?.endedAt);
    assert.equal(typeof summary.pagesPerSecond, 'number');

    assert.equal(await depth(resultsDlq), 1, 'the malformed message is parked in the ResultsDLQ');
    assert.equal(await depth(resultsQueue), 0);

    // The same result once more, after completion: nothing changes.
    const summaryBefore = await blobs.get(summaryKey(crawlId));
    await send([bodies[0]!]);
    await runAggregate();
    assert.deepEqual(await frontier.readCounters(crawlId), counters);
    assert.equal((await readCrawlResults(blobs, crawlId)).length, 4);
    assert.deepEqual(await blobs.get(summaryKey(crawlId)), summaryBefore);
  });

  it('a result for a URL the frontier never admitted is indexed and counted, but no visit drains its host: the crawl stays running', async () => {
    // Not something the crawler sends (every result of its own has its URL admitted first): a record
    // put on the ResultsQueue by hand. Finalize creates the URL item, done, in its host's partition,
    // but nothing wakes the host, so no visit drains it and no DONE# tally counts it.
    const crawlId = `agg-${randomUUID().slice(0, 8)}`;
    const url = 'http://bare.test/';
    const result: CrawlResult = {
      v: 1,
      crawlId,
      key: createHash('sha256').update(url).digest('hex'),
      url,
      outcome: 'invalid',
      code: 'invalid-task',
      reason: 'test',
      bytes: 0,
      fetchedAt: new Date().toISOString(),
      ms: 0,
      depth: 0,
      outlinks: 0,
    };
    await send([JSON.stringify(result)]);
    await runAggregate();

    assert.equal((await readCrawlResults(blobs, crawlId)).length, 1, 'indexed');
    const items = await allUrls(frontier, crawlId, frontierHost(url));
    assert.deepEqual(
      items.map((item) => [item.key, item.st, item.outcome, item.depth]),
      [[result.key, 'done', 'invalid', 0]],
      'created done under its host',
    );
    assert.equal(await frontier.anyActive(crawlId), false, 'its host was never woken');
    assert.equal((await frontier.doneTotals(crawlId)).total, 0, 'no drained host counts it');
    // The counters (hints) count it as queued and done; completion never confirms them.
    const counters = await frontier.readCounters(crawlId);
    assert.equal(counters?.queued, 1);
    assert.equal(counters?.done, 1);
    assert.equal(counters?.state, 'running');

    // A drained record of the crawl (as a visit of another of its hosts would send) completes nothing.
    const record: DrainedRecord = { v: 1, kind: 'drained', crawlId };
    await send([JSON.stringify(record)]);
    await runAggregate();
    assert.equal((await frontier.readCounters(crawlId))?.state, 'running');
    assert.equal(await blobs.exists(summaryKey(crawlId)), false, 'no summary');
    assert.equal(await depth(resultsQueue), 0);
  });

  it("a flush's records packed in one message and a bare record left from before the upgrade are indexed once each; a packed message with a bad record goes to the ResultsDLQ whole", async () => {
    const { crawlId, host, ticket, results } = await fetchedCrawl(
      [
        { path: '/', status: 200, body: '<html>home</html>' },
        { path: '/a', status: 200, body: '<html>a</html>' },
        { path: '/b', status: 500, body: 'oops' },
      ],
      ['/out'],
    );
    const [first, ...rest] = results as [CrawlResult, ...CrawlResult[]];
    const parked = await depth(resultsDlq);
    // As the fetch function sends them (one message), the same records again in a message with a
    // record that breaks the schema, and the first record as versions before this one sent it.
    const packed = resultMessageBodies(rest);
    assert.equal(packed.length, 1);
    await send(packed);
    const broken = JSON.stringify({
      v: 1,
      kind: 'results',
      crawlId,
      results: [rest[0], { ...rest[1], outcome: 'nope' }],
    });
    await send([JSON.stringify(first), broken]);
    await runAggregate();
    await assertRunning(crawlId);
    assert.equal((await drainHost(crawlId, host, ticket)).total, 4);
    await runAggregate();

    const lines = await readCrawlResults(blobs, crawlId);
    assert.deepEqual(lines.map((l) => l.url).sort(), results.map((r) => r.url).sort());
    const counters = await frontier.readCounters(crawlId);
    assert.equal(counters?.state, 'complete');
    assert.equal(counters?.done, 4);
    assert.equal(counters?.requests, 3);
    assert.equal(await depth(resultsDlq), parked + 1, 'the broken message is parked, whole');
    assert.equal(await depth(resultsQueue), 0);
  });
});
