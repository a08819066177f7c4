// Host items of visits and the DONE tallies of drained hosts (docs/design/host-visits.md) against dynalite.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type AttributeValue, type DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { FrontierHosts, VISIT_GRACE_MS } from '../../lambdas/adapters/frontier-hosts.ts';
import { crawlShardPk, resolveOptions, shardOf } from '../../lambdas/adapters/frontier-schema.ts';
import type { HostBusy, HostLease, HostTally } from '../../lambdas/core/crawl/index.ts';
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

function leased(result: HostLease | HostBusy): HostLease {
  assert.ok(!('busy' in result), `expected a lease, got ${JSON.stringify(result)}`);
  return result;
}

/** The ticket a wake was given: the one that had to send the visit message. */
function sent(ticket: string | undefined): string {
  assert.ok(typeof ticket === 'string' && ticket.length > 0, `expected a ticket, got ${ticket}`);
  return ticket;
}

const STALE: HostBusy = { busy: 'stale' };
const IDLE: HostBusy = { busy: 'idle' };
const held = (until: number): HostBusy => ({ busy: 'held', until });

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
    const tickets = sends.filter((ticket) => ticket !== undefined);
    assert.equal(tickets.length, 1);
    const item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.wake?.N, '20');
    assert.equal(item?.visitAt?.N, String(now));
    assert.equal(item?.visitBy?.S, sent(tickets[0]), 'the host expects the sender’s message');
    assert.ok(item?.expiresAt?.N);
    assert.equal(item?.lease, undefined);
  });

  it('a send that failed is given back (unwake): the next wake sends again; another ticket gives back nothing', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const first = sent(await hosts.wake(crawlId, HOST, now));
    await hosts.unwake(crawlId, HOST, 'not-the-ticket');
    assert.equal(await hosts.wake(crawlId, HOST, now + 1), undefined, 'still the first send');
    await hosts.unwake(crawlId, HOST, first);
    const second = sent(await hosts.wake(crawlId, HOST, now + 2));
    assert.notEqual(second, first);
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.visitBy?.S, second);
  });

  it('a claim whose answer was lost is given back: the retried wake sends the visit', async () => {
    // The fault suite's (c): the claim's write took effect and its answer failed; the wake threw, so
    // its caller never learnt the ticket. Had the claim stood, every later wake would find a visit
    // due and send none, and the host would never be visited.
    const crawlId = newCrawl();
    let lost = 0;
    const lossy = Object.create(dynamodb) as DynamoDBClient;
    lossy.send = (async (command: Parameters<DynamoDBClient['send']>[0]) => {
      const out = await dynamodb.send(command as QueryCommand);
      const input = command.input as { UpdateExpression?: string };
      if (lost === 0 && input.UpdateExpression?.startsWith('SET #visitAt')) {
        lost++;
        throw Object.assign(new Error('Service is unavailable.'), { name: 'ServiceUnavailable' });
      }
      return out;
    }) as DynamoDBClient['send'];
    const flaky = new FrontierHosts(lossy, TABLE, resolveOptions());
    const now = Date.now();
    await assert.rejects(flaky.wake(crawlId, HOST, now), /unavailable/);
    assert.equal(lost, 1);
    const ticket = sent(await flaky.wake(crawlId, HOST, now + 1));
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.visitBy?.S, ticket);
  });

  it('sends nothing while a visit is due or live; sends once when the last visit is overdue', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    sent(await hosts.wake(crawlId, HOST, now));
    // The visit message is on its way (visitAt fresh): no second send, however many admissions.
    assert.equal(await hosts.wake(crawlId, HOST, now + 1000), undefined);
    assert.equal(await hosts.wake(crawlId, HOST, now + VISIT_GRACE_MS), undefined);
    // Past the grace with no lease taken, the message is presumed lost: one waker sends again.
    const late = now + VISIT_GRACE_MS + 1;
    const ticket = sent(await hosts.wake(crawlId, HOST, late));
    assert.equal(await hosts.wake(crawlId, HOST, late), undefined);
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.wake?.N, '5');

    // A live lease: the visit will see the URL (or fail to drain), so nothing is sent.
    const lease = leased(await hosts.acquire(crawlId, HOST, 'visit-1', late + LEASE_MS, late, ticket));
    assert.equal(lease.wake, 5);
    assert.equal(await hosts.wake(crawlId, HOST, late + LEASE_MS - 1), undefined);
    assert.equal(await hosts.wake(crawlId, HOST, late + LEASE_MS), undefined, 'the lease runs to its end');
    // The lease ran out (its visit crashed) and acquire cleared visitAt: the next wake sends.
    sent(await hosts.wake(crawlId, HOST, late + LEASE_MS + 1));
  });

  it('sends nothing before a handed-back visit is due', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    const visitAt = now + 600_000; // sent back with a delay
    await hosts.release(crawlId, HOST, 'visit-1', {
      nextAt: now + 1000,
      inflight: [],
      visitAt,
      ticket: randomUUID(),
    });
    assert.equal(await hosts.wake(crawlId, HOST, now + 1000), undefined);
    assert.equal(await hosts.wake(crawlId, HOST, visitAt + VISIT_GRACE_MS), undefined);
    sent(await hosts.wake(crawlId, HOST, visitAt + VISIT_GRACE_MS + 1));
  });
});

