/**
 * processFetchBatch, where "nothing lost" is decided: each message of a batch ends done (a visit
 * ended, its results sent and its host handed on; a task admitted, answered or dead-lettered) or is
 * reported for redelivery, never dropped unseen. Over the fakes of test/fakes (checked against the
 * adapters by test/integration/port-contracts.test.ts) and a synthetic web: no emulator, no socket.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FRONTIER_LIMITS, LruSet } from '../../lambdas/core/base/index.ts';
import {
  type FetchBatchDeps,
  type FetchBatchReport,
  processFetchBatch,
} from '../../lambdas/core/batches/index.ts';
import {
  type CrawlConfigInput,
  DEFAULT_CRAWL_ID,
  type FrontierUrl,
  type PageFetcher,
  type PageRequest,
  type PageResponse,
  parseCrawlConfig,
  type TaskMessage,
  type VisitMessage,
} from '../../lambdas/core/crawl/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryBlobs } from '../fakes/blobs.ts';
import { MemoryCrawlConfigs } from '../fakes/crawl-configs.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../fakes/host-visits.ts';
import { MemoryDeadLetterQueue, MemoryResultsQueue, MemoryTaskQueue } from '../fakes/queues.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { SyntheticWeb } from '../fixtures/synthetic-web.ts';

const CRAWL = 'fb';
const HOST = 'h000.sim.test';
const OTHER = 'h001.sim.test';
/** A visit's lease lasts this long past the batch's deadline (fetch-batch.ts LEASE_MARGIN_MS). */
const LEASE_MARGIN_MS = 15_000;

let seq = 0;
function message(body: unknown, receiveCount = 1): TaskMessage {
  return { id: `m${++seq}`, body: typeof body === 'string' ? body : JSON.stringify(body), receiveCount };
}

function frontierUrl(host: string, path: string, depth = 1): FrontierUrl {
  const normalized = normalizeUrl(`http://${host}${path}`);
  assert.ok(normalized.ok, path);
  return { key: normalized.key, url: normalized.url, depth };
}

const keyOf = (host: string, path: string) => frontierUrl(host, path).key;
const urlOf = (host: string, path: string) => frontierUrl(host, path).url;

async function world(
  options: { pagesPerHost?: number; latencyMs?: number; crawl?: Partial<CrawlConfigInput> } = {},
) {
  const web = new SyntheticWeb({
    hosts: 2,
    pagesPerHost: options.pagesPerHost ?? 4,
    latencyMs: options.latencyMs ?? 1,
  });
  const configs = new MemoryCrawlConfigs();
  await configs.put(
    parseCrawlConfig({
      crawlId: CRAWL,
      seeds: web.seeds(),
      allowPrivate: true,
      delayMs: 0,
      createdAt: new Date().toISOString(),
      ...options.crawl,
    }),
  );
  const w = {
    web,
    configs,
    frontier: new MemoryFrontierUrls(),
    hosts: new MemoryHostVisits(),
    tasks: new MemoryTaskQueue(),
    results: new MemoryResultsQueue(),
    deadLetters: new MemoryDeadLetterQueue(),
    blobs: new MemoryBlobs(),
    robots: new MemoryRobotsStore(),
    seen: new LruSet(10_000),
    deps(extra: Partial<FetchBatchDeps> = {}): FetchBatchDeps {
      return {
        fetcher: w.web,
        configs: w.configs,
        robots: w.robots,
        robotsCache: createRobotsCache(100),
        frontier: w.frontier,
        hosts: w.hosts,
        deadLetters: w.deadLetters,
        blobs: w.blobs,
        results: w.results,
        tasks: w.tasks,
        seen: w.seen,
        invocationId: 'inv-1',
        deadline: Date.now() + 30_000,
        now: () => Date.now(),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        ...extra,
      };
    },
    run(messages: TaskMessage[], extra: Partial<FetchBatchDeps> = {}): Promise<FetchBatchReport> {
      return processFetchBatch(messages, w.deps(extra));
    },
  };
  return w;
}

