// One path per URL: a visit hands each stored URL, with the crawl's config it holds, straight to the
// per-URL step (fetch-task.ts fetchUrl). Nothing is read again per URL, and the host's pace for a
// page, a Crawl-delay that robots.txt just asked for included, is kept within the same round.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type CrawlConfig,
  type CrawlConfigReader,
  type HostUrl,
  type HostUrlStore,
  type PageFetcher,
  type PageRequest,
  type PageResponse,
  parseCrawlConfig,
} from '../../lambdas/core/crawl/index.ts';
import { visitHost } from '../../lambdas/core/fetch/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { syntheticResponse } from '../fakes/page-response.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { steppingClock } from '../fixtures/stepping-clock.ts';

const CRAWL = 'url-step';
const HOST = 'paced.sim.test';

function config(delayMs: number): CrawlConfig {
  return parseCrawlConfig({
    crawlId: CRAWL,
    seeds: [`http://${HOST}/`],
    allowPrivate: true,
    delayMs,
    limits: { totalTimeoutMs: 2_000 },
    createdAt: new Date().toISOString(),
  });
}

function item(path: string): HostUrl {
  const normalized = normalizeUrl(`http://${HOST}${path}`);
  if (!normalized.ok) throw new Error(path);
  return { key: normalized.key, url: normalized.url, depth: 1, st: 'new' };
}

/** A host whose robots.txt asks for `crawlDelay` seconds; every request is recorded with its start. */
/** The visits' clock: a crawl delay is waited in virtual time (test/fixtures/stepping-clock.ts). */
const clock = steppingClock();

class PacedHost implements PageFetcher {
  readonly requests: Array<{ path: string; at: number }> = [];
  private readonly crawlDelay: number | undefined;
  constructor(crawlDelay?: number) {
    this.crawlDelay = crawlDelay;
  }
  async fetch(request: PageRequest): Promise<PageResponse> {
    const at = clock.now();
    const path = request.url.pathname;
    this.requests.push({ path, at });
    const robots = path === '/robots.txt';
    const text = robots
      ? `User-agent: *\nAllow: /\n${this.crawlDelay === undefined ? '' : `Crawl-delay: ${this.crawlDelay}\n`}`
      : '<p>page</p>';
    return syntheticResponse(request, {
      contentType: robots ? 'text/plain' : 'text/html',
      body: text,
      at,
      elapsedMs: 1,
    });
  }
}

/** The host's partition, counting its pages read (one Query each on DynamoDB). */
function partition(items: HostUrl[]): HostUrlStore & { reads: number } {
  const urls = new MemoryFrontierUrls();
  urls.seed(CRAWL, items);
  const store = {
    reads: 0,
    page: (crawlId: string, host: string, after: string | undefined, limit: number) => {
      store.reads++;
      return urls.page(crawlId, host, after, limit);
    },
    get: urls.get.bind(urls),
    postpone: urls.postpone.bind(urls),
  };
  return store;
}

function deps(fetcher: PageFetcher, hostUrls: HostUrlStore) {
  return {
    fetcher,
    robots: new MemoryRobotsStore(),
    robotsCache: createRobotsCache(10),
    hostUrls,
    deadline: clock.now() + 60_000,
    now: clock.now,
    sleep: clock.sleep,
  };
}

const start = { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] };

describe('a visit hands each stored URL to the per-URL step', () => {
  it("does not read the crawl's config again for any URL: the visit's own is used", async () => {
    const host = new PacedHost();
    const crawl = config(0);
    let reads = 0;
    const configs: CrawlConfigReader = {
      get: async () => {
        reads++;
        return crawl;
      },
    };
    const urls = partition(['/a', '/b', '/c', '/d'].map(item));
    const decided: string[] = [];
    // Offered to the visit as the batch offers it every dep it has (fetch-batch.ts).
    const offered = { ...deps(host, urls), configs };
    const report = await visitHost(start, crawl, offered, (decision) =>
      decided.push(decision.kind === 'captured' ? decision.page.result.url : decision.result.url),
    );
    assert.equal(decided.length, 4);
    assert.equal(report.decided, 4);
    assert.equal(reads, 0, 'the config was read again per URL');
  });

  it('a Crawl-delay that robots.txt asks for holds the first page back once, in the same round', async () => {
    // robots.txt asks for 3 s, more than the crawl's 1 s and more than a wait a slot may take (2 s):
    // the page waits exactly the Crawl-delay after robots.txt, and the host's URLs are read once.
    const host = new PacedHost(3);
    const urls = partition([item('/a')]);
    const crawl = config(1_000);
    const decided: string[] = [];
    const report = await visitHost(start, crawl, deps(host, urls), (decision) => decided.push(decision.kind));
    assert.deepEqual(
      host.requests.map((request) => request.path),
      ['/robots.txt', '/a'],
    );
    const gap = host.requests[1]!.at - host.requests[0]!.at;
    assert.ok(gap >= 3_000, `the page left ${gap} ms after robots.txt, inside its Crawl-delay`);
    assert.ok(gap < 6_000, `the page left ${gap} ms after robots.txt: a second Crawl-delay was waited`);
    assert.deepEqual(decided, ['captured']);
    assert.equal(report.end.kind, 'hand-back', 'its result is awaited');
    // Once: neither the Crawl-delay nor the page's pending result makes the visit read them again.
    assert.equal(urls.reads, 1, "the host's URLs were read again for the page");
  });
});