describe('acquire', () => {
  it('gives one of two concurrent visits the lease; the other, a copy of the message it came with, finds it held as a copy', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    // Two copies of the visit message (SQS delivers at least once), both carrying the wake's ticket.
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    const [a, b] = await Promise.all([
      hosts.acquire(crawlId, HOST, 'visit-a', now + LEASE_MS, now, ticket),
      hosts.acquire(crawlId, HOST, 'visit-b', now + LEASE_MS, now, ticket),
    ]);
    const results = [a, b];
    assert.deepEqual(
      results.filter((result) => 'busy' in result),
      [{ ...held(now + LEASE_MS), copy: true }],
    );
    const lease = leased(results.find((result) => !('busy' in result)) ?? IDLE);
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
    assert.equal(item?.visitBy, undefined, 'no message is expected while the visit runs');
  });

  it('takes over an expired lease, with the pace and inflight the last hand-back saved', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const first = sent(await hosts.wake(crawlId, HOST, now));
    leased(await hosts.acquire(crawlId, HOST, 'visit-0', now + LEASE_MS, now, first));
    const ticket = randomUUID();
    await hosts.release(crawlId, HOST, 'visit-0', {
      nextAt: now + 5000,
      pausedUntil: now + 4000,
      inflight: ['k1', 'k2', 'k1'],
      visitAt: now,
      ticket,
    });
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    // The crashed visit's message, redelivered: it waits for the lease to run out, then takes over.
    assert.deepEqual(
      await hosts.acquire(crawlId, HOST, 'visit-2', now + 2 * LEASE_MS, now + LEASE_MS, ticket),
      { ...held(now + LEASE_MS), copy: true },
    );
    const lease = leased(
      await hosts.acquire(crawlId, HOST, 'visit-2', now + 2 * LEASE_MS, now + LEASE_MS + 1, ticket),
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
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-1', Date.now() + LEASE_MS, Date.now()), IDLE);
    assert.deepEqual(
      await hosts.acquire(crawlId, HOST, 'visit-1', Date.now() + LEASE_MS, Date.now(), randomUUID()),
      IDLE,
      'whatever its ticket',
    );
    assert.equal(await rawItem(crawlId, `HOST#${HOST}`), undefined, 'not created');
  });
});