type World = Awaited<ReturnType<typeof world>>;

/** The host's URLs admitted (as seeds) and the host woken: the visit message its wake sent. */
async function wokenHost(w: World, host: string, paths: string[], crawlId = CRAWL): Promise<TaskMessage> {
  await w.frontier.admit(
    crawlId,
    'seed',
    paths.map((path) => frontierUrl(host, path)),
  );
  const ticket = await w.hosts.wake(crawlId, host, Date.now());
  assert.ok(ticket, 'the wake sends a visit');
  const visit: VisitMessage = { v: 1, kind: 'visit', crawlId, host, ticket };
  return message(visit);
}

const ticketOf = (m: TaskMessage) => (JSON.parse(m.body) as VisitMessage).ticket ?? '';

/** The paths the host was sent, sorted (each once, if nothing was fetched twice). */
const requested = (w: World, host: string) =>
  w.web.requests
    .filter((request) => request.host === host)
    .map((request) => request.path)
    .sort();

const urls = (results: readonly CrawlResult[]) => results.map((result) => result.url).sort();
const ids = (entries: ReadonlyArray<{ id: string }>) => entries.map((entry) => entry.id).sort();

const throttled = () =>
  Object.assign(new Error('Throughput exceeds the current capacity'), {
    name: 'ProvisionedThroughputExceededException',
  });

