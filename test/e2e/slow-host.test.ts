// A slow host under a short function timeout, through the local runtime (real handlers in worker
// threads, whose timeouts are enforced): every request of the host takes most of its deadline, so
// robots.txt and a page cannot both fit in one invocation. The fetch handler must stop starting
// requests in time and hand the host back, so that no invocation times out, every URL ends with
// exactly one result, and nothing reaches a DLQ.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import type { InvocationReport } from '../../local/event-source-poller.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';

/** The fetch function's timeout here; its deadline for requests is 3/4 of it (the rest is for sends). */
const TIMEOUT_S = 10;
/** Each request's total deadline; a request needs it + 1 s before the function's deadline. */
const TOTAL_TIMEOUT_MS = 6_000;
/** How long the host takes to answer anything: two answers do not fit in one invocation. */
const ANSWER_MS = 5_000;
const PAGES = ['/', '/a', '/b'];

interface SlowSite {
  origin: string;
  requests: string[];
  close(): Promise<void>;
}

async function startSlowSite(): Promise<SlowSite> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    setTimeout(() => {
      if (req.url === '/robots.txt') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      } else if (PAGES.includes(req.url ?? '')) {
        const links = req.url === '/' ? '<a href="/a">a</a> <a href="/b">b</a>' : '';
        res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body>${links}</body></html>`);
      } else {
        res.writeHead(404).end();
      }
    }, ANSWER_MS);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.2:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('a slow host under a short function timeout', () => {
  let site: SlowSite;
  let local: LocalAws;
  const reports: InvocationReport[] = [];

  before(async () => {
    site = await startSlowSite();
    const template = parseTemplate(synthesizeTemplate());
    const fetchFn = template.Resources.FetchFunction!;
    fetchFn.Properties = { ...fetchFn.Properties, Timeout: TIMEOUT_S };
    // As the stack derives it: 6x the consumer's timeout + its batching window (cdk/queue-with-dlq.ts).
    const taskQueue = template.Resources.TaskQueue!;
    taskQueue.Properties = { ...taskQueue.Properties, VisibilityTimeout: 6 * TIMEOUT_S + 1 };
    local = await startLocalAws({
      template,
      stackName: STACK_NAME,
      handlerEnvOverrides: { LOG_LEVEL: 'silent' },
      log: () => {},
      onInvocation: (report) => reports.push(report),
    });
  });
  after(async () => {
    await local?.stop();
    await site?.close();
  });

  it('loses nothing, sends nothing to a DLQ, and no invocation times out', { timeout: 240_000 }, async () => {
    const config = parseCrawlConfig({
      crawlId: `slow-${Date.now().toString(36)}`,
      seeds: [`${site.origin}/`],
      allowPrivate: true,
      delayMs: 0,
      limits: { totalTimeoutMs: TOTAL_TIMEOUT_MS },
    });
    await submitCrawl(local, config);
    await local.start();
    await local.waitForIdle({ timeoutMs: 200_000 });

    const timedOut = reports.filter((report) => report.outcome !== 'success' && report.outcome !== 'partial');
    assert.deepEqual(
      timedOut.map((report) => `${report.functionLogicalId}: ${report.outcome} ${String(report.error)}`),
      [],
      'every invocation ended in time',
    );
    for (const dlq of ['TaskDlqUrl', 'ResultsDlqUrl']) {
      const out = await local.clients.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: local.outputs[dlq]!,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      assert.equal(Number(out.Attributes?.ApproximateNumberOfMessages), 0, `${dlq} is empty`);
      assert.equal(Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible), 0, `${dlq} is empty`);
    }
    // Every URL has exactly one line in the index (as stored, not deduplicated by a reader).
    const blobs = new S3Blobs(local.clients.s3, local.outputs.PageBucketName!);
    const lines: Array<{ url: string; outcome: string; attempt?: number }> = [];
    for await (const key of blobs.list(`results/${config.crawlId}/`))
      for (const line of gunzipSync(await blobs.get(key))
        .toString('utf8')
        .split('\n'))
        if (line !== '') lines.push(JSON.parse(line) as { url: string; outcome: string; attempt?: number });
    assert.deepEqual(
      lines.map((line) => line.url).sort(),
      PAGES.map((path) => `${site.origin}${path}`).sort(),
    );
    const counters = await createFrontierStore(
      local.clients.dynamodb,
      local.outputs.FrontierTableName!,
    ).readCounters(config.crawlId);
    assert.equal(counters?.state, 'complete');
    assert.equal(counters?.done, PAGES.length);
    // Each page requested as many times as its result counts attempts: nothing was fetched again
    // after a lost invocation. (On a loaded machine an answer may come after the request's deadline:
    // that attempt is retried, as it should be, and its result says so.)
    const attempts = Object.fromEntries(
      lines.map((line) => [new URL(line.url).pathname, line.attempt ?? 1] as const),
    );
    const requested = Object.fromEntries(
      PAGES.map((path) => [path, site.requests.filter((request) => request === path).length] as const),
    );
    assert.deepEqual(requested, attempts, 'requests of each page vs the attempts its result counts');
    assert.deepEqual(
      site.requests.filter((path) => path !== '/robots.txt' && !PAGES.includes(path)),
      [],
      'nothing else requested',
    );
  });
});
