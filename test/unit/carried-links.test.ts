/**
 * Skipped links carried with their page (docs/frontier.md, "Skipped links"): a link a page finds and
 * will not fetch (scope, depth, nofollow) is created done and rides in the page's result, so its host
 * gets no host item and no visit, and the aggregate writes its line with the page's. Each such link
 * still ends as exactly one line, and the crawl's counts stay exact. The fetch and aggregate batches
 * run for real over the fakes of test/fakes (checked against the adapters by
 * test/integration/port-contracts.test.ts); the web is a few pages in memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import type { IndexLine } from '../../lambdas/core/archive/index.ts';
import { FRONTIER_LIMITS, LruSet } from '../../lambdas/core/base/index.ts';
import {
  type FetchBatchDeps,
  processFetchBatch,
  processResultBatch,
  type ResultMessage,
} from '../../lambdas/core/batches/index.ts';
import {
  type CrawlConfigInput,
  type PageFetcher,
  type PageRequest,
  type PageResponse,
  parseCrawlConfig,
  type TaskMessage,
} from '../../lambdas/core/crawl/index.ts';
import { admitLinks } from '../../lambdas/core/frontier/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { resultsPrefix } from '../../lambdas/shared/contracts.ts';
import { MemoryBlobs } from '../fakes/blobs.ts';
import { MemoryCrawlConfigs } from '../fakes/crawl-configs.ts';
import { MemoryFrontierFinalizer } from '../fakes/frontier-finalizer.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../fakes/host-visits.ts';
import { syntheticResponse } from '../fakes/page-response.ts';
import { MemoryDeadLetterQueue, MemoryResultsQueue, MemoryTaskQueue } from '../fakes/queues.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';

const CRAWL = 'carry';
const SITE = 'site.test';

/** A web of pages by URL, each an HTML page of links (hrefs as written); robots.txt is missing. */
class LinkWeb implements PageFetcher {
  readonly requested: string[] = [];
  readonly #pages: Record<string, readonly string[]>;

  constructor(pages: Record<string, readonly string[]>) {
    this.#pages = pages;
  }

  async fetch(request: PageRequest): Promise<PageResponse> {
    const url = request.url.href;
    this.requested.push(url);
    const links = this.#pages[url];
    if (links === undefined)
      return syntheticResponse(request, { status: 404, contentType: 'text/plain', body: '', at: Date.now() });
    const body = `<!doctype html><title>${url}</title>${links.map((href) => `<a href="${href}">x</a>`).join('')}`;
    return syntheticResponse(request, { contentType: 'text/html', body, at: Date.now() });
  }
}