describe('processFetchBatch: a visit', () => {
  it('fetches its host’s URLs and the links they lead to, each once, sends a result for each and stores each page, then hands the host to its next visit message', async () => {
    const w = await world();
    const visit = await wokenHost(w, HOST, ['/']);
    const report = await w.run([visit]);
    assert.deepEqual(report.retries, []);
    const pages = ['/', '/p/1', '/p/2', '/p/3'];
    assert.deepEqual(requested(w, HOST), [...pages, '/robots.txt'].sort());
    assert.deepEqual(urls(w.results.results), pages.map((path) => urlOf(HOST, path)).sort());
    assert.deepEqual(urls(report.results), urls(w.results.results), 'the report says what was sent');
    for (const result of w.results.results)
      assert.ok(result.warc && w.blobs.objects.has(result.warc.key), `${result.url}: its page is stored`);
    assert.deepEqual(report.outcomes, [{ crawlId: CRAWL, host: HOST, end: 'hand-back', fetched: 4 }]);
    // Its results are not finalized yet: the host is handed back, expecting the message sent for it.
    const next = w.tasks.visits.filter((sent) => sent.visit.host === HOST);
    assert.equal(next.length, 1);
    const host = w.hosts.host(CRAWL, HOST);
    assert.equal(host?.visitBy, next[0]?.visit.ticket, 'the host expects that message');
    assert.equal(host?.holder, undefined, 'the lease is given up');
    assert.deepEqual(host?.inflight.toSorted(), pages.map((path) => keyOf(HOST, path)).sort());
    assert.deepEqual(report.visits, w.tasks.visits);
  });

  it('two copies of one visit message in a batch: the host is visited once, each URL fetched once, the copy done with', async () => {
    const w = await world();
    const visit = await wokenHost(w, HOST, ['/']);
    const copy = { ...visit, id: 'copy' };
    const report = await w.run([visit, copy]);
    assert.deepEqual(report.retries, []);
    const paths = requested(w, HOST);
    assert.deepEqual(paths, [...new Set(paths)], 'nothing fetched twice');
    assert.equal(w.results.results.length, new Set(urls(w.results.results)).size, 'one result per URL');
    assert.deepEqual(report.outcomes.map((outcome) => outcome.end).sort(), ['dropped', 'hand-back']);
  });

  it('a stale copy (a ticket the host no longer expects) is done with; a message for a host with no work has completion checked again', async () => {
    const w = await world();
    const expected = await wokenHost(w, HOST, ['/']);
    const stale = message({ v: 1, kind: 'visit', crawlId: CRAWL, host: HOST, ticket: 'an-older-ticket' });
    const idle = message({ v: 1, kind: 'visit', crawlId: CRAWL, host: OTHER, ticket: 'x' });
    const report = await w.run([stale, idle]);
    assert.deepEqual(report.retries, []);
    assert.deepEqual(report.outcomes.map((outcome) => [outcome.host, outcome.end]).sort(), [
      [HOST, 'dropped'],
      [OTHER, 'dropped'],
    ]);
    assert.deepEqual(w.web.requests, []);
    assert.deepEqual(w.results.drained, [CRAWL], 'a drained record for the idle host');
    assert.equal(
      w.hosts.host(CRAWL, HOST)?.visitBy,
      ticketOf(expected),
      'the host still expects its message',
    );
  });

  it('a host another visit holds: the message is sent again, due when that lease ends (a copy of the message that visit came with: in 5 s), without spending a receive', async () => {
    const w = await world();
    const taken = await wokenHost(w, HOST, ['/']);
    const now = Date.now();
    await w.hosts.acquire(CRAWL, HOST, 'another-invocation', now + 30_000, now, ticketOf(taken));
    const copy = await w.run([taken]);
    assert.deepEqual(copy.retries, []);
    assert.deepEqual(
      w.tasks.visits.map((sent) => [sent.visit.ticket, sent.delaySeconds]),
      [[ticketOf(taken), 5]],
      'looked at again soon: the visit holding the host is its own, and mostly ends in a moment',
    );
    w.tasks.visits.length = 0;
    // A message the host did not take (an older claim's, superseded): it waits for the lease's end.
    const visit = message({ v: 1, kind: 'visit', crawlId: CRAWL, host: HOST, ticket: 'superseded' });
    const report = await w.run([visit]);
    assert.deepEqual(report.retries, []);
    assert.deepEqual(w.web.requests, []);
    assert.equal(w.tasks.visits.length, 1);
    const again = w.tasks.visits[0]!;
    assert.deepEqual(again.visit, JSON.parse(visit.body));
    assert.ok((again.delaySeconds ?? 0) >= 30 && (again.delaySeconds ?? 0) <= 31, `${again.delaySeconds} s`);
    assert.deepEqual(report.visits, [again]);
  });

  it('a host another visit holds, and that send fails: the message itself comes back, due when the lease ends', async () => {
    const w = await world();
    const taken = await wokenHost(w, HOST, ['/']);
    const now = Date.now();
    await w.hosts.acquire(CRAWL, HOST, 'another-invocation', now + 30_000, now, ticketOf(taken));
    const visit = message({ v: 1, kind: 'visit', crawlId: CRAWL, host: HOST, ticket: 'superseded' });
    w.tasks.faults.fail('sendVisits', { times: Number.POSITIVE_INFINITY });
    const report = await w.run([visit]);
    assert.equal(report.retries.length, 1);
    const [retry] = report.retries;
    assert.equal(retry?.id, visit.id);
    assert.equal(retry?.code, 'host-held');
    assert.ok(
      (retry?.delaySeconds ?? 0) >= 30 && (retry?.delaySeconds ?? 0) <= 31,
      `${retry?.delaySeconds} s`,
    );
  });

  it('a visit of a crawl nobody started stops: nothing fetched, nothing retried', async () => {
    const w = await world();
    const visit = await wokenHost(w, HOST, ['/'], 'never-started');
    const report = await w.run([visit]);
    assert.deepEqual(report.retries, []);
    assert.deepEqual(w.web.requests, []);
    assert.deepEqual(report.outcomes, [{ crawlId: 'never-started', host: HOST, end: 'stop', fetched: 0 }]);
  });

  it('stops before the deadline: no request starts that could not end before it, and what it did not do is handed to its next visit', async () => {
    const w = await world({
      pagesPerHost: 20,
      latencyMs: 10,
      crawl: { delayMs: 300, limits: { totalTimeoutMs: 500 } },
    });
    const paths = Array.from({ length: 10 }, (_, i) => `/p/${i + 1}`);
    const visit = await wokenHost(w, HOST, paths);
    const deadline = Date.now() + 3_000;
    const report = await w.run([visit], { deadline });
    assert.deepEqual(report.retries, []);
    // A request needs its total timeout and a second's margin free before the deadline.
    for (const request of w.web.requests)
      assert.ok(
        request.at <= deadline - 1_500 + 50,
        `${request.path} started ${request.at - deadline} ms before`,
      );
    const fetched = requested(w, HOST).filter((path) => path !== '/robots.txt');
    assert.ok(fetched.length >= 1 && fetched.length < paths.length, `${fetched.length} fetched`);
    assert.deepEqual(report.outcomes, [
      { crawlId: CRAWL, host: HOST, end: 'hand-back', fetched: fetched.length },
    ]);
    assert.deepEqual(urls(w.results.results), fetched.map((path) => urlOf(HOST, path)).sort());
    // The rest are still to fetch, no attempt spent on them; the next visit message is out.
    for (const path of paths.filter((p) => !fetched.includes(p))) {
      const item = w.frontier.item(CRAWL, HOST, keyOf(HOST, path));
      assert.equal(item?.st, 'new', path);
      assert.equal(item?.attempts, undefined, path);
    }
    const host = w.hosts.host(CRAWL, HOST);
    assert.deepEqual(host?.inflight.toSorted(), fetched.map((path) => keyOf(HOST, path)).sort());
    assert.equal(w.tasks.visits.length, 1);
    assert.equal(host?.visitBy, w.tasks.visits[0]?.visit.ticket);
    assert.equal(host?.holder, undefined);
  });

  it('slow sends: the visit stops early enough for the batch’s last flush to end before the invocation does', async () => {
    const w = await world({
      pagesPerHost: 40,
      latencyMs: 5,
      crawl: { delayMs: 100, limits: { totalTimeoutMs: 500 } },
    });
    const visit = await wokenHost(
      w,
      HOST,
      Array.from({ length: 30 }, (_, i) => `/p/${i + 1}`),
    );
    // Each send of results takes 500 ms (AWS answering slowly): a flush, two of them.
    const send = w.results.sendResults.bind(w.results);
    w.results.sendResults = async (results) => {
      await new Promise((resolve) => setTimeout(resolve, 500));
      return send(results);
    };
    const started = Date.now();
    const end = started + 5_000;
    const report = await w.run([visit], { deadline: started + 20_000, end, flushEveryPages: 2 });
    assert.ok(Date.now() <= end, `returned ${Date.now() - end} ms after the invocation's end`);
    assert.deepEqual(report.retries, []);
    const fetched = requested(w, HOST).filter((path) => path !== '/robots.txt');
    assert.ok(fetched.length >= 1, 'it fetched');
    assert.deepEqual(urls(w.results.results), fetched.map((path) => urlOf(HOST, path)).sort());
    assert.equal(report.outcomes[0]?.end, 'hand-back');
  });

  it('a visit that fails part way (a Query that keeps failing) sends what it did, hands its host to its own message with the URLs in flight, and that message comes back', async () => {
    const w = await world();
    const visit = await wokenHost(w, HOST, ['/', '/p/1']);
    w.frontier.faults.fail('page', {
      times: Number.POSITIVE_INFINITY,
      when: () => w.frontier.faults.calls('page') > 1,
      error: throttled,
    });
    const report = await w.run([visit]);
    assert.equal(report.retries.length, 1);
    assert.equal(report.retries[0]?.id, visit.id);
    assert.equal(report.retries[0]?.code, 'batch-step-failed');
    assert.deepEqual(urls(w.results.results), [urlOf(HOST, '/'), urlOf(HOST, '/p/1')].sort());
    const host = w.hosts.host(CRAWL, HOST);
    assert.equal(host?.holder, undefined, 'released: its message finds it free');
    assert.equal(host?.visitBy, ticketOf(visit), 'and expects that message');
    assert.deepEqual(host?.inflight.toSorted(), [keyOf(HOST, '/'), keyOf(HOST, '/p/1')].sort());
  });

  it('a host with every URL done is drained: its tally recorded, its item deleted, completion checked', async () => {
    const w = await world();
    const visit = await wokenHost(w, HOST, ['/', '/p/1']);
    await w.frontier.finalizeHost(CRAWL, HOST, 10);
    const report = await w.run([visit]);
    assert.deepEqual(report.retries, []);
    assert.deepEqual(report.outcomes, [{ crawlId: CRAWL, host: HOST, end: 'drained', fetched: 0 }]);
    assert.equal(w.hosts.host(CRAWL, HOST), undefined);
    assert.deepEqual(w.hosts.done(CRAWL, HOST), {
      total: 2,
      byOutcome: { fetched: 2 },
      bytes: 20,
      requests: 2,
      parts: [],
      nextAt: 0,
    });
    assert.deepEqual(w.results.drained, [CRAWL]);
    assert.deepEqual(w.tasks.visits, []);
  });

  it('a host woken while its visit drains it is not drained: it is handed to a new visit message', async () => {
    const w = await world();
    const visit = await wokenHost(w, HOST, ['/']);
    await w.frontier.finalizeHost(CRAWL, HOST, 10);
    const drain = w.hosts.drain.bind(w.hosts);
    w.hosts.drain = async (...args) => {
      await w.hosts.wake(CRAWL, HOST, Date.now()); // an admission into the host meanwhile
      return drain(...args);
    };
    const report = await w.run([visit]);
    assert.deepEqual(report.retries, []);
    assert.deepEqual(w.results.drained, []);
    assert.equal(w.tasks.visits.length, 1);
    assert.equal(w.hosts.host(CRAWL, HOST)?.visitBy, w.tasks.visits[0]?.visit.ticket);
  });
});

