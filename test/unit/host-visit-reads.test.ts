// A visit walks its host's URL partition a page at a time from where the previous visit stopped:
// a large host's items are read about once a pass, not once a visit (issue 23: a host of 50,000
// URLs was read whole at every visit, ~20 MB again and again). A link that arrives mid-pass is
// fetched, a host drains only after a whole pass during which it was not woken, and the drain's
// tally is the items'.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FETCH_FUNCTION } from '../../cdk/limits.ts';
import { FRONTIER_LIMITS } from '../../lambdas/core/base/index.ts';
import {
  addToTally,
  emptyTally,
  type HostUrl,
  type PageFetcher,
  parseCrawlConfig,
} from '../../lambdas/core/crawl/index.ts';
import { type VisitDecision, type VisitReport, visitHost } from '../../lambdas/core/fetch/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { AWS_LATENCY_MS } from '../fakes/aws-meter.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { syntheticResponse } from '../fakes/page-response.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { VirtualClock } from '../fakes/virtual-clock.ts';

const CRAWL = 'reads-test';
const HOST = 'big.sim.test';

/** Item `i` of the host: keys in the order of `i` (the partition's sort order). */
function item(i: number, extra: Partial<HostUrl> = {}): HostUrl {
  return {
    key: i.toString(16).padStart(64, '0'),
    url: `http://${HOST}/p/${i}`,
    depth: 1,
    st: 'new',
    ...extra,
  };
}

const pathOf = (i: number) => `/p/${i}`;

/** The partition, counting the items its reads return (a Query or a BatchGet is billed by them). */
function partition(items: HostUrl[]) {
  const urls = new MemoryFrontierUrls();
  urls.seed(CRAWL, items);
  const read = { items: 0 };
  const page = urls.page.bind(urls);
  urls.page = async (crawlId, host, after, limit) => {
    const answer = await page(crawlId, host, after, limit);
    read.items += answer.urls.length;
    return answer;
  };
  const get = urls.get.bind(urls);
  urls.get = async (crawlId, host, keys) => {
    const answer = await get(crawlId, host, keys);
    read.items += answer.length;
    return answer;
  };
  return { urls, read };
}

/** A site that answers at once (robots.txt: none), recording the paths asked for. */
function site(clock: VirtualClock, onFetch: (path: string) => void = () => {}) {
  const paths: string[] = [];
  const fetcher: PageFetcher = {
    fetch: async (request) => {
      const path = request.url.pathname;
      if (path !== '/robots.txt') {
        paths.push(path);
        onFetch(path);
      }
      return syntheticResponse(request, {
        status: path === '/robots.txt' ? 404 : 200,
        contentType: 'text/html',
        body: '<p>page</p>',
        at: clock.now(),
      });
    },
  };
  return { fetcher, paths };
}

const crawl = (delayMs: number) =>
  parseCrawlConfig({
    crawlId: CRAWL,
    seeds: [`http://${HOST}/`],
    allowPrivate: true,
    delayMs,
    createdAt: new Date(0).toISOString(),
  });

interface VisitOptions {
  clock: VirtualClock;
  urls: MemoryFrontierUrls;
  fetcher: PageFetcher;
  delayMs: number;
  deadlineMs: number;
  start?: Pick<VisitReport, 'pace' | 'inflight' | 'cursor'>;
  wokenHere?: () => number;
  settle?: () => Promise<void>;
  partExists?: (key: string) => Promise<boolean>;
  onDecision?: (decision: VisitDecision) => void;
}

function visit(options: VisitOptions): Promise<VisitReport> {
  const { clock, urls } = options;
  const start = options.start ?? { pace: { nextAt: 0 }, inflight: [], cursor: undefined };
  return clock.run(
    visitHost(
      { crawlId: CRAWL, host: HOST, ...start },
      crawl(options.delayMs),
      {
        fetcher: options.fetcher,
        robots: new MemoryRobotsStore(),
        robotsCache: createRobotsCache(10),
        hostUrls: urls,
        deadline: clock.now() + options.deadlineMs,
        now: clock.now,
        sleep: clock.sleep,
        ...(options.wokenHere ? { wokenHere: options.wokenHere } : {}),
        ...(options.settle ? { settle: options.settle } : {}),
        ...(options.partExists ? { partExists: options.partExists } : {}),
      },
      options.onDecision ?? (() => {}),
    ),
  );
}