async function world(pages: Record<string, readonly string[]>, crawl: Partial<CrawlConfigInput> = {}) {
  const configs = new MemoryCrawlConfigs();
  const config = parseCrawlConfig({
    crawlId: CRAWL,
    seeds: [`http://${SITE}/`],
    allowPrivate: true,
    delayMs: 0,
    createdAt: new Date().toISOString(),
    ...crawl,
  });
  await configs.put(config);
  const frontier = new MemoryFrontierUrls();
  const hosts = new MemoryHostVisits();
  const w = {
    web: new LinkWeb(pages),
    config,
    frontier,
    hosts,
    finalizer: new MemoryFrontierFinalizer(frontier, hosts),
    tasks: new MemoryTaskQueue(),
    results: new MemoryResultsQueue(),
    blobs: new MemoryBlobs(),
    robots: new MemoryRobotsStore(),
    seen: new LruSet(10_000),
    /** Visit messages run so far, and result messages aggregated so far. */
    visitsRun: 0,
    messagesRun: 0,
    invocations: 0,
    deps(extra: Partial<FetchBatchDeps> = {}): FetchBatchDeps {
      return {
        fetcher: w.web,
        configs,
        robots: w.robots,
        robotsCache: createRobotsCache(100),
        frontier,
        hosts,
        deadLetters: new MemoryDeadLetterQueue(),
        blobs: w.blobs,
        results: w.results,
        tasks: w.tasks,
        seen: w.seen,
        invocationId: `fetch-${++w.invocations}`,
        deadline: Date.now() + 30_000,
        now: () => Date.now(),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        partExists: (key) => w.blobs.exists(key),
        ...extra,
      };
    },
    /** Submits the seed (as `crawler submit` does) and sends its host's visit. */
    async submit(): Promise<void> {
      w.finalizer.start(CRAWL, new Date());
      const admitted = await admitLinks(
        [
          {
            config,
            parentKey: 'seed',
            depth: -1,
            links: config.seeds.map((url) => ({ url, nofollow: false })),
          },
        ],
        { frontier, hosts, seen: new LruSet(1), now: new Date() },
      );
      await w.tasks.sendVisits(admitted.visits);
    },
    /** Runs the visit messages sent and not yet run, as one fetch batch. */
    async fetchRound(extra: Partial<FetchBatchDeps> = {}) {
      const messages: TaskMessage[] = w.tasks.visits
        .slice(w.visitsRun)
        .map(({ visit }, i) => ({ id: `v${w.visitsRun + i}`, body: JSON.stringify(visit), receiveCount: 1 }));
      w.visitsRun = w.tasks.visits.length;
      return processFetchBatch(messages, w.deps(extra));
    },
    /** Aggregates the result messages (and drained records) sent and not yet aggregated. */
    async aggregateRound(): Promise<void> {
      const bodies = [
        ...w.results.messages.slice(w.messagesRun),
        ...w.results.drained.map((crawlId) => JSON.stringify({ v: 1, kind: 'drained', crawlId })),
      ];
      w.messagesRun = w.results.messages.length;
      w.results.drained.length = 0;
      await aggregate(bodies);
    },
    /** Fetch and aggregate rounds until the crawl is complete. */
    async crawl(): Promise<void> {
      for (let round = 0; round < 50; round++) {
        if (w.finalizer.counters(CRAWL)?.state === 'complete') return;
        await w.fetchRound();
        await w.aggregateRound();
      }
      assert.fail(`not complete: ${JSON.stringify(w.finalizer.counters(CRAWL))}`);
    },
    /** Every index line written, by frontier key. */
    lines(): Map<string, IndexLine[]> {
      const byKey = new Map<string, IndexLine[]>();
      for (const [key, body] of w.blobs.objects) {
        if (!key.startsWith(resultsPrefix(CRAWL))) continue;
        for (const text of gunzipSync(body).toString().split('\n')) {
          if (text === '') continue;
          const line = JSON.parse(text) as IndexLine;
          byKey.set(line.key, [...(byKey.get(line.key) ?? []), line]);
        }
      }
      return byKey;
    },
  };
  let aggregated = 0;
  async function aggregate(bodies: readonly string[]): Promise<void> {
    if (bodies.length === 0) return;
    const messages: ResultMessage[] = bodies.map((body, i) => ({ id: `r${aggregated}-${i}`, body }));
    aggregated++;
    const report = await processResultBatch(messages, {
      frontier: w.finalizer,
      blobs: w.blobs,
      invocationId: `agg-${aggregated}`,
    });
    assert.deepEqual([...report.rejected, ...report.retry], []);
  }
  return Object.assign(w, { aggregate });
}

/** The lines by URL, each URL's line count and outcome/code. */
function linesByUrl(lines: Map<string, IndexLine[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [, all] of lines) {
    const first = all[0]!;
    out[first.url] = `${all.length}x ${first.outcome}${first.code ? `/${first.code}` : ''}`;
  }
  return out;
}

const skippedOf = (results: readonly CrawlResult[]) =>
  results.flatMap((result) =>
    (result.skipped ?? []).map((link) => `${result.url} > ${link.url} (${link.code})`),
  );

