/**
 * A host whose visit ended awaiting only the results of its last pages is visited as soon as an
 * aggregate batch writes them (core/frontier/host-hurry.ts), not at its recheck INFLIGHT_RECHECK_MS later:
 * the fetch batch, the aggregate batch and the next fetch batch, over the fakes of test/fakes
 * (checked against the adapters by test/integration/port-contracts.test.ts) and a synthetic web.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LruSet } from '../../lambdas/core/base/index.ts';
import {
  type FetchBatchDeps,
  processFetchBatch,
  processResultBatch,
  type ResultMessage,
} from '../../lambdas/core/batches/index.ts';
import { parseCrawlConfig, type TaskMessage, type VisitMessage } from '../../lambdas/core/crawl/index.ts';
import { INFLIGHT_RECHECK_MS } from '../../lambdas/core/fetch/index.ts';
import { hurryAwaitingHosts } from '../../lambdas/core/frontier/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryBlobs } from '../fakes/blobs.ts';
import { MemoryCrawlConfigs } from '../fakes/crawl-configs.ts';
import { MemoryFrontierFinalizer } from '../fakes/frontier-finalizer.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../fakes/host-visits.ts';
import { MemoryDeadLetterQueue, MemoryResultsQueue, MemoryTaskQueue } from '../fakes/queues.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { SyntheticWeb } from '../fixtures/synthetic-web.ts';

const CRAWL = 'hurry';
const HOST = 'h000.sim.test';

let seq = 0;
const message = (body: unknown): TaskMessage => ({
  id: `m${++seq}`,
  body: JSON.stringify(body),
  receiveCount: 1,
});
const visitOf = (ticket: string): VisitMessage => ({
  v: 1,
  kind: 'visit',
  crawlId: CRAWL,
  host: HOST,
  ticket,
});

async function world() {
  const web = new SyntheticWeb({ hosts: 1, pagesPerHost: 3, latencyMs: 1 });
  const configs = new MemoryCrawlConfigs();
  await configs.put(
    parseCrawlConfig({
      crawlId: CRAWL,
      seeds: web.seeds(),
      allowPrivate: true,
      delayMs: 0,
      createdAt: new Date().toISOString(),
    }),
  );
  const frontier = new MemoryFrontierUrls();
  const hosts = new MemoryHostVisits();
  const tasks = new MemoryTaskQueue();
  const results = new MemoryResultsQueue();
  const blobs = new MemoryBlobs();
  const robots = new MemoryRobotsStore();
  const seen = new LruSet(10_000);
  const fetchDeps = (invocationId: string): FetchBatchDeps => ({
    fetcher: web,
    configs,
    robots,
    robotsCache: createRobotsCache(100),
    frontier,
    hosts,
    deadLetters: new MemoryDeadLetterQueue(),
    blobs,
    results,
    tasks,
    seen,
    invocationId,
    deadline: Date.now() + 30_000,
    now: () => Date.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  });
  const finalizer = new MemoryFrontierFinalizer(frontier, hosts);
  /** The aggregate batch of every result message sent so far; its hurried visits go to `hurried`. */
  const aggregate = (hurried: MemoryTaskQueue, invocationId: string) =>
    processResultBatch(
      results.messages.map((body, i): ResultMessage => ({ id: `r${i}`, body })),
      { frontier: finalizer, blobs, invocationId, hurry: { hosts, tasks: hurried } },
    );
  return { web, frontier, hosts, tasks, fetchDeps, aggregate };
}

