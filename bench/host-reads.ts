/**
 * Reads of a host's URL partition per fetched page, for one host of N URLs crawled by visits at the
 * default pace (1 s) in a 60 s function, on the in-memory fakes with a virtual clock
 * (docs/frontier.md, "What each step costs"). Between visits every result sent is finalized, as the
 * aggregate function would. Shapes: `admitted` (all N URLs known at the start, each page linking to
 * two of them) and `growing` (one seed; page i links to pages 2i+1 and 2i+2, a binary tree of N).
 *
 *   npx node bench/host-reads.ts [--urls 1000,50000] [--shape admitted|growing] [--visits 40]
 *
 * Prints, per size: pages fetched, visits, partition reads (Query pages and BatchGets), items read
 * and read units (a Query is billed 1 unit per 4 KB read, a URL item is ~400 bytes; a BatchGet 1
 * unit per key) per fetched page.
 */
import { parseArgs } from 'node:util';
import { LruSet } from '../lambdas/core/base/index.ts';
import { processFetchBatch } from '../lambdas/core/batches/index.ts';
import {
  type HostUrl,
  type PageFetcher,
  type PageRequest,
  type PageResponse,
  parseCrawlConfig,
  type TaskMessage,
  type VisitMessage,
} from '../lambdas/core/crawl/index.ts';
import { createRobotsCache } from '../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../lambdas/core/urls/index.ts';
import { MemoryBlobs } from '../test/fakes/blobs.ts';
import { MemoryCrawlConfigs } from '../test/fakes/crawl-configs.ts';
import { MemoryFrontierUrls } from '../test/fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../test/fakes/host-visits.ts';
import { syntheticResponse } from '../test/fakes/page-response.ts';
import { MemoryDeadLetterQueue, MemoryResultsQueue, MemoryTaskQueue } from '../test/fakes/queues.ts';
import { MemoryRobotsStore } from '../test/fakes/robots-store.ts';
import { VirtualClock } from '../test/fakes/virtual-clock.ts';

const CRAWL = 'reads';
const HOST = 'big.sim.test';
const ITEM_BYTES = 400;
const FUNCTION_MS = 60_000;
const SEND_RESERVE_MS = 10_000;

/** Answers at once: robots.txt allows all; page i links to pages 2i+1 and 2i+2. */
function site(clock: VirtualClock): PageFetcher & { pages: number } {
  const web = {
    pages: 0,
    async fetch(request: PageRequest): Promise<PageResponse> {
      const path = request.url.pathname;
      const robots = path === '/robots.txt';
      if (!robots) web.pages++;
      const i = Number(path.split('/').at(-1)) || 0;
      const body = robots
        ? 'User-agent: *\nAllow: /\n'
        : `<p>page ${i}</p><a href="/p/${2 * i + 1}">a</a><a href="/p/${2 * i + 2}">b</a>`;
      return syntheticResponse(request, {
        contentType: robots ? 'text/plain' : 'text/html',
        body,
        at: clock.now(),
      });
    },
  };
  return web;
}

function urlItem(i: number): HostUrl {
  const normalized = normalizeUrl(`http://${HOST}/p/${i}`);
  if (!normalized.ok) throw new Error(String(i));
  return { key: normalized.key, url: normalized.url, depth: 1, st: 'new', parent: 'seed' };
}

/** Pages past the host's size are not linked: the binary tree ends at N pages. */
function treeOf(web: PageFetcher, size: number): PageFetcher {
  return {
    fetch: async (request) => {
      const response = await web.fetch(request);
      const i = Number(request.url.pathname.split('/').at(-1)) || 0;
      if (2 * i + 1 < size) return response;
      return { ...response, body: new TextEncoder().encode(`<p>page ${i}</p>`) };
    },
  };
}