describe('processFetchBatch: results on the queue', () => {
  it("a flush's records go in one send, packed: the page's result carries its links' skips in one message", async () => {
    // Links of a page at depth 1 are beyond --max-depth 1: each is skipped, carried by the page's result.
    const w = await world({ crawl: { maxDepth: 1 } });
    const visit = await wokenHost(w, HOST, ['/']);
    const report = await w.run([visit]);
    assert.deepEqual(report.retries, []);
    assert.deepEqual(
      w.results.results.map((result) => [result.outcome, result.skipped?.map((link) => link.code)]),
      [['fetched', ['depth', 'depth']]],
    );
    assert.equal(w.results.messages.length, 1, 'one message for its records');
    const [body] = w.results.messages.map(
      (m) => JSON.parse(m) as { crawlId: string; results: CrawlResult[] },
    );
    assert.equal(body?.crawlId, CRAWL);
    assert.deepEqual(urls(body?.results ?? []), urls(w.results.results));
  });
});

describe('processFetchBatch: a backlog', () => {
  it('a host whose visit message waits in the queue for 20 minutes while another host’s pages link to it gets exactly one visit message', async () => {
    const w = await world({ pagesPerHost: 8 });
    // HOST's pages each link to a page of OTHER.
    const linking: PageFetcher = {
      async fetch(request: PageRequest): Promise<PageResponse> {
        const response = await w.web.fetch(request);
        if (request.url.hostname !== HOST || request.url.pathname === '/robots.txt') return response;
        const href = `http://${OTHER}/p/${1 + (Number(request.url.pathname.split('/').at(-1)) || 0)}`;
        return { ...response, body: new TextEncoder().encode(`<a href="${href}">other</a>`) };
      },
    };
    const at = (offsetMs: number) => ({
      fetcher: linking,
      now: () => Date.now() + offsetMs,
      deadline: Date.now() + offsetMs + 30_000,
    });
    const first = await w.run([await wokenHost(w, HOST, ['/p/1'])], at(0));
    assert.deepEqual(first.retries, []);
    const toOther = () => w.tasks.visits.filter(({ visit }) => visit.host === OTHER);
    assert.equal(toOther().length, 1, 'the first link to OTHER sends its visit');
    // OTHER's message waits behind a backlog of hosts. Twenty minutes later HOST's next visit fetches
    // more pages that link to OTHER (its hand-back's message; the URLs admitted meanwhile).
    const later = 20 * 60_000;
    await w.frontier.finalizeHost(CRAWL, HOST, 1);
    await w.frontier.admit(CRAWL, 'seed', [frontierUrl(HOST, '/p/2'), frontierUrl(HOST, '/p/3')]);
    const handBack = w.tasks.visits.filter(({ visit }) => visit.host === HOST).at(-1);
    assert.ok(handBack);
    const second = await w.run([message(handBack.visit)], at(later));
    assert.deepEqual(second.retries, []);
    assert.deepEqual(requested(w, HOST), ['/p/1', '/p/2', '/p/3', '/robots.txt']);
    assert.equal(toOther().length, 1, 'no second visit message: the first is known to be queued');
    // The one message, received at last, takes OTHER and fetches every URL the links admitted.
    const only = toOther()[0];
    assert.ok(only);
    const third = await w.run([message(only.visit)], at(later + 1_000));
    assert.deepEqual(third.retries, []);
    const other = requested(w, OTHER);
    for (const path of ['/p/2', '/p/3', '/p/4']) assert.ok(other.includes(path), `${path} in ${other}`);
    assert.equal(new Set(other).size, other.length, 'each fetched once');
  });
});