describe('tickets: only the visit message the host expects takes it', () => {
  it('a wake’s ticket takes the host; another ticket, or none, finds it stale', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.visitBy?.S, ticket);
    assert.deepEqual(
      await hosts.acquire(crawlId, HOST, 'visit-x', now + LEASE_MS, now, randomUUID()),
      STALE,
      'another message (a duplicate send, a late copy)',
    );
    assert.deepEqual(
      await hosts.acquire(crawlId, HOST, 'visit-y', now + LEASE_MS, now),
      STALE,
      'a message with no ticket while one is expected',
    );
    const before = await rawItem(crawlId, `HOST#${HOST}`);
    assert.deepEqual(
      {
        lease: before?.lease,
        holder: before?.holder,
        visitAt: before?.visitAt?.N,
        visitBy: before?.visitBy?.S,
      },
      { lease: undefined, holder: undefined, visitAt: String(now), visitBy: ticket },
      'stale messages change nothing',
    );

    const lease = leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now + 1, ticket));
    assert.equal(lease.holder, 'visit-1');
    const item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.visitBy, undefined);
    assert.equal(item?.visitAt, undefined);
    // A copy of the same message, delivered while its visit runs: it waits for the lease (as a copy,
    // looked at again soon); a message the host never took, too.
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 2, ticket), {
      ...held(now + LEASE_MS),
      copy: true,
    });
    assert.deepEqual(
      await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 2),
      held(now + LEASE_MS),
    );
  });

  it('after a hand-back, the old ticket is stale and the hand-back’s ticket takes the host', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const t1 = sent(await hosts.wake(crawlId, HOST, now));
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, t1));
    const t2 = randomUUID();
    await hosts.release(crawlId, HOST, 'visit-1', {
      nextAt: now + 1000,
      inflight: ['k1'],
      visitAt: now + 2000,
      ticket: t2,
    });
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.visitBy?.S, t2);

    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-x', now + LEASE_MS, now + 2000, t1), STALE);
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-y', now + LEASE_MS, now + 2000), STALE);
    const lease = leased(
      await hosts.acquire(crawlId, HOST, 'visit-2', now + 2000 + LEASE_MS, now + 2000, t2),
    );
    assert.deepEqual(
      { holder: lease.holder, nextAt: lease.nextAt, inflight: lease.inflight },
      { holder: 'visit-2', nextAt: now + 1000, inflight: ['k1'] },
    );
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.visitBy, undefined);

    // Handed back again: now t2 is the old ticket.
    const t3 = randomUUID();
    await hosts.release(crawlId, HOST, 'visit-2', {
      nextAt: now + 3000,
      inflight: [],
      visitAt: now + 4000,
      ticket: t3,
    });
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-x', now + LEASE_MS, now + 4000, t2), STALE);
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-x', now + LEASE_MS, now + 4000, t1), STALE);
    leased(await hosts.acquire(crawlId, HOST, 'visit-3', now + 4000 + LEASE_MS, now + 4000, t3));
  });

  it('held reports when the live lease ends, and whether the message is a copy of the one the live visit came with', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + 1000, now, ticket));
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 10, ticket), {
      ...held(now + 1000),
      copy: true,
    });
    assert.deepEqual(
      await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 10),
      held(now + 1000),
    );
    assert.deepEqual(
      await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 1000, 'another-ticket'),
      held(now + 1000),
      'the lease runs to its end',
    );
    // Past it (the visit crashed), a copy of the message takes over: no other message is expected.
    const lease = leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 1001, ticket));
    assert.equal(lease.holder, 'visit-2');
  });

  it('rescues a lost visit message: a wake past the grace issues a new ticket, the old one is stale', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const lost = sent(await hosts.wake(crawlId, HOST, now));
    assert.equal(await hosts.wake(crawlId, HOST, now + VISIT_GRACE_MS), undefined);
    const rescue = sent(await hosts.wake(crawlId, HOST, now + VISIT_GRACE_MS + 1));
    assert.notEqual(rescue, lost);
    const item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.visitBy?.S, rescue);
    assert.equal(item?.visitAt?.N, String(now + VISIT_GRACE_MS + 1));
    // The message presumed lost turns up after all: it dies, so only one visit runs.
    assert.deepEqual(
      await hosts.acquire(crawlId, HOST, 'visit-lost', now + LEASE_MS, now + VISIT_GRACE_MS + 2, lost),
      STALE,
    );
    leased(
      await hosts.acquire(crawlId, HOST, 'visit-rescue', now + LEASE_MS, now + VISIT_GRACE_MS + 2, rescue),
    );
  });

  it('rescues a lost hand-back the same way', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    const handBack = randomUUID();
    const visitAt = now + 1000;
    await hosts.release(crawlId, HOST, 'visit-1', { nextAt: now, inflight: [], visitAt, ticket: handBack });
    assert.equal(await hosts.wake(crawlId, HOST, visitAt + VISIT_GRACE_MS), undefined);
    const rescue = sent(await hosts.wake(crawlId, HOST, visitAt + VISIT_GRACE_MS + 1));
    assert.notEqual(rescue, handBack);
    const late = visitAt + VISIT_GRACE_MS + 2;
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-2', late + LEASE_MS, late, handBack), STALE);
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-2', late + LEASE_MS, late, ticket), STALE);
    leased(await hosts.acquire(crawlId, HOST, 'visit-3', late + LEASE_MS, late, rescue));
  });

  it('rescues a crashed visit: a wake after its lease issues a new ticket, its redelivered message is stale', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    const rescue = sent(await hosts.wake(crawlId, HOST, now + LEASE_MS + 1));
    assert.notEqual(rescue, ticket);
    const late = now + LEASE_MS + 2;
    assert.deepEqual(await hosts.acquire(crawlId, HOST, 'visit-2', late + LEASE_MS, late, ticket), STALE);
    leased(await hosts.acquire(crawlId, HOST, 'visit-3', late + LEASE_MS, late, rescue));
  });
});

