/**
 * The scale simulation's metered fakes (test/fakes/metered-ports.ts) bill what the adapters make:
 * one scenario of admissions, a visit (wake, acquire, urls, postpone, release), finalize, drain and
 * completion's reads, run on the adapters over dynalite with the process's call counter
 * (lambdas/shared/aws-call-counter.ts) and on the metered fakes; the DynamoDB requests by operation
 * must be the same. The meter's own rules (partition throughput, item size) are checked here too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import type {
  FinalizeEntry,
  FrontierAdmission,
  FrontierUrl,
  HostUrlStore,
  HostVisits,
} from '../../lambdas/core/crawl/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { AwsCallCounter, countAwsCalls } from '../../lambdas/shared/aws-call-counter.ts';
import { AwsMeter, PARTITION_LIMITS, THROTTLE_ATTEMPTS, ThrottlingException } from '../fakes/aws-meter.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../fakes/host-visits.ts';
import { MeteredFrontierUrls, MeteredHostVisits } from '../fakes/metered-ports.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';
import { allUrls } from '../fixtures/host-urls.ts';

type Frontier = FrontierAdmission &
  HostUrlStore & { finalize(c: string, e: FinalizeEntry): Promise<unknown> };

function url(href: string, depth = 1): FrontierUrl {
  const normalized = normalizeUrl(href, { maxUrlLength: 2048 });
  assert.ok(normalized.ok);
  return { key: normalized.key, url: normalized.url, depth };
}

/** The same calls, in the same order, on either side. */
async function scenario(frontier: Frontier, hosts: HostVisits, crawlId: string): Promise<void> {
  const host = 'a.test';
  const now = Date.now();
  const links = [url('http://a.test/1'), url('http://a.test/2'), url('http://b.test/1')];
  await frontier.admit(crawlId, 'seed', links);
  // Again: all found by the read, nothing put.
  await frontier.admit(crawlId, 'seed', links);
  await frontier.addQueued(crawlId, 3);
  const ticket = await hosts.wake(crawlId, host, now);
  assert.ok(ticket, 'the first wake claims the send');
  assert.equal(await hosts.wake(crawlId, host, now), undefined, 'the second does not');
  const lease = await hosts.acquire(crawlId, host, 'inv1', now + 60_000, now, ticket);
  assert.ok(!('busy' in lease));
  const urls = await allUrls(frontier, crawlId, host);
  assert.equal(urls.length, 2);
  await frontier.postpone(crawlId, host, urls[0]!.key, 1, now + 2_000);
  await hosts.release(crawlId, host, 'inv1', {
    nextAt: now + 1_000,
    inflight: urls.map((u) => u.key),
    visitAt: now,
    ticket: 't2',
  });
  for (const u of urls)
    await frontier.finalize(crawlId, {
      key: u.key,
      url: u.url,
      outcome: 'fetched',
      bytes: 100,
      requests: 1,
      rid: `r-${u.key}`,
      part: 'results/x/part-1.jsonl.gz',
    });
  const again = await hosts.acquire(crawlId, host, 'inv2', now + 60_000, now + 2_000, 't2');
  assert.ok(!('busy' in again));
  const tally = { total: 2, byOutcome: { fetched: 2 }, bytes: 200, requests: 2, parts: [] };
  assert.equal(await hosts.drain(crawlId, host, 'inv2', again.wake, tally, { nextAt: now }), true);
  await hosts.anyActive(crawlId);
  await hosts.doneTotals(crawlId);
}

const dynamodbRequests = (operations: Record<string, { requests: number }>) =>
  Object.fromEntries(
    Object.entries(operations)
      .filter(([op, count]) => op.startsWith('DynamoDB:') && count.requests > 0)
      .map(([op, count]) => [op, count.requests])
      .sort(([a], [b]) => String(a).localeCompare(String(b))),
  );

describe('metered fakes bill the requests the adapters make', () => {
  let table: FrontierTableFixture;
  let client: DynamoDBClient;

  before(async () => {
    table = await startFrontierTable();
    client = table.newClient();
  });
  after(async () => {
    client?.destroy();
    await table?.stop();
  });

  it('the same DynamoDB requests by operation', async () => {
    const counter = new AwsCallCounter();
    const store = createFrontierStore(countAwsCalls(client, counter), FRONTIER_TABLE);
    await scenario(store, store, 'metered-contract');

    const meter = new AwsMeter({ now: Date.now, sleep: async () => {} }, Math.random);
    const urls = new MemoryFrontierUrls();
    await scenario(
      new MeteredFrontierUrls(urls, meter),
      new MeteredHostVisits(new MemoryHostVisits(), meter),
      'metered-contract',
    );

    assert.deepEqual(
      dynamodbRequests(meter.snapshot().operations),
      dynamodbRequests(counter.snapshot().operations),
    );
  });
});

describe('the meter', () => {
  it('throttles a partition key past its write units in a second, then lets it through the next', async () => {
    let now = 0;
    const meter = new AwsMeter(
      {
        now: () => now,
        sleep: async (ms) => {
          now += ms;
        },
      },
      () => 1,
    );
    const write = { op: 'DynamoDB:UpdateItem', pk: 'CRAWL#c', kind: 'host', wcu: 400 };
    await meter.request(write);
    await meter.request(write);
    assert.equal(meter.throttled, 0, 'within 1,000 WCU');
    const second = Math.floor(now / 1000);
    await meter.request(write);
    assert.equal(meter.throttled > 0, true, 'the third is throttled');
    assert.ok(Math.floor(now / 1000) > second, 'and goes through in a later second');
    assert.equal(meter.peak.wcu.units <= PARTITION_LIMITS.writeUnitsPerSecond, true);
    // Another key is not held back by this one's.
    const before = meter.throttled;
    await meter.request({ ...write, pk: 'URLS#c#a' });
    assert.equal(meter.throttled, before);
  });

  it('fails a request throttled past the SDK and retryStep attempts, as the adapter would', async () => {
    let now = 0;
    const meter = new AwsMeter({ now: () => now, sleep: async () => {} }, () => 0);
    const write = { op: 'DynamoDB:UpdateItem', pk: 'CRAWL#c', wcu: 1_000 };
    await meter.request(write);
    // The clock never moves: the second stays full.
    await assert.rejects(meter.request(write), ThrottlingException);
    assert.equal(meter.operations['DynamoDB:UpdateItem']!.requests, 1 + THROTTLE_ATTEMPTS);
    now += 1000;
  });

  it('records an item over 400 KB', async () => {
    const meter = new AwsMeter({ now: () => 0, sleep: async () => {} }, () => 0);
    await meter.request({
      op: 'DynamoDB:PutItem',
      pk: 'CRAWL#c',
      kind: 'config',
      wcu: 500,
      itemBytes: 500_000,
    });
    assert.deepEqual(Object.fromEntries(meter.violations), { 'DynamoDB item over 400 KB (config)': 1 });
    assert.deepEqual(meter.largestItem, { kind: 'config', bytes: 500_000 });
  });
});
