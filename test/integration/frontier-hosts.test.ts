// Host items of visits and the DONE tallies of drained hosts (docs/design/host-visits.md) against dynalite.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AttributeValue, type DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { FrontierHosts, LeaseLostError, VISIT_GRACE_MS } from '../../lambdas/adapters/frontier-hosts.ts';
import { resolveOptions } from '../../lambdas/adapters/frontier-schema.ts';
import type { HostLease, HostTally } from '../../lambdas/core/ports.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';

const TABLE = FRONTIER_TABLE;
const HOST = 'example.com:443';
let table: FrontierTableFixture;
let dynamodb: DynamoDBClient;
let hosts: FrontierHosts;
let crawlSeq = 0;
const newCrawl = () => `crawl-${++crawlSeq}`;
const rawItem = (crawlId: string, sk: string) => table.rawItem(crawlId, sk);
const LEASE_MS = 60_000;

before(async () => {
  table = await startFrontierTable();
  dynamodb = table.dynamodb;
  hosts = new FrontierHosts(dynamodb, TABLE, resolveOptions());
});

after(() => table.stop());

function leased(result: HostLease | 'held' | 'idle'): HostLease {
  assert.ok(typeof result === 'object', `expected a lease, got ${result}`);
  return result;
}

const tally = (total: number, more: Partial<HostTally> = {}): HostTally => ({
  total,
  byOutcome: { fetched: total },
  bytes: 100 * total,
  requests: total,
  parts: ['results/c/part-1.jsonl.gz'],
  ...more,
});

describe('wake', () => {
  it('of a new host by 20 concurrent admissions: one sends the visit, wake counts all 20', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const sends = await Promise.all(Array.from({ length: 20 }, () => hosts.wake(crawlId, HOST, now)));
    assert.equal(sends.filter(Boolean).length, 1);
    const item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.wake?.N, '20');
    assert.equal(item?.visitAt?.N, String(now));
    assert.ok(item?.expiresAt?.N);
    assert.equal(item?.lease, undefined);
  });

  it('sends nothing while a visit is due or live; sends once when the last visit is overdue', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    assert.equal(await hosts.wake(crawlId, HOST, now), true);
    // The visit message is on its way (visitAt fresh): no second send, however many admissions.
    assert.equal(await hosts.wake(crawlId, HOST, now + 1000), false);
    assert.equal(await hosts.wake(crawlId, HOST, now + VISIT_GRACE_MS), false);
    // Past the grace with no lease taken, the message is presumed lost: one waker sends again.
    const late = now + VISIT_GRACE_MS + 1;
    assert.equal(await hosts.wake(crawlId, HOST, late), true);
    assert.equal(await hosts.wake(crawlId, HOST, late), false);
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.wake?.N, '5');

    // A live lease: the visit will see the URL (or fail to drain), so nothing is sent.
    const lease = leased(await hosts.acquire(crawlId, HOST, 'visit-1', late + LEASE_MS, late));
    assert.equal(lease.wake, 5);
    assert.equal(await hosts.wake(crawlId, HOST, late + LEASE_MS - 1), false);
    assert.equal(await hosts.wake(crawlId, HOST, late + LEASE_MS), false, 'the lease runs to its end');
    // The lease ran out (its visit crashed) and acquire cleared visitAt: the next wake sends.
    assert.equal(await hosts.wake(crawlId, HOST, late + LEASE_MS + 1), true);
  });

  it('sends nothing before a handed-back visit is due', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    await hosts.wake(crawlId, HOST, now);
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now));
    const visitAt = now + 600_000; // sent back with a delay
    await hosts.release(crawlId, HOST, 'visit-1', { nextAt: now + 1000, inflight: [], visitAt });
    assert.equal(await hosts.wake(crawlId, HOST, now + 1000), false);
    assert.equal(await hosts.wake(crawlId, HOST, visitAt + VISIT_GRACE_MS), false);
    assert.equal(await hosts.wake(crawlId, HOST, visitAt + VISIT_GRACE_MS + 1), true);
  });
});