describe('a backlog: a visit message known to be queued is never sent again', () => {
  const MINUTE = 60_000;

  it('a wake’s confirmed send: wakes for 20 minutes send nothing, and the one message takes the host', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    await hosts.confirmSent(crawlId, HOST, ticket);
    for (let t = now + MINUTE; t <= now + 20 * MINUTE; t += MINUTE)
      assert.equal(await hosts.wake(crawlId, HOST, t), undefined, `a wake ${(t - now) / MINUTE} min later`);
    const item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.visitBy?.S, ticket);
    assert.equal(item?.wake?.N, '21', 'every wake still counted');
    const late = now + 20 * MINUTE + 1;
    const lease = leased(await hosts.acquire(crawlId, HOST, 'visit-1', late + LEASE_MS, late, ticket));
    assert.equal(lease.wake, 21);
    // Taken: the next wake after the visit may send again (the visit's hand-back or drain decides).
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.sent, undefined);
  });

  it('a hand-back’s message (sent before the release) waits 20 minutes: no wake sends another', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    const handBack = randomUUID();
    await hosts.release(crawlId, HOST, 'visit-1', {
      nextAt: now,
      inflight: [],
      visitAt: now + 1000,
      ticket: handBack,
      sent: true,
    });
    for (let t = now + MINUTE; t <= now + 20 * MINUTE; t += MINUTE)
      assert.equal(await hosts.wake(crawlId, HOST, t), undefined, `a wake ${(t - now) / MINUTE} min later`);
    const late = now + 20 * MINUTE + 1;
    leased(await hosts.acquire(crawlId, HOST, 'visit-2', late + LEASE_MS, late, handBack));
  });

  it('an unconfirmed claim (its sender died before the send) is still sent again past the grace; a confirm of a ticket no longer expected does nothing', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const lost = sent(await hosts.wake(crawlId, HOST, now));
    const rescue = sent(await hosts.wake(crawlId, HOST, now + VISIT_GRACE_MS + 1));
    await hosts.confirmSent(crawlId, HOST, lost);
    assert.equal(
      (await rawItem(crawlId, `HOST#${HOST}`))?.sent,
      undefined,
      'the lost ticket confirms nothing',
    );
    await hosts.confirmSent(crawlId, HOST, rescue);
    assert.equal(await hosts.wake(crawlId, HOST, now + 30 * MINUTE), undefined);
    await hosts.confirmSent(newCrawl(), HOST, rescue); // no host item: nothing happens
  });

  it('the takeover sweep still claims a host whose confirmed message a killed process sent', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    await hosts.confirmSent(crawlId, HOST, ticket);
    const swept = await hosts.sweep(crawlId, now + 10, now + 1);
    assert.equal(swept.length, 1);
    assert.notEqual(swept[0]?.ticket, ticket);
  });
});

describe('release', () => {
  it('release saves the pace, visitAt and ticket and frees the host; a lost lease is ignored', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    const handBack = randomUUID();
    await hosts.release(crawlId, HOST, 'visit-1', {
      nextAt: now + 2000,
      inflight: ['k1', 'k2'],
      visitAt: now + 3000,
      ticket: handBack,
    });
    const item = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(item?.lease, undefined);
    assert.equal(item?.holder, undefined);
    assert.equal(item?.next?.N, String(now + 2000));
    assert.equal(item?.visitAt?.N, String(now + 3000));
    assert.equal(item?.visitBy?.S, handBack);
    assert.deepEqual(item?.inflight?.SS?.toSorted(), ['k1', 'k2']);

    // The handed-back visit arrives and takes the host at once (no lease left to wait for).
    leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 3000, handBack));
    await hosts.release(crawlId, HOST, 'visit-1', {
      nextAt: 0,
      inflight: [],
      visitAt: 0,
      ticket: randomUUID(),
    });
    const later = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(later?.holder?.S, 'visit-2');
    assert.equal(later?.next?.N, String(now + 2000));
    assert.equal(later?.visitAt, undefined);
    assert.equal(later?.visitBy, undefined, 'the lost visit’s hand-back ticket is not recorded');

    // An empty inflight and no pause are removed, not written (DynamoDB has no empty sets).
    await hosts.release(crawlId, HOST, 'visit-2', {
      nextAt: now + 4000,
      inflight: [],
      visitAt: now + 5000,
      ticket: randomUUID(),
    });
    const emptied = await rawItem(crawlId, `HOST#${HOST}`);
    assert.equal(emptied?.inflight, undefined);
    assert.equal(emptied?.pausedUntil, undefined);
    assert.equal(emptied?.next?.N, String(now + 4000));
  });
});