describe('skipped links carried with their page', () => {
  it('each skipped link ends as exactly one line, a duplicate across pages too, with exact counts', async () => {
    const w = await world(
      {
        [`http://${SITE}/`]: ['/a', 'http://out.test/x', 'http://out.test/y'],
        // /a links beyond --max-depth 1 (/a/deep) and to out.test/x again (another page's link).
        [`http://${SITE}/a`]: ['/a/deep', 'http://out.test/x', '/'],
      },
      { maxDepth: 1 },
    );
    await w.submit();
    await w.crawl();
    assert.deepEqual(linesByUrl(w.lines()), {
      [`http://${SITE}/`]: '1x fetched',
      [`http://${SITE}/a`]: '1x fetched',
      [`http://${SITE}/a/deep`]: '1x skipped/depth',
      'http://out.test/x': '1x skipped/scope',
      'http://out.test/y': '1x skipped/scope',
    });
    assert.deepEqual(skippedOf(w.results.results).toSorted(), [
      `http://${SITE}/ > http://out.test/x (scope)`,
      `http://${SITE}/ > http://out.test/y (scope)`,
      `http://${SITE}/a > http://${SITE}/a/deep (depth)`,
    ]);
    assert.deepEqual(
      w.results.results.filter((result) => result.outcome === 'skipped'),
      [],
      'no result of their own',
    );
    // The page's host tally counts its kids: the drained totals, and so the summary, are exact.
    const counters = w.finalizer.counters(CRAWL);
    assert.equal(counters?.state, 'complete');
    assert.deepEqual(
      { done: counters?.done, queued: counters?.queued, byOutcome: counters?.byOutcome },
      { done: 5, queued: 5, byOutcome: { fetched: 2, skipped: 3 } },
    );
    assert.equal(w.frontier.item(CRAWL, SITE, keyOfLine(w, '/'))?.kids, 2);
  });

  it('an out-of-scope host gets no host item, no visit and no request', async () => {
    const w = await world({ [`http://${SITE}/`]: ['http://out.test/x', 'http://elsewhere.test/'] });
    await w.submit();
    await w.crawl();
    for (const host of ['out.test', 'elsewhere.test']) {
      assert.equal(w.hosts.host(CRAWL, host), undefined, `${host}: no host item`);
      assert.equal(w.hosts.done(CRAWL, host), undefined, `${host}: never drained, never active`);
    }
    assert.deepEqual(
      w.tasks.visits.map(({ visit }) => visit.host).filter((host) => host !== SITE),
      [],
      'no visit message but its own host',
    );
    assert.deepEqual(w.web.requested, [`http://${SITE}/robots.txt`, `http://${SITE}/`]);
    assert.deepEqual(
      w.frontier
        .all(CRAWL)
        .filter((url) => url.carried)
        .map((url) => [url.url, url.st, url.parent]),
      [
        ['http://out.test/x', 'done', keyOfLine(w, '/')],
        ['http://elsewhere.test/', 'done', keyOfLine(w, '/')],
      ],
      'each has its URL item, done, so another page finds it known',
    );
  });

  it(`past ${FRONTIER_LIMITS.carriedBytes / 1024} KiB a page's other skipped links go the held way, each with its own result`, async () => {
    const far = Array.from({ length: 200 }, (_, i) => `http://far${i}.test/${'p'.repeat(400)}`);
    const w = await world({ [`http://${SITE}/`]: far });
    await w.submit();
    await w.crawl();
    const [page] = w.results.results.filter((result) => result.url === `http://${SITE}/`);
    const carried = page?.skipped ?? [];
    assert.ok(
      carried.length > 0 && carried.length < far.length,
      `carried ${carried.length} of ${far.length}`,
    );
    assert.ok(Buffer.byteLength(JSON.stringify(carried)) <= FRONTIER_LIMITS.carriedBytes);
    const own = w.results.results.filter((result) => result.outcome === 'skipped');
    assert.equal(carried.length + own.length, far.length, 'each carried or sent alone');
    // The held ones' hosts were woken and drained as before; the carried ones' never were.
    assert.ok(own.every((result) => w.hosts.done(CRAWL, new URL(result.url).host)));
    assert.ok(carried.every((link) => w.hosts.done(CRAWL, new URL(link.url).host) === undefined));
    const lines = linesByUrl(w.lines());
    assert.deepEqual(
      far.filter((url) => lines[url] !== '1x skipped/scope'),
      [],
      'every link one line',
    );
    assert.deepEqual(w.finalizer.counters(CRAWL)?.byOutcome, { fetched: 1, skipped: far.length });
  });

  it("a page's result delivered again, or fetched again after its first results were lost, writes no line twice", async () => {
    const w = await world({ [`http://${SITE}/`]: ['http://out.test/x', 'http://out.test/y'] });
    await w.submit();
    // The first fetch admits its links (created carried), then its results' send fails: the batch
    // comes back, and another container (no seen cache) fetches the page again.
    w.results.faults.fail('sendResults', {
      times: Number.POSITIVE_INFINITY,
      error: () => new Error('SQS unavailable'),
    });
    const first = await w.fetchRound();
    w.results.faults.heal('sendResults');
    assert.equal(first.retries.length, 1);
    assert.deepEqual(w.results.results, []);
    assert.equal(w.frontier.all(CRAWL).filter((url) => url.carried).length, 2, 'admitted, carried');
    w.visitsRun = 0;
    w.seen = new LruSet(10_000);
    // Its lease is kept until its deadline (+15 s): the retry comes when it is over.
    await w.fetchRound({ now: () => Date.now() + 60_000, deadline: Date.now() + 90_000 });
    assert.deepEqual(skippedOf(w.results.results).toSorted(), [
      `http://${SITE}/ > http://out.test/x (scope)`,
      `http://${SITE}/ > http://out.test/y (scope)`,
    ]);
    // Its result message aggregated, then delivered again (as a retried batch would).
    const [body] = w.results.messages;
    await w.aggregateRound();
    await w.aggregate([body!]);
    await w.crawl();
    assert.deepEqual(linesByUrl(w.lines()), {
      [`http://${SITE}/`]: '1x fetched',
      'http://out.test/x': '1x skipped/scope',
      'http://out.test/y': '1x skipped/scope',
    });
    assert.deepEqual(w.finalizer.counters(CRAWL)?.byOutcome, { fetched: 1, skipped: 2 });
  });
});

/** The frontier key of a page of SITE. */
function keyOfLine(w: { lines(): Map<string, IndexLine[]> }, path: string): string {
  const url = `http://${SITE}${path}`;
  for (const [key, lines] of w.lines()) if (lines[0]?.url === url) return key;
  assert.fail(`no line for ${url}`);
}
