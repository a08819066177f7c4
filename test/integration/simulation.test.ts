/**
 * A crawl of 200 hosts at default politeness, with the real handlers on the emulators and only the
 * network synthetic (test/fixtures/synthetic-web.ts: no sockets, 150 ms latency): the shape real
 * crawls have, at a host count loopback servers cannot give on one machine. It must end exact
 * (every page fetched once, robots.txt once per host, one result per URL, one summary). The gaps
 * between requests to one host, the rate against the politeness bound and the requests per page by
 * AWS operation are printed: the numbers behind docs/scale.md.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { readCrawlResults } from '../../lambdas/core/archive/index.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { diffSnapshots } from '../../lambdas/shared/aws-call-counter.ts';
import { requestsPerPage } from '../../lambdas/shared/aws-prices.ts';
import { summaryKey } from '../../lambdas/shared/contracts.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import type { LocalAws } from '../../local/local-aws.ts';
import { processMeters } from '../../local/process-meters.ts';
import { startSyntheticAws } from '../fixtures/synthetic-aws.ts';
import { SyntheticWeb } from '../fixtures/synthetic-web.ts';

const HOSTS = 200;
const PAGES_PER_HOST = 6;
const LATENCY_MS = 150;

describe('simulation: 200 hosts at default politeness, synthetic network', () => {
  const web = new SyntheticWeb({ hosts: HOSTS, pagesPerHost: PAGES_PER_HOST, latencyMs: LATENCY_MS });
  let local: LocalAws;
  let stop: () => Promise<void>;

  before(async () => {
    ({ local, stop } = await startSyntheticAws(web));
  });
  after(() => stop());

  it('ends exact', async (t) => {
    const config = parseCrawlConfig({ crawlId: `sim-${Date.now().toString(36)}`, seeds: web.seeds() });
    const pages = web.pages();
    // Time scales with the work: no crawl beats one request per host per delay (robots.txt, then the
    // pages); per-URL scheduling reaches about a third of that, less on a busy machine. Twenty times
    // it, plus start-up.
    const boundSeconds = (PAGES_PER_HOST + 1) * (config.delayMs / 1000);
    const from = processMeters.counter.snapshot();
    const started = Date.now();
    await submitCrawl(local, config);
    await local.start();
    await local.waitForIdle({ timeoutMs: 60_000 + 20 * 1000 * boundSeconds });
    const seconds = (Date.now() - started) / 1000;
    const counted = diffSnapshots(from, processMeters.counter.snapshot());

    // Exact: every page once, robots.txt once per host, nothing else.
    const perTarget = new Map<string, number>();
    for (const request of web.requests) {
      const target = `http://${request.host}${request.path}`;
      perTarget.set(target, (perTarget.get(target) ?? 0) + 1);
    }
    for (const page of pages) assert.equal(perTarget.get(page), 1, `${page} requested once`);
    for (const seed of web.seeds())
      assert.equal(perTarget.get(`${seed}robots.txt`), 1, `robots.txt of ${seed}`);
    assert.equal(web.requests.length, pages.length + HOSTS, 'no other request');

    const blobs = new S3Blobs(local.clients.s3, local.outputs.PageBucketName!);
    const results = await readCrawlResults(blobs, config.crawlId);
    assert.deepEqual(results.map((line) => line.url).sort(), [...pages].sort(), 'one result per page');
    assert.ok(results.every((line) => line.outcome === 'fetched'));
    const summary = JSON.parse(new TextDecoder().decode(await blobs.get(summaryKey(config.crawlId))));
    assert.equal(summary.done, pages.length);
    assert.equal(summary.state, 'complete');

    // Polite: per host, consecutive requests (robots.txt included) at least the delay apart. Measured
    // and reported, not yet asserted: per-URL slot reservations let a request that leaves late crowd
    // the next slot's holder on a busy machine; host visits pace each host in one place
    // (docs/design/host-visits.md), and then this becomes an assertion.
    const gaps = [...Map.groupBy(web.requests, (request) => request.host).values()].flatMap((requests) => {
      const times = requests.map((request) => request.at).sort((a, b) => a - b);
      return times.slice(1).map((at, i) => at - times[i]!);
    });
    const minGap = Math.min(...gaps);
    const short = gaps.filter((gap) => gap < config.delayMs).length;

    const rate = pages.length / seconds;
    const bound = HOSTS / (config.delayMs / 1000);
    t.diagnostic(
      `${pages.length} pages on ${HOSTS} hosts in ${seconds.toFixed(1)} s: ${rate.toFixed(1)} pages/s, ` +
        `${(rate / bound).toFixed(2)}x the politeness bound (${bound}/s); min gap per host ${minGap} ms, ` +
        `${short} of ${gaps.length} gaps under the ${config.delayMs} ms delay`,
    );
    t.diagnostic(`AWS requests per page: ${JSON.stringify(requestsPerPage(counted, pages.length))}`);
  });
});