/** Counts the host partition's reads (Query pages and BatchGets), items and read units, as they happen. */
function countReads(frontier: MemoryFrontierUrls): { queries: number; items: number; units: number } {
  const reads = { queries: 0, items: 0, units: 0 };
  const page = frontier.page.bind(frontier);
  frontier.page = async (crawlId, host, after, limit) => {
    const answer = await page(crawlId, host, after, limit);
    reads.queries++;
    reads.items += answer.urls.length;
    reads.units += Math.max(1, Math.ceil((answer.urls.length * ITEM_BYTES) / 4096));
    return answer;
  };
  const get = frontier.get.bind(frontier);
  frontier.get = async (crawlId, host, keys) => {
    const answer = await get(crawlId, host, keys);
    // A BatchGetItem bills each item alone: at least one unit (4 KB) each, found or not.
    reads.queries += Math.ceil(keys.length / 100);
    reads.items += answer.length;
    reads.units += keys.length;
    return answer;
  };
  return reads;
}

async function measure(size: number, shape: string, maxVisits: number) {
  const clock = new VirtualClock(Date.UTC(2026, 0, 1));
  // The batch's periodic flush and the fakes' yields run on the virtual clock.
  const restore = clock.install();
  try {
    return await measureOn(clock, size, shape, maxVisits);
  } finally {
    restore();
  }
}

async function measureOn(clock: VirtualClock, size: number, shape: string, maxVisits: number) {
  const web = site(clock);
  const fetcher = treeOf(web, size);
  const configs = new MemoryCrawlConfigs();
  const config = parseCrawlConfig({
    crawlId: CRAWL,
    seeds: [`http://${HOST}/p/0`],
    allowPrivate: true,
    createdAt: new Date(clock.now()).toISOString(),
  });
  await configs.put(config);
  const frontier = new MemoryFrontierUrls();
  frontier.seed(
    CRAWL,
    shape === 'admitted' ? Array.from({ length: size }, (_, i) => urlItem(i)) : [urlItem(0)],
  );
  const reads = countReads(frontier);
  const hosts = new MemoryHostVisits();
  const tasks = new MemoryTaskQueue();
  const results = new MemoryResultsQueue();
  const ticket = await hosts.wake(CRAWL, HOST, clock.now());
  let next: VisitMessage = { v: 1, kind: 'visit', crawlId: CRAWL, host: HOST, ...(ticket ? { ticket } : {}) };
  let finalized = 0;
  let visits = 0;
  const started = performance.now();
  for (; visits < maxVisits; visits++) {
    const message: TaskMessage = { id: `m${visits}`, body: JSON.stringify(next), receiveCount: 1 };
    const start = clock.now();
    await clock.run(
      processFetchBatch([message], {
        fetcher,
        configs,
        robots: new MemoryRobotsStore(),
        robotsCache: createRobotsCache(10),
        frontier,
        hosts,
        deadLetters: new MemoryDeadLetterQueue(),
        blobs: new MemoryBlobs(),
        results,
        tasks,
        seen: new LruSet(100_000),
        invocationId: `inv-${visits}`,
        deadline: start + FUNCTION_MS - SEND_RESERVE_MS,
        end: start + FUNCTION_MS,
        now: clock.now,
        sleep: clock.sleep,
      }),
    );
    // The aggregate function finalizes what was sent.
    for (const result of results.results.slice(finalized))
      await frontier.finalize(CRAWL, { ...result, bytes: 1, requests: 1, rid: result.key, part: 'p' });
    finalized = results.results.length;
    if (hosts.host(CRAWL, HOST) === undefined) {
      visits++;
      break;
    }
    const handBack = tasks.visits.filter(({ visit }) => visit.host === HOST).at(-1);
    if (!handBack) throw new Error('the host was neither drained nor handed back');
    // The next visit when its message is due (virtual time).
    await clock.run(clock.sleep(start + (handBack.delaySeconds ?? 0) * 1000 - clock.now()));
    next = handBack.visit;
  }
  const pages = web.pages;
  return {
    urls: size,
    shape,
    pages,
    visits,
    drained: hosts.host(CRAWL, HOST) === undefined,
    queries: reads.queries,
    itemsPerPage: +(reads.items / pages).toFixed(1),
    unitsPerPage: +(reads.units / pages).toFixed(2),
    wallS: +((performance.now() - started) / 1000).toFixed(1),
  };
}

const { values } = parseArgs({
  options: {
    urls: { type: 'string', default: '1000,50000' },
    shape: { type: 'string', default: 'admitted' },
    visits: { type: 'string', default: '40' },
  },
});
for (const size of values.urls.split(',').map(Number))
  console.log(JSON.stringify(await measure(size, values.shape, Number(values.visits))));