describe('drain', () => {
  it('loses to an admission made during the visit (the lost wakeup), then drains on the next visit', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    const first = leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    // Another host's page admits a URL here while the visit is finishing: a live lease, no send.
    assert.equal(await hosts.wake(crawlId, HOST, now + 10), undefined);
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

    const handBack = randomUUID();
    await hosts.release(crawlId, HOST, 'visit-1', {
      nextAt: now + 1000,
      inflight: [],
      visitAt: now + 20,
      ticket: handBack,
    });
    const second = leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 20, handBack));
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
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    const first = leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    assert.equal(
      await hosts.drain(crawlId, HOST, 'visit-1', first.wake, tally(1, { parts: [] }), {
        nextAt: now + 1000,
        pausedUntil: now + 800,
      }),
      true,
    );
    assert.equal((await rawItem(crawlId, `DONE#${HOST}`))?.parts, undefined, 'no empty set');
    // A link to the host found right after: a new host item, one visit sent, paced from the last request.
    const again = leased(
      await hosts.acquire(
        crawlId,
        HOST,
        'visit-2',
        now + LEASE_MS,
        now + 100,
        sent(await hosts.wake(crawlId, HOST, now + 100)),
      ),
    );
    assert.deepEqual(
      { wake: again.wake, nextAt: again.nextAt, pausedUntil: again.pausedUntil },
      { wake: 1, nextAt: now + 1000, pausedUntil: now + 800 },
    );
  });

  it('does not let a visit whose lease ran out overwrite the tally of the visit that took over', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const ticket = sent(await hosts.wake(crawlId, HOST, now));
    const stale = leased(await hosts.acquire(crawlId, HOST, 'visit-1', now + 1000, now, ticket));
    const fresh = leased(await hosts.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 1001, ticket));
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
    const tickets = new Map<string, string>();
    for (const host of ['a.example:443', 'b.example:443'])
      tickets.set(host, sent(await hosts.wake(crawlId, host, now)));
    assert.equal(await hosts.anyActive(crawlId), true);
    for (const host of ['a.example:443', 'b.example:443']) {
      const lease = leased(
        await hosts.acquire(crawlId, host, `visit-${host}`, now + LEASE_MS, now, tickets.get(host)),
      );
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
    // Twenty hosts of ~90 KB (many index parts each) on one shard pass a Query's 1 MB page.
    const HOSTS = 20;
    const shard = shardOf('h0.example:443');
    const names = Array.from({ length: 2000 }, (_, i) => `h${i}.example:443`)
      .filter((host) => shardOf(host) === shard)
      .slice(0, HOSTS);
    const bigParts = (host: number) =>
      Array.from(
        { length: 1500 },
        (_, i) => `results/${crawlId}/2024-05-01T12-00-00-000Z-${host}-${i}.jsonl.gz`,
      );
    for (const [i, host] of names.entries()) {
      const ticket = sent(await hosts.wake(crawlId, host, now));
      const lease = leased(await hosts.acquire(crawlId, host, `visit-${i}`, now + LEASE_MS, now, ticket));
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

    const pages = await countPages(crawlShardPk(crawlId, shard));
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
  it('still send the visit, keep the lease, hand the host back and report the drain', async () => {
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
            ? input.UpdateExpression?.includes('= :token')
              ? 'claim'
              : input.UpdateExpression?.includes('holder = ')
                ? 'acquire'
                : input.UpdateExpression?.includes('REMOVE')
                  ? 'release'
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
    const ticket = sent(await flaky.wake(crawlId, HOST, now));
    assert.equal(
      (await rawItem(crawlId, `HOST#${HOST}`))?.visitBy?.S,
      ticket,
      'the ticket returned is the one recorded',
    );
    lose.add('acquire');
    leased(await flaky.acquire(crawlId, HOST, 'visit-1', now + LEASE_MS, now, ticket));
    const handBack = randomUUID();
    lose.add('release');
    await flaky.release(crawlId, HOST, 'visit-1', {
      nextAt: now,
      inflight: [],
      visitAt: now + 10,
      ticket: handBack,
    });
    assert.equal((await rawItem(crawlId, `HOST#${HOST}`))?.visitBy?.S, handBack);
    const lease = leased(await flaky.acquire(crawlId, HOST, 'visit-2', now + LEASE_MS, now + 10, handBack));
    lose.add('DeleteItemCommand');
    assert.equal(await flaky.drain(crawlId, HOST, 'visit-2', lease.wake, tally(1), { nextAt: now }), true);
    assert.deepEqual(repeated, ['claim', 'acquire', 'release', 'DeleteItemCommand']);
    assert.equal(await rawItem(crawlId, `HOST#${HOST}`), undefined);
    client.destroy();
  });
});

async function countPages(pk: string): Promise<number> {
  let pages = 0;
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await dynamodb.send(
      new QueryCommand({
        TableName: TABLE,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': { S: pk }, ':prefix': { S: 'DONE#' } },
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    pages++;
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined);
  return pages;
}
