import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADDRESS_BLOCKED, PermanentError } from '../../lambdas/core/base/index.ts';
import {
  type CrawlConfig,
  type HostUrl,
  type HostUrlStore,
  type PageFetcher,
  type PageRequest,
  type PageResponse,
  parseCrawlConfig,
} from '../../lambdas/core/crawl/index.ts';
import { type VisitDecision, visitHost } from '../../lambdas/core/fetch/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { SyntheticWeb } from '../fixtures/synthetic-web.ts';

const CRAWL = 'visit-test';
const HOST = 'h000.sim.test';

function config(delayMs: number, totalTimeoutMs = 2_000) {
  return parseCrawlConfig({
    crawlId: CRAWL,
    seeds: [`http://${HOST}/`],
    allowPrivate: true,
    delayMs,
    limits: { totalTimeoutMs },
    createdAt: new Date().toISOString(),
  });
}

function item(path: string, extra: Partial<HostUrl> = {}): HostUrl {
  const normalized = normalizeUrl(`http://${HOST}${path}`);
  if (!normalized.ok) throw new Error(path);
  return { key: normalized.key, url: normalized.url, depth: 1, st: 'new', ...extra };
}

/** The host's partition as an earlier admission left it (retries are recorded in `postponed`). */
function partition(items: HostUrl[]): MemoryFrontierUrls {
  const urls = new MemoryFrontierUrls();
  urls.seed(CRAWL, items);
  return urls;
}

function deps(fetcher: PageFetcher, hostUrls: HostUrlStore, deadline: number, crawl: CrawlConfig) {
  return {
    fetcher,
    configs: { get: async () => crawl },
    robots: new MemoryRobotsStore(),
    robotsCache: createRobotsCache(10),
    hostUrls,
    deadline,
    now: () => Date.now(),
    sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  };
}

/** One request at a time, each at least the delay after the last one started. */
function assertPolite(web: SyntheticWeb, delayMs: number) {
  const times = web.requests.map((request) => request.at);
  for (let i = 1; i < times.length; i++)
    assert.ok(times[i]! - times[i - 1]! >= delayMs, `gap ${times[i]! - times[i - 1]!} ms < ${delayMs} ms`);
}

describe('visitHost: a visit owns its host and paces it in memory', () => {
  it('fetches robots.txt and every ready URL, each the delay after the last, and drains once results are in', async () => {
    const web = new SyntheticWeb({ hosts: 1, pagesPerHost: 8, latencyMs: 20 });
    const items = ['/', '/p/1', '/p/2', '/p/3'].map((path) => item(path));
    const urls = partition(items);
    const decisions: VisitDecision[] = [];
    const crawl = config(150);
    const start = { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] };
    const first = await visitHost(start, crawl, deps(web, urls, Date.now() + 30_000, crawl), (d) =>
      decisions.push(d),
    );
    // URLs of one depth in the order the host's partition lists them (a Query's: by key).
    const byKey = items.toSorted((a, b) => (a.key < b.key ? -1 : 1)).map((url) => new URL(url.url).pathname);
    assert.deepEqual(
      web.requests.map((request) => request.path),
      ['/robots.txt', ...byKey],
    );
    assertPolite(web, 150);
    assert.equal(decisions.length, 4);
    // Results sent, not yet finalized: the host waits for them rather than fetching them again.
    assert.equal(first.end.kind, 'hand-back');
    assert.equal(first.inflight.length, 4);
    assert.ok(first.pace.nextAt >= web.requests.at(-1)!.at + 150, 'the pace is saved for the next visit');

    await urls.finalizeHost(CRAWL, HOST, 1);
    const second = await visitHost(
      { ...start, pace: first.pace, inflight: first.inflight },
      crawl,
      deps(web, urls, Date.now() + 30_000, crawl),
      (d) => decisions.push(d),
    );
    assert.equal(second.end.kind, 'drained');
    assert.deepEqual(second.inflight, []);
    assert.equal(web.requests.length, 5, 'nothing fetched twice');
  });

  it('hands the host back before the deadline, with the URLs it has not reached', async () => {
    const web = new SyntheticWeb({ hosts: 1, pagesPerHost: 20, latencyMs: 10 });
    const urls = partition(Array.from({ length: 10 }, (_, i) => item(`/p/${i + 1}`)));
    const crawl = config(300, 500);
    const started = Date.now();
    // Room for robots.txt and about three pages at 300 ms (each needs its 500 ms deadline + 1 s margin free).
    const report = await visitHost(
      { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] },
      crawl,
      deps(web, urls, started + 2_500, crawl),
      () => {},
    );
    assert.equal(report.end.kind, 'hand-back');
    assert.ok(report.end.kind === 'hand-back' && report.end.why === 'deadline');
    assert.ok(Date.now() <= started + 2_500, 'no request outlived the deadline');
    const pages = web.requests.filter((request) => request.path !== '/robots.txt').length;
    assert.ok(pages >= 1 && pages < 10, `${pages} pages`);
    assert.equal(report.inflight.length, pages);
    assert.ok(report.end.kind === 'hand-back' && report.end.visitAt >= report.pace.nextAt - 1);
    assertPolite(web, 300);
  });

  it('a failing URL is postponed on its item and the visit goes on with the others', async () => {
    const failing: PageFetcher = {
      async fetch(request: PageRequest): Promise<PageResponse> {
        const response = await new SyntheticWeb({ hosts: 1, pagesPerHost: 4, latencyMs: 1 }).fetch(request);
        return request.url.pathname === '/p/1'
          ? { ...response, status: 503, statusText: 'Unavailable' }
          : response;
      },
    };
    const urls = partition([item('/p/1'), item('/p/2')]);
    const decisions: VisitDecision[] = [];
    const crawl = config(0);
    const report = await visitHost(
      { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] },
      crawl,
      deps(failing, urls, Date.now() + 30_000, crawl),
      (d) => decisions.push(d),
    );
    assert.equal(urls.postponed.length, 1);
    assert.equal(urls.postponed[0]?.attempts, 1);
    assert.equal(decisions.length, 1, 'the other URL was fetched');
    assert.ok(report.end.kind === 'hand-back' && report.end.visitAt >= urls.postponed[0]!.retryAt - 5_000);
  });
});