describe('processFetchBatch: results awaited', () => {
  it('a host of 1,000 URLs whose results are not finalized: its host item never holds more than the cap in flight, and it drains once they are', async () => {
    const cap = FRONTIER_LIMITS.inflightKeys;
    const w = await world({ pagesPerHost: 1_000 });
    let largest = 0;
    const release = w.hosts.release.bind(w.hosts);
    w.hosts.release = async (crawlId, host, holder, state) => {
      largest = Math.max(largest, state.inflight.length);
      return release(crawlId, host, holder, state);
    };
    const pages = () => requested(w, HOST).filter((path) => path !== '/robots.txt');
    const handBack = () => {
      const last = w.tasks.visits.filter(({ visit }) => visit.host === HOST).at(-1);
      assert.ok(last, 'the host was handed back');
      return message(last.visit);
    };
    await w.run([await wokenHost(w, HOST, ['/'])]);
    assert.equal(pages().length, cap, 'the visit stops at the cap');
    assert.equal(w.hosts.host(CRAWL, HOST)?.inflight.length, cap);
    await w.run([handBack()]);
    assert.equal(pages().length, cap, 'nothing more while no result is in');
    // The aggregate function finalizes the results sent so far.
    const finalizeSent = async () => {
      for (const result of w.results.results)
        await w.frontier.finalize(CRAWL, { ...result, bytes: 1, requests: 1, rid: result.key, part: 'p' });
    };
    let visits = 0;
    for (; w.hosts.host(CRAWL, HOST) !== undefined && visits < 20; visits++) {
      await finalizeSent();
      await w.run([handBack()]);
    }
    assert.equal(w.hosts.host(CRAWL, HOST), undefined, `drained after ${visits} more visits`);
    assert.equal(pages().length, 1_000);
    assert.equal(new Set(pages()).size, 1_000, 'each page fetched once');
    assert.ok(largest <= cap, `a release wrote ${largest} keys in flight`);
  });
});