/** Runs `body` with the global timers on the virtual clock (the fakes yield with setImmediate). */
async function onClock<T>(body: (clock: VirtualClock) => Promise<T>): Promise<T> {
  const clock = new VirtualClock(1_000_000);
  const restore = clock.install();
  try {
    return await body(clock);
  } finally {
    restore();
  }
}

describe('a visit reads its host a page at a time', () => {
  it('visits of a host of 20,000 URLs read each item about once a pass: a few items per fetched page, not the host', async () => {
    await onClock(async (clock) => {
      const { urls, read } = partition(Array.from({ length: 20_000 }, (_, i) => item(i)));
      const { fetcher, paths } = site(clock);
      let start: VisitOptions['start'];
      for (let visits = 0; visits < 10; visits++) {
        const decided: VisitDecision[] = [];
        const report = await visit({
          clock,
          urls,
          fetcher,
          delayMs: 1_000,
          deadlineMs: 50_000,
          ...(start ? { start } : {}),
          onDecision: (decision) => decided.push(decision),
        });
        assert.equal(report.end.kind, 'hand-back');
        // The aggregate function finalizes what the visit sent.
        for (const decision of decided) {
          const result = decision.kind === 'captured' ? decision.page.result : decision.result;
          await urls.finalize(CRAWL, { ...result, bytes: 1, requests: 1, rid: result.key, part: 'p' });
        }
        start = report;
      }
      assert.ok(paths.length >= 100, `${paths.length} pages fetched`);
      assert.equal(new Set(paths).size, paths.length, 'no page fetched twice');
      assert.deepEqual(
        paths,
        paths.map((_, i) => pathOf(i)),
        'each visit goes on where the last one stopped',
      );
      const perPage = read.items / paths.length;
      assert.ok(
        perPage < 3,
        `${read.items} items read for ${paths.length} pages: ${perPage.toFixed(1)} a page`,
      );
    });
  });

  it('a link that arrives mid-pass is fetched in the same visit, behind the walk or ahead of it', async () => {
    await onClock(async (clock) => {
      const { urls } = partition([10, 20, 30, 40].map((i) => item(i)));
      let wakes = 0;
      // The batch's flush admits two links while /p/20 is fetched: /p/5 behind the walk, /p/35 ahead.
      const { fetcher, paths } = site(clock, (path) => {
        if (path !== pathOf(20)) return;
        urls.seed(CRAWL, [item(5), item(35)]);
        wakes++;
      });
      const report = await visit({
        clock,
        urls,
        fetcher,
        delayMs: 100,
        deadlineMs: 60_000,
        start: { pace: { nextAt: 0 }, inflight: [], cursor: item(0).key },
        wokenHere: () => wakes,
      });
      // /p/35 was ahead of the walk, but in a page already read: the next pass meets both.
      assert.deepEqual(paths, [10, 20, 30, 40, 5, 35].map(pathOf));
      assert.equal(report.end.kind, 'hand-back', 'their results are awaited');
    });
  });

  it('a host is not drained after a pass during which it was woken: the URL woken for is fetched', async () => {
    await onClock(async (clock) => {
      const done = (i: number) =>
        item(i, { st: 'done', outcome: 'fetched', bytes: 1, requests: 1, part: 'p' });
      const { urls } = partition(Array.from({ length: 100 }, (_, i) => done(i + 10)));
      let wakes = 0;
      // A link admitted before the walk's position while the pass reads: the pass meets only done
      // URLs, but the host was woken during it.
      const page = urls.page.bind(urls);
      urls.page = async (crawlId, host, after, limit) => {
        const answer = await page(crawlId, host, after, limit);
        if (wakes === 0) {
          urls.seed(CRAWL, [item(1)]);
          wakes++;
        }
        return answer;
      };
      const { fetcher, paths } = site(clock);
      const report = await visit({
        clock,
        urls,
        fetcher,
        delayMs: 0,
        deadlineMs: 60_000,
        wokenHere: () => wakes,
      });
      assert.notEqual(report.end.kind, 'drained');
      assert.deepEqual(paths, [pathOf(1)]);
    });
  });

  it('the drain’s tally is every item once, for a pass that starts mid-partition and wraps round', async () => {
    await onClock(async (clock) => {
      const outcomes = ['fetched', 'not-found', 'disallowed'] as const;
      const items = Array.from({ length: 5_000 }, (_, i) =>
        item(i, {
          st: 'done',
          outcome: outcomes[i % 3] as HostUrl['outcome'],
          bytes: i,
          requests: i % 2,
          part: `p${i % 7}`,
        }),
      );
      const { urls } = partition(items);
      const { fetcher, paths } = site(clock);
      const report = await visit({
        clock,
        urls,
        fetcher,
        delayMs: 0,
        deadlineMs: 60_000,
        start: { pace: { nextAt: 0 }, inflight: [], cursor: item(2_345).key },
      });
      assert.deepEqual(paths, []);
      assert.equal(report.end.kind, 'drained');
      assert.ok(report.end.kind === 'drained');
      assert.deepEqual(report.end.tally, items.reduce(addToTally, emptyTally()));
    });
  });

  it('a URL whose result is finalized after its page was read is not fetched again from that page', async () => {
    await onClock(async (clock) => {
      // A visit starts as full of awaited results as the host item holds (the previous visit's
      // pages, their items still not done in the partition), with ten new URLs before them.
      const awaited = Array.from({ length: FRONTIER_LIMITS.inflightKeys }, (_, i) => item(10 + i));
      const { urls } = partition([...Array.from({ length: 10 }, (_, i) => item(i)), ...awaited]);
      // The aggregate function finalizes them between the visit's page read and its next look at
      // its inflight (found full before the first fetch): the page in memory still says "new".
      const get = urls.get.bind(urls);
      let looks = 0;
      urls.get = async (crawlId, host, keys) => {
        if (++looks === 2)
          for (const url of awaited)
            await urls.finalize(CRAWL, {
              ...url,
              outcome: 'fetched',
              bytes: 1,
              requests: 1,
              rid: url.key,
              part: 'p',
            });
        return get(crawlId, host, keys);
      };
      const { fetcher, paths } = site(clock);
      const report = await visit({
        clock,
        urls,
        fetcher,
        delayMs: 0,
        deadlineMs: 60_000,
        start: { pace: { nextAt: 0 }, inflight: awaited.map((url) => url.key), cursor: undefined },
      });
      assert.ok(looks >= 2, 'the visit looked at its inflight again');
      assert.deepEqual(
        paths,
        Array.from({ length: 10 }, (_, i) => pathOf(i)),
        'only the new URLs are fetched',
      );
      assert.equal(report.end.kind, 'hand-back', 'their results are awaited');
    });
  });

  it('a host of 100,000 done URLs drains in one visit, well inside the function timeout', async () => {
    await onClock(async (clock) => {
      // Each result's index part is one of 1,000 (an aggregate batch writes ~100 lines a part).
      const items = Array.from({ length: 100_000 }, (_, i) =>
        item(i, { st: 'done', outcome: 'fetched', bytes: 1, requests: 1, part: `p${i % 1_000}` }),
      );
      const { urls } = partition(items);
      // AWS's time: a Query answers in its latency plus ~50 µs an item (a 1 MB page of 1,600
      // items ~85 ms); a HEAD of an index part in S3's.
      const page = urls.page.bind(urls);
      let queries = 0;
      urls.page = async (crawlId, host, after, limit) => {
        const answer = await page(crawlId, host, after, limit);
        queries++;
        await clock.sleep(AWS_LATENCY_MS.dynamodb + answer.urls.length * 0.05);
        return answer;
      };
      const heads = new Set<string>();
      const partExists = async (key: string) => {
        heads.add(key);
        await clock.sleep(AWS_LATENCY_MS.s3);
        return true;
      };
      const { fetcher, paths } = site(clock);
      const deadlineMs = FETCH_FUNCTION.timeoutSeconds * 1_000;
      const startedAt = clock.now();
      const report = await visit({ clock, urls, fetcher, delayMs: 1_000, deadlineMs, partExists });
      const tookMs = clock.now() - startedAt;
      assert.deepEqual(paths, []);
      assert.equal(report.end.kind, 'drained');
      assert.ok(report.end.kind === 'drained');
      assert.equal(report.end.tally.total, 100_000);
      assert.equal(heads.size, 1_000, 'each index part checked once');
      assert.ok(queries <= 100_000 / FRONTIER_LIMITS.hostUrlPage + 10, `${queries} Queries`);
      assert.ok(tookMs < deadlineMs / 4, `the drain took ${tookMs} ms of a ${deadlineMs} ms function`);
    });
  });
});