describe('acquire', () => {
  it('gives one of two concurrent visits the lease, the other finds it held', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    await hosts.wake(crawlId, HOST, now);
    const [a, b] = await Promise.all([
      hosts.acquire(crawlId, HOST, 'visit-a', now + LEASE_MS, now),
      hosts.acquire(crawlId, HOST, 'visit-b', now + LEASE_MS, now),
    ]);
    const results = [a, b];
    assert.equal(results.filter((result) => result === 'held').length, 1);
    const lease = leased(results.find((result) => result !== 'held') ?? 'held');
    assert.deepEqual(lease, {
      holder: lease.holder,
      leaseUntil: now + LEASE_MS,
      wake: 1,
      nextAt: 0,
      inflight: [],
    });
    const item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.holder?.S, lease.holder);
    assert.equal(item?.lease?.N, String(now + LEASE_MS));
    assert.equal(item?.visitAt, undefined, 'the visit message has arrived');
  });

  it('takes over an expired lease, with the pace and inflight the last visit saved', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    await hosts.wake(crawlId, HOST, now);
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now));
    await hosts.checkpoint(crawlId, HOST, 'visit-1', {
      leaseUntil: now + LEASE_MS,
      nextAt: now + 5000,
      pausedUntil: now + 4000,
      inflight: ['k1', 'k2', 'k1'],
    });
    assert.equal(await hosts.acquire(crawlId, HOST, 'visit-2', now + 2 * LEASE_MS, now + LEASE_MS), 'held');
    const lease = leased(
      await hosts.acquire(crawlId, HOST, 'visit-2', now + 2 * LEASE_MS, now + LEASE_MS + 1),
    );
    assert.deepEqual(
      { ...lease, inflight: lease.inflight.toSorted() },
      {
        holder: 'visit-2',
        leaseUntil: now + 2 * LEASE_MS,
        wake: 1,
        nextAt: now + 5000,
        pausedUntil: now + 4000,
        inflight: ['k1', 'k2'],
      },
    );
  });

  it('finds a host with no item idle', async () => {
    const crawlId = newCrawl();
    assert.equal(await hosts.acquire(crawlId, HOST, 'visit-1', Date.now() + LEASE_MS, Date.now()), 'idle');
    assert.equal(await rawItem(crawlId, `HOST#${HOST}`), undefined, 'not created');
  });
});

describe('checkpoint and release', () => {
  it('checkpoint extends the lease and saves the pace; a lost lease throws LeaseLostError', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    await hosts.wake(crawlId, HOST, now);
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + 1000, now));
    await hosts.checkpoint(crawlId, HOST, 'visit-1', {
      leaseUntil: now + LEASE_MS,
      nextAt: now + 2000,
      pausedUntil: now + 1500,
      inflight: ['k1'],
    });
    let item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.lease?.N, String(now + LEASE_MS));
    assert.equal(item?.next?.N, String(now + 2000));
    assert.equal(item?.pausedUntil?.N, String(now + 1500));
    assert.deepEqual(item?.inflight?.SS, ['k1']);
    // An empty inflight and no pause are removed (DynamoDB has no empty sets).
    await hosts.checkpoint(crawlId, HOST, 'visit-1', {
      leaseUntil: now + 1000,
      nextAt: now + 3000,
      inflight: [],
    });
    item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.inflight, undefined);
    assert.equal(item?.pausedUntil, undefined);
    assert.equal(item?.next?.N, String(now + 3000));

    leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 1001));
    await assert.rejects(
      hosts.checkpoint(crawlId, HOST, 'visit-1', { leaseUntil: now + LEASE_MS, nextAt: 0, inflight: [] }),
      (err: unknown) => err instanceof LeaseLostError && err.name === 'LeaseLostError',
    );
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.holder?.S, 'visit-2', 'unchanged');
  });

  it('release saves the pace and visitAt and frees the host; a lost lease is ignored', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    await hosts.wake(crawlId, HOST, now);
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now));
    await hosts.release(crawlId, HOST, 'visit-1', {
      nextAt: now + 2000,
      inflight: ['k1', 'k2'],
      visitAt: now + 3000,
    });
    const item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.lease, undefined);
    assert.equal(item?.holder, undefined);
    assert.equal(item?.next?.N, String(now + 2000));
    assert.equal(item?.visitAt?.N, String(now + 3000));
    assert.deepEqual(item?.inflight?.SS?.toSorted(), ['k1', 'k2']);

    // The handed-back visit arrives and takes the host at once (no lease left to wait for).
    leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 3000));
    await hosts.release(crawlId, HOST, 'visit-1', { nextAt: 0, inflight: [], visitAt: 0 });
    const later = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(later?.holder?.S, 'visit-2');
    assert.equal(later?.next?.N, String(now + 2000));
    assert.equal(later?.visitAt, undefined);
  });
});