describe('processFetchBatch: what cannot be sent comes back', () => {
  it('results that cannot be sent: the visit’s message is reported failed, due once its lease is over; nothing is marked seen; its redelivery sends every result', async () => {
    const w = await world();
    const visit = await wokenHost(w, HOST, ['/']);
    w.results.faults.fail('sendResults', { times: Number.POSITIVE_INFINITY });
    const deadline = Date.now() + 30_000;
    const report = await w.run([visit], { deadline });
    assert.deepEqual(ids(report.retries), [visit.id]);
    const leaseOver = Math.ceil((deadline + LEASE_MARGIN_MS - Date.now()) / 1000);
    const delay = report.retries[0]?.delaySeconds ?? 0;
    assert.ok(delay >= leaseOver && delay <= 900, `due in ${delay} s, the lease is over in ${leaseOver} s`);
    assert.deepEqual(report.results, [], 'nothing reported as sent');
    assert.equal(w.seen.size, 0, 'links are seen only once their results are out');
    assert.equal(w.hosts.host(CRAWL, HOST)?.holder, 'inv-1', 'the host stays leased until then');

    // The redelivery, once the lease is over: every page's result goes out.
    w.results.faults.heal('sendResults');
    const later = () => Date.now() + 60_000;
    const again = await w.run([{ ...visit, receiveCount: 2 }], {
      invocationId: 'inv-2',
      now: later,
      deadline: later() + 30_000,
    });
    assert.deepEqual(again.retries, []);
    assert.deepEqual(
      urls(w.results.results),
      ['/', '/p/1', '/p/2', '/p/3'].map((path) => urlOf(HOST, path)).sort(),
    );
  });

  it('visit messages for admitted URLs that cannot be sent: the wake claims are given back and the task comes back', async () => {
    const w = await world();
    const task = message({ v: 1, crawlId: CRAWL, url: urlOf(OTHER, '/'), depth: 0 });
    w.tasks.faults.fail('sendVisits', { times: Number.POSITIVE_INFINITY });
    const report = await w.run([task]);
    assert.deepEqual(ids(report.retries), [task.id]);
    assert.equal(w.hosts.host(CRAWL, OTHER)?.visitBy, undefined, 'no claim left standing');
    assert.ok(await w.hosts.wake(CRAWL, OTHER, Date.now()), 'the retried task’s wake sends the visit');
  });

  it('ended tasks whose admission fails: the claims of the links admitted before are given back, and every task comes back', async () => {
    const w = await world();
    const task = message({ v: 1, crawlId: CRAWL, url: urlOf(OTHER, '/'), depth: 0 });
    const invalid = message('not a task at all');
    // The invalid task's result is admitted held in the default crawl: that admission keeps failing.
    w.frontier.faults.fail('admit', {
      times: Number.POSITIVE_INFINITY,
      when: ([crawlId]) => crawlId === DEFAULT_CRAWL_ID,
      error: throttled,
    });
    const report = await w.run([task, invalid]);
    assert.deepEqual(ids(report.retries), ids([task, invalid]));
    assert.equal(w.frontier.item(CRAWL, OTHER, keyOf(OTHER, '/'))?.st, 'new', 'the task’s URL was admitted');
    assert.equal(w.hosts.host(CRAWL, OTHER)?.visitBy, undefined, 'its wake claim was given back');
    assert.deepEqual(w.tasks.visits, []);
    assert.deepEqual(w.deadLetters.letters, [], 'the invalid task comes back instead');
  });

  it('dead letters that cannot be sent: every task message of the batch comes back', async () => {
    const w = await world();
    const valid = message({ v: 1, crawlId: CRAWL, url: urlOf(OTHER, '/'), depth: 0 });
    const invalid = message('not a task at all');
    const unknown = message({ v: 1, crawlId: 'never-started', url: urlOf(HOST, '/x'), depth: 0 });
    w.deadLetters.faults.fail('send', { times: Number.POSITIVE_INFINITY });
    const report = await w.run([valid, invalid, unknown]);
    assert.deepEqual(ids(report.retries), ids([valid, invalid, unknown]));
  });

  it('with every send failing, each message of a mixed batch comes back exactly once', async () => {
    const w = await world();
    const visits = [await wokenHost(w, HOST, ['/']), await wokenHost(w, OTHER, ['/'])];
    const tasks = [
      message({ v: 1, crawlId: CRAWL, url: urlOf(HOST, '/p/3'), depth: 1 }),
      message('not a task at all'),
    ];
    w.results.faults.fail('sendResults', { times: Number.POSITIVE_INFINITY });
    w.tasks.faults.fail('sendVisits', { times: Number.POSITIVE_INFINITY });
    const report = await w.run([...visits, ...tasks]);
    assert.deepEqual(ids(report.retries), ids([...visits, ...tasks]));
  });
});

