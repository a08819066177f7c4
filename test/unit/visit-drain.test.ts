// A large host drains inside its invocation: the index parts its done URLs name (thousands, for a host
// of 100,000 URLs) are checked a bounded number at a time, and none starts past the deadline.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CRAWL_LIMITS, LruSet } from '../../lambdas/core/base/index.ts';
import {
  type HostUrl,
  type HostUrlStore,
  type PageFetcher,
  parseCrawlConfig,
} from '../../lambdas/core/crawl/index.ts';
import { visitHost } from '../../lambdas/core/fetch/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { syntheticResponse } from '../fakes/page-response.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { VirtualClock } from '../fakes/virtual-clock.ts';

const CRAWL = 'drain-test';
const HOST = 'big.sim.test';
const URLS = 100_000;
const PARTS = 3_200;
/** An S3 HEAD. */
const HEAD_MS = 20;
/** The function's timeout. */
const TIMEOUT_MS = 60_000;

/** 100,000 done URLs whose lines are spread over 3,200 parts (those of many aggregate batches). */
function doneHost(): HostUrl[] {
  return Array.from({ length: URLS }, (_, i) => ({
    key: i.toString(16).padStart(64, '0'),
    url: `http://${HOST}/p/${i}`,
    depth: 1,
    st: 'done',
    outcome: 'fetched',
    bytes: 100,
    requests: 1,
    part: `results/${CRAWL}/part-${i % PARTS}.jsonl.gz`,
  }));
}

function setup(clock: VirtualClock, missing: ReadonlySet<string> = new Set()) {
  const urls = doneHost();
  const heads: string[] = [];
  // The container's cache of parts found, as lambdas/fetch/fetch-deps.ts keeps it.
  const written = new LruSet(10_000);
  const partExists = async (key: string) => {
    if (written.has(key)) return true;
    heads.push(key);
    await clock.sleep(HEAD_MS);
    if (missing.has(key)) return false;
    written.add(key);
    return true;
  };
  // The partition in key order (the keys are the indexes in hex), read a page at a time.
  const hostUrls: HostUrlStore = {
    page: async (_crawlId, _host, after, limit) => {
      const from = after === undefined ? 0 : Number.parseInt(after, 16) + 1;
      const page = urls.slice(from, from + limit);
      return page.length === limit ? { urls: page, next: page.at(-1)?.key as string } : { urls: page };
    },
    get: async () => [],
    postpone: async () => {},
  };
  const noFetch: PageFetcher = {
    fetch: async () => {
      throw new Error('a drained host is not fetched');
    },
  };
  const crawl = parseCrawlConfig({
    crawlId: CRAWL,
    seeds: [`http://${HOST}/`],
    allowPrivate: true,
    createdAt: new Date().toISOString(),
  });
  const visit = (deadline: number) =>
    visitHost(
      { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] },
      crawl,
      {
        fetcher: noFetch,
        robots: new MemoryRobotsStore(),
        robotsCache: createRobotsCache(10),
        hostUrls,
        partExists,
        deadline,
        now: clock.now,
        sleep: clock.sleep,
      },
      () => {},
    );
  return { visit, heads };
}

describe('a visit drains a host of 100,000 URLs naming 3,200 index parts (20 ms a check)', () => {
  it('drains inside one 60 s invocation, each part checked once', async () => {
    const clock = new VirtualClock(1_000_000);
    const started = clock.now();
    const { visit, heads } = setup(clock);
    const report = await clock.run(visit(started + TIMEOUT_MS - 10_000));
    assert.equal(report.end.kind, 'drained');
    const took = clock.now() - started;
    assert.ok(took < 10_000, `the drain's checks took ${took} ms of virtual time`);
    assert.equal(heads.length, PARTS, 'every part checked once');
  });

  it('a deadline in the middle of the checks hands the host back before it, and the next visit goes on from there', async () => {
    const clock = new VirtualClock(1_000_000);
    const started = clock.now();
    const { visit, heads } = setup(clock);
    const deadline = started + 2_000;
    const first = await clock.run(visit(deadline));
    assert.equal(first.end.kind, 'hand-back');
    assert.ok(first.end.kind === 'hand-back' && first.end.why === 'deadline');
    assert.ok(clock.now() <= deadline, `${clock.now() - deadline} ms past the deadline`);
    const checked = heads.length;
    assert.ok(checked > 0 && checked < PARTS, `${checked} parts checked before the deadline`);

    const second = await clock.run(visit(clock.now() + TIMEOUT_MS - 10_000));
    assert.equal(second.end.kind, 'drained');
    assert.equal(heads.length, PARTS, 'the parts found by the first visit are not checked again');
  });

  it('one part still missing (its aggregate invocation died before the PUT): the host is not drained', async () => {
    const clock = new VirtualClock(1_000_000);
    const { visit } = setup(clock, new Set([`results/${CRAWL}/part-${PARTS - 1}.jsonl.gz`]));
    const report = await clock.run(visit(clock.now() + TIMEOUT_MS - 10_000));
    assert.equal(report.end.kind, 'hand-back');
    assert.ok(report.end.kind === 'hand-back' && report.end.why === 'waiting');
  });
});

function keyOf(url: string): string {
  const normalized = normalizeUrl(url);
  if (!normalized.ok) throw new Error(url);
  return normalized.key;
}

describe('a URL that fails again within one long visit', () => {
  it('counts on from the attempts it postponed: each request is one more attempt on its item', async () => {
    const clock = new VirtualClock(1_000_000);
    const paths: string[] = [];
    const fetcher: PageFetcher = {
      fetch: async (request) => {
        const path = request.url.pathname;
        paths.push(path);
        const at = clock.now();
        return syntheticResponse(request, {
          status: path === '/robots.txt' ? 404 : path === '/broken' ? 500 : 200,
          contentType: 'text/html',
          body: '<p>page</p>',
          at,
        });
      },
    };
    const item = (path: string, depth: number): HostUrl => {
      const url = `http://${HOST}${path}`;
      return { key: keyOf(url), url, depth, st: 'new' };
    };
    const urls = new MemoryFrontierUrls();
    // The pages after it keep the visit going past the failed URL's backoff (1-2 s): it comes due again.
    urls.seed(CRAWL, [item('/broken', 1), ...Array.from({ length: 40 }, (_, i) => item(`/p/${i}`, 2))]);
    const crawl = parseCrawlConfig({
      crawlId: CRAWL,
      seeds: [`http://${HOST}/`],
      allowPrivate: true,
      delayMs: 100,
      createdAt: new Date().toISOString(),
    });
    // The fakes yield with setImmediate: counted, so time moves only once nothing can run.
    const restore = clock.install();
    await clock
      .run(
        visitHost(
          { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] },
          crawl,
          {
            fetcher,
            robots: new MemoryRobotsStore(),
            robotsCache: createRobotsCache(10),
            hostUrls: urls,
            deadline: clock.now() + 3_600_000,
            now: clock.now,
            sleep: clock.sleep,
            settle: async () => {},
            wokenHere: () => 0,
          },
          () => {},
        ),
      )
      .finally(restore);
    const requests = paths.filter((path) => path === '/broken').length;
    assert.equal(requests, 2, 'fetched, then again once due');
    assert.deepEqual(
      urls.postponed.map((retry) => retry.attempts),
      [1, 2],
      'the second request is the second attempt',
    );
    assert.ok(requests <= CRAWL_LIMITS.maxAttempts);
  });
});