describe('drain', () => {
  it('loses to an admission made during the visit (the lost wakeup), then drains on the next visit', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    await hosts.wake(crawlId, HOST, now);
    const first = leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now));
    // Another host's page admits a URL here while the visit is finishing: a live lease, no send.
    assert.equal(await hosts.wake(crawlId, HOST, now + 10), false);
    assert.equal(
      await hosts.drain(crawlId, HOST, 'visit-1', first.wake, tally(3), { nextAt: now + 900 }),
      false,
    );
    assert.ok(await rawItem(crawlId, `HOST#${HOST}`), 'the host item stays: it has work');
    assert.equal(
      (await rawItem(crawlId, `DONE#${HOST}`))?.total?.N,
      '3',
      'to be overwritten by the next drain',
    );

    await hosts.release(crawlId, HOST, 'visit-1', { nextAt: now + 1000, inflight: [], visitAt: now + 20 });
    const second = leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 20));
    assert.equal(second.wake, first.wake + 1);
    assert.equal(
      await hosts.drain(crawlId, HOST, 'visit-2', first.wake, tally(4), { nextAt: now + 2000 }),
      false,
      'the old wake no longer drains',
    );
    const done = tally(4, { byOutcome: { fetched: 3, failed: 1 }, bytes: 42, parts: ['p1', 'p2', 'p1'] });
    assert.equal(
      await hosts.drain(crawlId, HOST, 'visit-2', second.wake, done, {
        nextAt: now + 2000,
        pausedUntil: now + 1500,
      }),
      true,
    );
    assert.equal(await rawItem(crawlId, `HOST#${HOST}`), undefined);
    const item = await rawItem(crawlId, `DONE#${HOST}`);
    assert.deepEqual(
      {
        total: item?.total?.N,
        fetched: item?.o_fetched?.N,
        failed: item?.o_failed?.N,
        skipped: item?.o_skipped,
        bytes: item?.bytes?.N,
        requests: item?.requests?.N,
        parts: item?.parts?.SS?.toSorted(),
        next: item?.next?.N,
        pausedUntil: item?.pausedUntil?.N,
      },
      {
        total: '4',
        fetched: '3',
        failed: '1',
        skipped: undefined,
        bytes: '42',
        requests: '4',
        parts: ['p1', 'p2'],
        next: String(now + 2000),
        pausedUntil: String(now + 1500),
      },
    );
    assert.ok(item?.expiresAt?.N);
  });

  it('keeps the pace of a drained host for when it is woken again', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    await hosts.wake(crawlId, HOST, now);
    const first = leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now));
    assert.equal(
      await hosts.drain(crawlId, HOST, 'visit-1', first.wake, tally(1, { parts: [] }), {
        nextAt: now + 1000,
        pausedUntil: now + 800,
      }),
      true,
    );
    assert.equal((await rawItem(crawlId, `DONE#${HOST}`))?.parts, undefined, 'no empty set');
    // A link to the host found right after: a new host item, one visit sent, paced from the last request.
    assert.equal(await hosts.wake(crawlId, HOST, now + 100), true);
    const again = leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 100));
    assert.deepEqual(
      { wake: again.wake, nextAt: again.nextAt, pausedUntil: again.pausedUntil },
      { wake: 1, nextAt: now + 1000, pausedUntil: now + 800 },
    );
  });

  it('does not let a visit whose lease ran out overwrite the tally of the visit that took over', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    await hosts.wake(crawlId, HOST, now);
    const stale = leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + 1000, now));
    const fresh = leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 1001));
    assert.equal(
      await hosts.drain(crawlId, HOST, 'visit-2', fresh.wake, tally(5), { nextAt: now + 2000 }),
      true,
    );
    assert.equal(await hosts.drain(crawlId, HOST, 'visit-1', stale.wake, tally(3), { nextAt: now }), false);
    const item = await rawItem(crawlId, `DONE#${HOST}`);
    assert.equal(item?.total?.N, '5');
    assert.equal(item?.next?.N, String(now + 2000));
  });
});