describe('processFetchBatch: task messages', () => {
  it('two task messages for one URL: it is admitted once, and one visit message wakes its host', async () => {
    const w = await world();
    const task = { v: 1, crawlId: CRAWL, url: urlOf(HOST, '/p/1'), depth: 1 };
    const report = await w.run([message(task), message(task)]);
    assert.deepEqual(report.retries, []);
    assert.deepEqual(
      w.frontier.all(CRAWL).map((item) => item.url),
      [urlOf(HOST, '/p/1')],
    );
    assert.equal(w.frontier.counters(CRAWL).queued, 1);
    assert.deepEqual(
      w.tasks.visits.map((sent) => sent.visit.host),
      [HOST],
    );
    assert.equal(w.hosts.host(CRAWL, HOST)?.visitBy, w.tasks.visits[0]?.visit.ticket);
    assert.deepEqual(w.web.requests, [], 'a task is admitted, not fetched where it lands');
  });

  it('an invalid task gets its result (counted in its host) and a dead letter; an unknown crawl’s goes to the dead letter; a complete crawl’s is dropped; none comes back', async () => {
    const w = await world();
    await w.configs.put(parseCrawlConfig({ crawlId: 'finished', seeds: [urlOf(HOST, '/')] }));
    const invalid = message('not a task at all');
    const unknown = message({ v: 1, crawlId: 'never-started', url: urlOf(HOST, '/x'), depth: 0 });
    const late = message({ v: 1, crawlId: 'finished', url: urlOf(HOST, '/y'), depth: 0 });
    const report = await w.run([invalid, unknown, late], {
      crawlStates: { stateOf: async (crawlId) => (crawlId === 'finished' ? 'complete' : 'running') },
    });
    assert.deepEqual(report.retries, []);
    assert.deepEqual(
      w.results.results.map((result) => [result.crawlId, result.outcome]),
      [[DEFAULT_CRAWL_ID, 'invalid']],
    );
    assert.deepEqual(
      w.frontier.all(DEFAULT_CRAWL_ID).map((item) => item.st),
      ['held'],
      'its URL is admitted held: its host counts the result',
    );
    assert.deepEqual(
      w.deadLetters.letters.map((letter) => [letter.body, letter.code]).sort(),
      [
        [invalid.body, 'invalid-task'],
        [unknown.body, 'unknown-crawl'],
      ].sort(),
    );
    assert.deepEqual(report.dropped, [{ url: urlOf(HOST, '/y'), why: 'crawl-complete' }]);
  });

  it('a crawl config that cannot be read: the message comes back after a backoff that grows with its receives', async () => {
    const w = await world();
    w.configs.faults.fail('get', { times: Number.POSITIVE_INFINITY, error: throttled });
    const url = urlOf(HOST, '/p/1');
    const first = message({ v: 1, crawlId: CRAWL, url, depth: 1 }, 1);
    const fourth = message({ v: 1, crawlId: CRAWL, url, depth: 1 }, 4);
    const tenth = message({ v: 1, crawlId: CRAWL, url, depth: 1 }, 10);
    const visit = await wokenHost(w, OTHER, ['/']);
    const report = await w.run([first, fourth, tenth, visit]);
    assert.deepEqual(ids(report.retries), ids([first, fourth, tenth, visit]));
    const delay = (m: TaskMessage) => report.retries.find((retry) => retry.id === m.id)?.delaySeconds ?? -1;
    // Full jitter over 2 s doubling per receive, capped at 60 s.
    assert.ok(delay(first) >= 1 && delay(first) <= 2, `first: ${delay(first)} s`);
    assert.ok(delay(fourth) >= 8 && delay(fourth) <= 16, `fourth: ${delay(fourth)} s`);
    assert.ok(delay(tenth) >= 30 && delay(tenth) <= 60, `tenth: ${delay(tenth)} s`);
    assert.ok(delay(visit) >= 1 && delay(visit) <= 2, `visit: ${delay(visit)} s`);
    assert.ok(report.retries.every((retry) => retry.code === 'batch-step-failed'));
  });
});
