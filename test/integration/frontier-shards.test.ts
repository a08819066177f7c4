// A crawl's host, DONE# and robots items spread over FRONTIER_SHARDS partition keys
// (adapters/frontier-schema.ts), and completion over them (docs/frontier.md, "Completion"), against
// dynalite: the shards are read one after another, so completion must not be fooled by a host that
// drains between two shard reads.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { shardOf } from '../../lambdas/adapters/frontier-schema.ts';
import { createFrontierStore, type FrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { FRONTIER_LIMITS, FRONTIER_SHARDS } from '../../lambdas/core/base/index.ts';
import type { HostLease, HostTally } from '../../lambdas/core/crawl/index.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';

let table: FrontierTableFixture;
let store: FrontierStore;
let crawlSeq = 0;
const newCrawl = () => `shards-${++crawlSeq}`;
const LEASE_MS = 60_000;
const partsWritten = async () => true;

const tally = (total: number, bytes = 0): HostTally => ({
  total,
  byOutcome: { fetched: total },
  bytes,
  requests: total,
  parts: [],
});

/** Wakes the host and takes its visit's lease, as a visit message arriving does. */
async function activate(crawlId: string, host: string, on = store): Promise<HostLease> {
  const now = Date.now();
  const ticket = await on.wake(crawlId, host, now);
  const lease = await on.acquire(crawlId, host, `visit-${host}`, now + LEASE_MS, now, ticket);
  assert.ok(!('busy' in lease), `${host} leased`);
  return lease;
}

async function drain(crawlId: string, host: string, lease: HostLease, total: number, on = store) {
  assert.equal(await on.drain(crawlId, host, lease.holder, lease.wake, tally(total), { nextAt: 0 }), true);
}

/** The first of `h0.test`, `h1.test`, ... whose shard `accept` takes. */
function hostWhere(accept: (shard: number) => boolean): string {
  for (let i = 0; ; i++) if (accept(shardOf(`h${i}.test`))) return `h${i}.test`;
}

/**
 * A client of the table that runs `hook` (once) just before the `nth` Query of HOST# items on
 * `host`'s shard is sent: what other visits do between the completion check's shard reads.
 */
function hookedClient(
  hooks: Array<{ host: string; nth: number; hook: () => Promise<void> }>,
): DynamoDBClient {
  const raw = table.dynamodb;
  const seen = new Map<string, number>();
  const client = Object.create(raw) as DynamoDBClient;
  client.send = (async (command: { input?: Record<string, unknown> }, ...rest: unknown[]) => {
    const values = command.input?.ExpressionAttributeValues as Record<string, { S?: string }> | undefined;
    const pk = values?.[':pk']?.S;
    if (pk !== undefined && values?.[':prefix']?.S === 'HOST#') {
      const count = (seen.get(pk) ?? 0) + 1;
      seen.set(pk, count);
      for (const entry of hooks)
        if (pk.endsWith(`#${String(shardOf(entry.host)).padStart(2, '0')}`) && entry.nth === count)
          await entry.hook();
    }
    return (raw.send as (...args: unknown[]) => Promise<unknown>)(command, ...rest);
  }) as DynamoDBClient['send'];
  return client;
}

before(async () => {
  table = await startFrontierTable();
  store = createFrontierStore(table.dynamodb, FRONTIER_TABLE);
});

after(async () => {
  await table?.stop();
});

describe('sharded crawl items', () => {
  it('a crawl with hosts on many shards completes exactly once, with the totals of every shard', async () => {
    const crawlId = newCrawl();
    const hosts = Array.from({ length: 48 }, (_, i) => `site${i}.test`);
    const shards = new Set(hosts.map(shardOf));
    assert.ok(shards.size >= FRONTIER_SHARDS / 2, `the hosts cover ${shards.size} shards`);
    const leases = new Map<string, HostLease>();
    for (const host of hosts) leases.set(host, await activate(crawlId, host));
    // Every host but the one on the highest shard drains; that one keeps the crawl running.
    const last = hosts.reduce((a, b) => (shardOf(b) > shardOf(a) ? b : a));
    for (const [i, host] of hosts.entries())
      if (host !== last) await drain(crawlId, host, leases.get(host)!, i + 1);
    assert.equal(await store.anyActive(crawlId), true, 'the last shard’s host is active');
    const early = await store.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.equal(early.completedNow, false);

    await drain(crawlId, last, leases.get(last)!, hosts.indexOf(last) + 1);
    const confirmations = await Promise.all(
      Array.from({ length: 6 }, () => store.confirmCompletion(crawlId, new Date(), partsWritten)),
    );
    assert.equal(confirmations.filter((c) => c.completedNow).length, 1, 'complete exactly once');
    const total = (hosts.length * (hosts.length + 1)) / 2;
    const counters = await store.readCounters(crawlId);
    assert.equal(counters?.state, 'complete');
    assert.deepEqual(
      { queued: counters?.queued, done: counters?.done, fetched: counters?.byOutcome.fetched },
      { queued: total, done: total, fetched: total },
    );
    assert.equal((await store.doneTotals(crawlId)).hosts, hosts.length);
  });

  it('a look starts at the shard where the last look found a host: one Query a look for a crawl of one host', async () => {
    const crawlId = newCrawl();
    const host = hostWhere((shard) => shard >= 16);
    await activate(crawlId, host);
    let queries = 0;
    const counting = Object.create(table.dynamodb) as DynamoDBClient;
    counting.send = ((command: unknown, ...rest: unknown[]) => {
      queries++;
      return (table.dynamodb.send as (...args: unknown[]) => Promise<unknown>)(command, ...rest);
    }) as DynamoDBClient['send'];
    const looking = createFrontierStore(counting, FRONTIER_TABLE);
    assert.equal(await looking.anyActive(crawlId), true);
    // Read 8 at a time (shardReadsAtOnce): up to the host's shard, and the others already in flight.
    const first = queries;
    assert.ok(
      first >= shardOf(host) + 1 && first <= shardOf(host) + FRONTIER_LIMITS.shardReadsAtOnce,
      `the first look reads up to the host’s shard (${first} queries, host on shard ${shardOf(host)})`,
    );
    queries = 0;
    assert.equal(await looking.anyActive(crawlId), true);
    assert.equal(queries, 1, 'the next starts there');
  });

  it('a host woken on a shard already read, by a host that drains before its own shard is read, keeps the crawl running', async () => {
    const crawlId = newCrawl();
    // b's shard is read before a's.
    const a = hostWhere((shard) => shard >= 20);
    const b = hostWhere((shard) => shard < shardOf(a) && shard >= 10);
    const leaseA = await activate(crawlId, a);
    let leaseB: HostLease | undefined;
    const hooked = createFrontierStore(
      hookedClient([
        {
          // a's page links b (b is woken on a shard just read), then a drains: both before a's shard is read.
          host: a,
          nth: 1,
          hook: async () => {
            leaseB = await activate(crawlId, b);
            await drain(crawlId, a, leaseA, 5);
          },
        },
      ]),
      FRONTIER_TABLE,
    );
    const check = await hooked.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.ok(leaseB !== undefined, 'the hook ran in the first look');
    assert.equal(check.completedNow, false, 'b is still active: not complete');
    assert.notEqual(check.counters.state, 'complete');

    await drain(crawlId, b, leaseB, 3);
    const done = await store.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.equal(done.completedNow, true);
    assert.equal(done.counters.done, 8, 'both hosts counted');
  });

  it('a chain of hosts that drain while each look reads past them changes the DONE# sums: not complete', async () => {
    const crawlId = newCrawl();
    // Shards c < b < a: the first look misses b (woken behind it by a), the second misses c (woken by b).
    const a = hostWhere((shard) => shard >= 22);
    const b = hostWhere((shard) => shard >= 11 && shard < 22);
    const c = hostWhere((shard) => shard < 11);
    const leaseA = await activate(crawlId, a);
    let leaseB: HostLease | undefined;
    let leaseC: HostLease | undefined;
    const hooked = createFrontierStore(
      hookedClient([
        {
          host: a,
          nth: 1,
          hook: async () => {
            leaseB = await activate(crawlId, b);
            await drain(crawlId, a, leaseA, 5);
          },
        },
        {
          // b's second HOST# read is the second look's: b wakes c (read already) and drains first.
          host: b,
          nth: 2,
          hook: async () => {
            leaseC = await activate(crawlId, c);
            await drain(crawlId, b, leaseB!, 3);
          },
        },
      ]),
      FRONTIER_TABLE,
    );
    const check = await hooked.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.ok(leaseC !== undefined, 'both hooks ran: neither look saw a host');
    assert.equal(check.completedNow, false, 'the sums differ (b drained between them): not complete');

    await drain(crawlId, c, leaseC, 2);
    const done = await store.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.equal(done.completedNow, true);
    assert.equal(done.counters.done, 10, 'every host counted');
  });
});