describe('visitHost: a host the address guard refuses', () => {
  it('decides every URL at once: a request refused before dialing owes the host no delay', async () => {
    // The guard's answer for a name that resolves to loopback, for robots.txt and every page alike.
    let dials = 0;
    const refusing: PageFetcher = {
      async fetch(request: PageRequest): Promise<PageResponse> {
        dials++;
        throw new PermanentError('blocked', ADDRESS_BLOCKED, `address not allowed: ${request.url.host}`);
      },
    };
    const urls = partition(['/', '/a', '/b', '/c'].map((path) => item(path)));
    const decisions: VisitDecision[] = [];
    // A 60 s delay: one wait for it and the test would time out, not merely run slow.
    const crawl = { ...config(60_000), allowPrivate: false };
    const report = await visitHost(
      { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] },
      crawl,
      deps(refusing, urls, Date.now() + 120_000, crawl),
      (d) => decisions.push(d),
    );
    assert.equal(decisions.length, 4, JSON.stringify(report.end));
    for (const decision of decisions) {
      assert.equal(decision.kind, 'result');
      assert.ok(decision.kind === 'result' && decision.result.outcome === 'blocked');
    }
    assert.equal(dials, 1, 'robots.txt was refused once; its refusal decides the pages');
    assert.deepEqual(report.pace, { nextAt: 0 }, 'the refused request took no slot');
  });
});

describe('visitHost: a cancelled crawl', () => {
  it("ends every open URL at once as cancelled: postponed retries and the host's pace do not hold them", async () => {
    const web = new SyntheticWeb({ hosts: 1, pagesPerHost: 8, latencyMs: 20 });
    const farAhead = Date.now() + 600_000;
    const urls = partition([
      item('/', { retryAt: farAhead, attempts: 1 }),
      item('/p/1'),
      item('/p/2', { retryAt: farAhead, attempts: 2 }),
    ]);
    const crawl = config(5_000);
    const decisions: VisitDecision[] = [];
    const started = Date.now();
    const report = await visitHost(
      // The host's pace says its next request may leave in 60 s (a Crawl-delay or Retry-After).
      { crawlId: CRAWL, host: HOST, pace: { nextAt: started + 60_000 }, inflight: [] },
      crawl,
      {
        ...deps(web, urls, started + 120_000, crawl),
        crawlStates: { stateOf: async () => 'cancelled' as const },
      },
      (d) => decisions.push(d),
    );
    assert.equal(web.requests.length, 0, 'no request for a cancelled crawl');
    assert.deepEqual(
      decisions.map((d) => (d.kind === 'result' ? d.result.outcome : d.kind)),
      ['cancelled', 'cancelled', 'cancelled'],
    );
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms: the pace held it`);
    assert.equal(report.inflight.length, 3);
  });
});

describe('visitHost: reads of the host partition', () => {
  it('walks the partition once a visit unless the batch’s admissions reach the host, then once more', async () => {
    const web = new SyntheticWeb({ hosts: 1, pagesPerHost: 8, latencyMs: 1 });
    const urls = partition([item('/p/1'), item('/p/2')]);
    let reads = 0;
    const read = urls.page.bind(urls);
    urls.page = async (crawlId, host, after, limit) => {
      reads++;
      return read(crawlId, host, after, limit);
    };
    // The batch's admissions: a settle that admits a URL of this host wakes it.
    let wakes = 0;
    let admitting: HostUrl[] = [];
    const settle = async () => {
      if (admitting.length === 0) return;
      urls.seed(CRAWL, admitting);
      admitting = [];
      wakes++;
    };
    const crawl = config(0);
    const visit = (start: { pace: { nextAt: number }; inflight: readonly string[] }) =>
      visitHost(
        { crawlId: CRAWL, host: HOST, ...start },
        crawl,
        { ...deps(web, urls, Date.now() + 30_000, crawl), settle, wokenHere: () => wakes },
        () => {},
      );
    const first = await visit({ pace: { nextAt: 0 }, inflight: [] });
    assert.equal(first.end.kind, 'hand-back');
    assert.equal(first.inflight.length, 2);
    assert.equal(reads, 1, 'its links reached no URL of the host: nothing new to read');

    reads = 0;
    urls.seed(CRAWL, [item('/p/4')]);
    admitting = [item('/p/3')];
    const second = await visit({ pace: first.pace, inflight: first.inflight });
    assert.equal(second.end.kind, 'hand-back');
    assert.equal(reads, 2, 'read again once, after the settle that admitted /p/3');
    assert.deepEqual(
      web.requests.map((request) => request.path).filter((path) => path !== '/robots.txt'),
      [...['/p/1', '/p/2'].toSorted((a, b) => (item(a).key < item(b).key ? -1 : 1)), '/p/4', '/p/3'],
    );
  });
});
