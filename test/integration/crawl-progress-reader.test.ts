// The progress display's reads of the FrontierTable (lambdas/adapters/crawl-progress-reader.ts)
// against dynalite, with the items written by the frontier adapters themselves.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { waitingReason } from '../../cli/crawl-progress.ts';
import { localProgressSource } from '../../cli/crawl-progress-source.ts';
import { CrawlProgressReader, WAIT_ITEMS_LIMIT } from '../../lambdas/adapters/crawl-progress-reader.ts';
import { createFrontierStore, type FrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { diffSnapshots } from '../../lambdas/shared/aws-call-counter.ts';
import { emptyPollerStats } from '../../local/event-source-poller.ts';
import { processMeters } from '../../local/process-meters.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';

let table: FrontierTableFixture;
let store: FrontierStore;
let reader: CrawlProgressReader;

before(async () => {
  table = await startFrontierTable();
  store = createFrontierStore(table.dynamodb, FRONTIER_TABLE);
  reader = new CrawlProgressReader(table.dynamodb, FRONTIER_TABLE);
});
after(() => table.stop());

test('counters: queued, done and failed of this crawl; zeros before anything was written', async () => {
  await store.addQueued('p-1', 7);
  await store.addCounters('p-1', { done: 3, byOutcome: { fetched: 2, failed: 1 } });
  await store.addQueued('p-other', 50);
  const counters = await reader.counters('p-1');
  assert.deepEqual(
    { queued: counters.queued, done: counters.done, byOutcome: counters.byOutcome, state: counters.state },
    { queued: 7, done: 3, byOutcome: { fetched: 2, failed: 1 }, state: 'running' },
  );
  const none = await reader.counters('p-none');
  assert.deepEqual([none.queued, none.done], [0, 0]);
});

test('waits: host pace and leases, robots.txt not ready; a robots retry is what the crawl waits for', async () => {
  const now = Date.now();
  const crawlId = 'p-2';
  // A host with a visit running, paced as the visit before it handed it back.
  const ticket = await store.wake(crawlId, 'a.test', now);
  const first = await store.acquire(crawlId, 'a.test', 'visit-1', now + 60_000, now, ticket);
  assert.ok(!('busy' in first));
  await store.release(crawlId, 'a.test', 'visit-1', {
    nextAt: now + 2000,
    pausedUntil: now + 1000,
    inflight: [],
    visitAt: now,
    ticket: 'hand-back',
  });
  const lease = await store.acquire(crawlId, 'a.test', 'visit-2', now + 60_000, now, 'hand-back');
  assert.ok(!('busy' in lease));
  await store.robots.saveUnavailable(crawlId, 'http://r.test', now + 42_000);
  await store.robots.saveReady(crawlId, 'http://ready.test', '{}', now);
  await store.robots.claim(crawlId, 'http://f.test', 30_000, now);
  await store.robots.saveUnavailable('p-other', 'http://other.test', now + 5000);

  const hosts = await reader.hosts(crawlId);
  assert.deepEqual(hosts, [
    { host: 'a.test', nextAt: now + 2000, pausedUntil: now + 1000, lease: now + 60_000 },
  ]);
  const robots = await reader.robots(crawlId);
  assert.deepEqual(
    robots.sort((a, b) => a.origin.localeCompare(b.origin)),
    [
      { origin: 'http://f.test', state: 'fetching', lease: now + 30_000 },
      { origin: 'http://r.test', state: 'unavailable', retryAt: now + 42_000, failures: 1 },
    ],
  );
  assert.equal(
    waitingReason({ hosts, robots }, now, 5000, 1000),
    'robots.txt of http://r.test unavailable (1 failed), retry in 42 s',
  );
});

test('waits stay bounded: at most WAIT_ITEMS_LIMIT host items per look', async () => {
  const now = Date.now();
  const crawlId = 'p-3';
  await Promise.all(
    Array.from({ length: WAIT_ITEMS_LIMIT + 10 }, (_, i) => store.wake(crawlId, `h${i}.test`, now)),
  );
  const hosts = await reader.hosts(crawlId);
  assert.equal(hosts.length, WAIT_ITEMS_LIMIT);
  assert.ok(hosts.every((h) => h.visitAt === now && h.lease === undefined));
});

test("the CLI's progress source: its reads are not counted into the crawl's AWS cost", async () => {
  await store.addQueued('p-4', 3);
  await store.addCounters('p-4', { done: 1, byOutcome: { failed: 1 } });
  const source = localProgressSource(
    {
      clientConfig: { dynamodb: table.dynamodbConfig },
      outputs: { FrontierTableName: FRONTIER_TABLE },
      stats: () => ({ total: { ...emptyPollerStats(), itemFailures: 2, batchFailures: 1 }, byFunction: {} }),
    },
    'p-4',
  );
  const before = processMeters.counter.snapshot();
  try {
    assert.deepEqual(await source.read(), {
      done: 1,
      queued: 3,
      byOutcome: { failed: 1 },
      retries: 3,
      state: 'running',
    });
    await source.waits();
  } finally {
    source.close?.();
  }
  assert.deepEqual(diffSnapshots(before, processMeters.counter.snapshot()).operations, {});
});