describe('a host awaiting only its last results', () => {
  it('is handed back awaiting, hurried once by the aggregate batch that writes them, and drained by the hurried visit; the original message then finds nothing to do', async () => {
    const w = await world();
    const seed = normalizeUrl(w.web.seeds()[0]!);
    assert.ok(seed.ok);
    await w.frontier.admit(CRAWL, 'seed', [{ key: seed.key, url: seed.url, depth: 0 }]);
    const first = await w.hosts.wake(CRAWL, HOST, Date.now());
    assert.ok(first, 'the wake sends a visit');

    const before = Date.now();
    const fetched = await processFetchBatch([message(visitOf(first))], w.fetchDeps('inv-1'));
    assert.deepEqual(
      fetched.outcomes.map((o) => o.end),
      ['hand-back'],
    );
    const pages = w.web.requests.length;
    assert.ok(pages >= 3, `the host's pages were fetched (${pages} requests)`);
    const handBack = w.tasks.visits.at(-1)!;
    const ticket = handBack.visit.ticket!;
    assert.ok(
      (handBack.delaySeconds ?? 0) * 1000 >= INFLIGHT_RECHECK_MS - (Date.now() - before),
      `its own message is due at the recheck (${handBack.delaySeconds} s)`,
    );
    assert.equal(w.hosts.host(CRAWL, HOST)?.awaiting, true, 'handed back awaiting results');

    const hurried = new MemoryTaskQueue();
    const written = await w.aggregate(hurried, 'agg-1');
    assert.deepEqual(written.hurried, [{ crawlId: CRAWL, hosts: 1 }]);
    assert.deepEqual(hurried.visits, [{ visit: visitOf(ticket) }], 'a copy of the expected message, due now');
    assert.equal(w.hosts.host(CRAWL, HOST)?.awaiting, undefined);

    // The same results again (a redelivery): the host is not hurried twice.
    const again = new MemoryTaskQueue();
    assert.deepEqual((await w.aggregate(again, 'agg-2')).hurried, []);
    assert.deepEqual(again.visits, []);

    const drained = await processFetchBatch([message(hurried.visits[0]!.visit)], w.fetchDeps('inv-2'));
    assert.deepEqual(
      drained.outcomes.map((o) => o.end),
      ['drained'],
    );
    assert.equal(w.hosts.host(CRAWL, HOST), undefined, 'drained: no host item left');
    assert.equal(w.hosts.done(CRAWL, HOST)?.total, pages - 1, 'its tally: every page but robots.txt');

    const late = await processFetchBatch([message(handBack.visit)], w.fetchDeps('inv-3'));
    assert.deepEqual(
      late.outcomes.map((o) => o.end),
      ['dropped'],
    );
    assert.equal(w.web.requests.length, pages, 'nothing fetched again');
  });

  it('is not hurried while its visit holds it, nor when it was handed back for other work', async () => {
    const w = await world();
    const ticket = await w.hosts.wake(CRAWL, HOST, Date.now());
    assert.ok(ticket);
    await w.hosts.acquire(CRAWL, HOST, 'inv-1', Date.now() + 60_000, Date.now(), ticket);
    assert.deepEqual(await w.hosts.awaiting(CRAWL), []);
    assert.equal(await w.hosts.hurry(CRAWL, HOST, Date.now()), undefined);
    await w.hosts.release(CRAWL, HOST, 'inv-1', {
      nextAt: Date.now(),
      inflight: [],
      visitAt: Date.now() + 30_000,
      ticket: 'deadline',
      sent: true,
    });
    assert.deepEqual(await w.hosts.awaiting(CRAWL), []);
    assert.equal(await w.hosts.hurry(CRAWL, HOST, Date.now()), undefined);
  });

  it("at the crawl's end, every host of the crawl awaiting results is hurried, not only the hosts of the batch's own results", async () => {
    // The last results of a crawl come in several batches: a host whose results an earlier batch
    // wrote (before the counters showed the end) awaits them too, and was left to its recheck.
    const hosts = new MemoryHostVisits();
    const now = Date.now();
    const expected: VisitMessage[] = [];
    for (const host of ['a.test', 'b.test', 'c.test']) {
      const ticket = await hosts.wake(CRAWL, host, now);
      assert.ok(ticket);
      await hosts.acquire(CRAWL, host, `inv-${host}`, now + 60_000, now, ticket);
      const awaiting = host !== 'c.test';
      await hosts.release(CRAWL, host, `inv-${host}`, {
        nextAt: now,
        inflight: ['k'],
        visitAt: now + INFLIGHT_RECHECK_MS,
        ticket: `next-${host}`,
        sent: true,
        ...(awaiting ? { awaiting: true } : {}),
      });
      if (awaiting) expected.push({ v: 1, kind: 'visit', crawlId: CRAWL, host, ticket: `next-${host}` });
    }
    const sent = new MemoryTaskQueue();
    assert.equal(await hurryAwaitingHosts(CRAWL, { hosts, tasks: sent, now: () => now }), 2);
    assert.deepEqual(
      sent.visits.map((v) => v.visit).toSorted((x, y) => (x.host < y.host ? -1 : 1)),
      expected,
      'c.test was handed back for other work',
    );
  });
});
