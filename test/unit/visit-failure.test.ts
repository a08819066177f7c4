// A visit that fails part way (an AWS call that kept failing, e.g. a throttled Query) must still
// report what it did: the URLs it decided, whose results go out with the batch, and its pace. The
// host's release keeps them, so the next visit neither fetches those pages again nor comes too soon.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HostUrl, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { type VisitDecision, VisitFailedError, visitHost } from '../../lambdas/core/fetch/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { SyntheticWeb } from '../fixtures/synthetic-web.ts';

const CRAWL = 'visit-failure';
const HOST = 'h000.sim.test';
const DELAY_MS = 100;

function item(path: string): HostUrl {
  const normalized = normalizeUrl(`http://${HOST}${path}`);
  if (!normalized.ok) throw new Error(path);
  return { key: normalized.key, url: normalized.url, depth: 1, st: 'new' };
}

/** The host's URLs, served once; the next read fails as a throttled Query does after the SDK's retries. */
function failingSecondRead(items: HostUrl[]): MemoryFrontierUrls {
  const urls = new MemoryFrontierUrls();
  urls.seed(CRAWL, items);
  urls.faults.fail('page', {
    times: Number.POSITIVE_INFINITY,
    when: () => urls.faults.calls('page') > 1,
    error: () =>
      Object.assign(new Error('Throughput exceeds the current capacity'), {
        name: 'ProvisionedThroughputExceededException',
      }),
  });
  return urls;
}

describe('visitHost: a visit that fails part way', () => {
  it('reports the URLs it decided and its pace with the error', async () => {
    const web = new SyntheticWeb({ hosts: 1, pagesPerHost: 4, latencyMs: 5 });
    const items = ['/', '/p/1', '/p/2'].map(item);
    const crawl = parseCrawlConfig({
      crawlId: CRAWL,
      seeds: [`http://${HOST}/`],
      allowPrivate: true,
      delayMs: DELAY_MS,
      createdAt: new Date().toISOString(),
    });
    const decisions: VisitDecision[] = [];
    // The pages' links, admitted when the visit settles, wake the host: it reads the host again.
    let wakes = 0;
    const failure = await visitHost(
      { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: ['earlier'] },
      crawl,
      {
        fetcher: web,
        robots: new MemoryRobotsStore(),
        robotsCache: createRobotsCache(10),
        hostUrls: failingSecondRead(items),
        settle: async () => {
          wakes++;
        },
        wokenHere: () => wakes,
        deadline: Date.now() + 30_000,
        now: () => Date.now(),
        sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
      },
      (decision) => decisions.push(decision),
    ).then(
      () => assert.fail('the visit succeeded'),
      (error: unknown) => error,
    );
    assert.equal(decisions.length, 3, 'every page was decided before the failing read');
    assert.ok(failure instanceof VisitFailedError, String(failure));
    assert.equal((failure.cause as Error).name, 'ProvisionedThroughputExceededException');
    assert.deepEqual(
      [...failure.progress.inflight].sort(),
      ['earlier', ...items.map((url) => url.key)].sort(),
      'the decided URLs (and the earlier ones) are in flight',
    );
    const lastRequest = web.requests.at(-1)!.at;
    assert.ok(failure.progress.pace.nextAt >= lastRequest + DELAY_MS, 'the pace the visit kept');
  });
});