describe('completion reads', () => {
  it('anyActive sees only the crawl’s host items, consistently', async () => {
    const crawlId = newCrawl();
    const other = newCrawl();
    const now = Date.now();
    assert.equal(await hosts.anyActive(crawlId), false);
    await hosts.wake(other, HOST, now);
    assert.equal(await hosts.anyActive(crawlId), false, 'another crawl’s host');
    await hosts.wake(crawlId, 'a.example:443', now);
    await hosts.wake(crawlId, 'b.example:443', now);
    assert.equal(await hosts.anyActive(crawlId), true);
    for (const host of ['a.example:443', 'b.example:443']) {
      const lease = leased(await hosts.acquire(crawlId, host, `visit-${host}`, now + LEASE_MS, now));
      assert.equal(await hosts.anyActive(crawlId), true);
      assert.equal(
        await hosts.drain(crawlId, host, lease.holder, lease.wake, tally(1), { nextAt: now }),
        true,
      );
    }
    assert.equal(await hosts.anyActive(crawlId), false, 'DONE items are not active');
    assert.equal(await hosts.anyActive(other), true);
  });

  it('doneTotals sums the DONE items of every drained host, over Query pages', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    assert.deepEqual(await hosts.doneTotals(crawlId), {
      hosts: 0,
      total: 0,
      byOutcome: {},
      bytes: 0,
      requests: 0,
      parts: [],
    });
    // Twenty hosts of ~90 KB (many index parts each) pass a Query's 1 MB page.
    const HOSTS = 20;
    const bigParts = (host: number) =>
      Array.from(
        { length: 1500 },
        (_, i) => `results/${crawlId}/2024-05-01T12-00-00-000Z-${host}-${i}.jsonl.gz`,
      );
    for (let i = 0; i < HOSTS; i++) {
      const host = `h${i}.example:443`;
      await hosts.wake(crawlId, host, now);
      const lease = leased(await hosts.acquire(crawlId, host, `visit-${i}`, now + LEASE_MS, now));
      const done: HostTally = {
        total: 3,
        byOutcome: i % 2 === 0 ? { fetched: 2, skipped: 1 } : { fetched: 1, failed: 2 },
        bytes: 1000 + i,
        requests: 2,
        parts: ['results/shared.jsonl.gz', ...bigParts(i)],
      };
      assert.equal(await hosts.drain(crawlId, host, lease.holder, lease.wake, done, { nextAt: now }), true);
    }
    // A host still active is not in the totals.
    await hosts.wake(crawlId, 'active.example:443', now);

    const pages = await countPages(crawlId);
    assert.ok(pages > 1, `the DONE items span ${pages} Query page(s)`);
    const totals = await hosts.doneTotals(crawlId);
    assert.deepEqual(
      { ...totals, parts: totals.parts.length },
      {
        hosts: HOSTS,
        total: 3 * HOSTS,
        byOutcome: { fetched: 3 * (HOSTS / 2), skipped: HOSTS / 2, failed: 2 * (HOSTS / 2) },
        bytes: 1000 * HOSTS + (HOSTS * (HOSTS - 1)) / 2,
        requests: 2 * HOSTS,
        parts: 1 + 1500 * HOSTS,
      },
    );
    assert.ok(totals.parts.includes('results/shared.jsonl.gz'));
  });
});

describe('writes repeated by the SDK after a lost answer', () => {
  it('still send the visit, keep the lease and report the drain', async () => {
    // The SDK repeats a write whose answer was lost (a timeout after the write took effect). A repeat
    // that failed its own condition would strand the host: no visit sent, a lease dropped, or a
    // drained host that nobody checks completion for.
    const client = table.newClient();
    const lose = new Set<string>();
    const repeated: string[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { UpdateExpression?: string };
        const what =
          context.commandName === 'UpdateItemCommand'
            ? input.UpdateExpression?.includes('visitBy = ')
              ? 'claim'
              : input.UpdateExpression?.includes('holder = ')
                ? 'acquire'
                : 'other'
            : String(context.commandName);
        const out = await next(args);
        if (lose.delete(what)) {
          repeated.push(what);
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        }
        return out;
      },
      { step: 'deserialize', name: 'loseAnswers' },
    );
    const flaky = new FrontierHosts(client, TABLE, resolveOptions());
    const crawlId = newCrawl();
    const now = Date.now();

    lose.add('claim');
    assert.equal(await flaky.wake(crawlId, HOST, now), true);
    lose.add('acquire');
    const lease = leased(await flaky.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now));
    lose.add('DeleteItemCommand');
    assert.equal(await flaky.drain(crawlId, HOST, 'visit-1', lease.wake, tally(1), { nextAt: now }), true);
    assert.deepEqual(repeated, ['claim', 'acquire', 'DeleteItemCommand']);
    assert.equal(await rawItem(crawlId, `HOST#${HOST}`), undefined);
    client.destroy();
  });
});

async function countPages(crawlId: string): Promise<number> {
  let pages = 0;
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await dynamodb.send(
      new QueryCommand({
        TableName: TABLE,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': { S: `CRAWL#${crawlId}` }, ':prefix': { S: 'DONE#' } },
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    pages++;
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined);
  return pages;
}
