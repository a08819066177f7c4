/**
 * What link admission and the fetch batch rely on from host items (HostVisits), run against the
 * in-memory fake (test/fakes/host-visits.ts) and FrontierHosts on dynalite
 * (test/integration/port-contracts.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { VISIT_GRACE_MS } from '../../lambdas/adapters/frontier-hosts.ts';
import type { HostBusy, HostLease, HostTally, HostVisits } from '../../lambdas/core/crawl/index.ts';

const HOST = 'site.test';
const T0 = Date.UTC(2025, 0, 1);
const LEASE_MS = 60_000;

function leased(result: HostLease | HostBusy, why = ''): HostLease {
  assert.ok(!('busy' in result), `expected a lease${why && ` (${why})`}, got ${JSON.stringify(result)}`);
  return result;
}

function ticketOf(ticket: string | undefined): string {
  assert.ok(typeof ticket === 'string' && ticket.length > 0, `expected a ticket, got ${ticket}`);
  return ticket;
}

const tally = (total: number, more: Partial<HostTally> = {}): HostTally => ({
  total,
  byOutcome: { fetched: total },
  bytes: 100 * total,
  requests: total,
  parts: [],
  ...more,
});

export function hostVisitsContract(name: string, make: () => HostVisits): void {
  const crawl = () => `hosts-${randomUUID().slice(0, 8)}`;

  describe(`HostVisits contract: ${name}`, () => {
    it('of concurrent wakes of a new host one claims the visit send; while it is due no wake sends again, past the grace one does', async () => {
      const hosts = make();
      const crawlId = crawl();
      const tickets = await Promise.all(Array.from({ length: 6 }, () => hosts.wake(crawlId, HOST, T0)));
      assert.equal(tickets.filter((ticket) => ticket !== undefined).length, 1, `tickets: ${tickets.join()}`);
      assert.equal(await hosts.wake(crawlId, HOST, T0 + VISIT_GRACE_MS), undefined, 'still due');
      ticketOf(await hosts.wake(crawlId, HOST, T0 + VISIT_GRACE_MS + 1));
      assert.equal(await hosts.anyActive(crawlId), true);
      assert.equal(await hosts.anyActive(crawl()), false, 'hosts are per crawl');
    });

    it('a send confirmed (or a hand-back’s, sent before its release) is never sent again by a wake, however late; an unconfirmed one is, past the grace', async () => {
      const hosts = make();
      const crawlId = crawl();
      const late = T0 + 20 * 60_000;
      const ticket = ticketOf(await hosts.wake(crawlId, HOST, T0));
      await hosts.confirmSent(crawlId, HOST, 'not-the-ticket');
      await hosts.confirmSent(crawlId, HOST, ticket);
      assert.equal(await hosts.wake(crawlId, HOST, late), undefined, 'confirmed: on its way');
      leased(await hosts.acquire(crawlId, HOST, 'a', late + LEASE_MS, late, ticket));
      await hosts.release(crawlId, HOST, 'a', {
        nextAt: late,
        inflight: [],
        visitAt: late,
        ticket: 'b',
        sent: true,
      });
      assert.equal(
        await hosts.wake(crawlId, HOST, late + 20 * 60_000),
        undefined,
        'a hand-back’s: on its way',
      );
      const other = crawl();
      ticketOf(await hosts.wake(other, HOST, T0));
      await hosts.confirmSent(other, HOST, 'not-the-ticket');
      ticketOf(await hosts.wake(other, HOST, T0 + VISIT_GRACE_MS + 1));
    });

    it('a send given back (unwake with its ticket) lets the next wake send; another ticket gives back nothing', async () => {
      const hosts = make();
      const crawlId = crawl();
      const first = ticketOf(await hosts.wake(crawlId, HOST, T0));
      await hosts.unwake(crawlId, HOST, 'not-the-ticket');
      assert.equal(await hosts.wake(crawlId, HOST, T0 + 1), undefined);
      await hosts.unwake(crawlId, HOST, first);
      assert.notEqual(ticketOf(await hosts.wake(crawlId, HOST, T0 + 2)), first);
      await hosts.unwake(crawl(), HOST, first); // no host item: nothing happens
    });

    it('only the message the host expects takes it: another ticket is stale, a host with no item is idle', async () => {
      const hosts = make();
      const crawlId = crawl();
      assert.deepEqual(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, 'x'), { busy: 'idle' });
      const ticket = ticketOf(await hosts.wake(crawlId, HOST, T0));
      assert.deepEqual(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, 'other'), {
        busy: 'stale',
      });
      assert.deepEqual(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0), { busy: 'stale' });
      const lease = leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, ticket));
      assert.deepEqual(lease, {
        holder: 'a',
        leaseUntil: T0 + LEASE_MS,
        wake: 1,
        nextAt: 0,
        inflight: [],
      });
    });

    it('a lease is exclusive until it ends: another visit finds it held until then, and takes it after', async () => {
      const hosts = make();
      const crawlId = crawl();
      const ticket = ticketOf(await hosts.wake(crawlId, HOST, T0));
      leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, ticket));
      assert.deepEqual(
        await hosts.acquire(crawlId, HOST, 'b', T0 + 2 * LEASE_MS, T0 + 1, ticket),
        { busy: 'held', until: T0 + LEASE_MS, copy: true },
        'a copy of the message the live visit came with',
      );
      assert.deepEqual(await hosts.acquire(crawlId, HOST, 'b', T0 + 2 * LEASE_MS, T0 + 1), {
        busy: 'held',
        until: T0 + LEASE_MS,
      });
      assert.deepEqual(await hosts.acquire(crawlId, HOST, 'b', T0 + 2 * LEASE_MS, T0 + LEASE_MS), {
        busy: 'held',
        until: T0 + LEASE_MS,
      });
      leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0 + 2), 'its own holder again');
      const taken = leased(await hosts.acquire(crawlId, HOST, 'b', T0 + 3 * LEASE_MS, T0 + LEASE_MS + 1));
      assert.equal(taken.holder, 'b');
      // Its first holder lost it: its release changes nothing.
      await hosts.release(crawlId, HOST, 'a', { nextAt: 7, inflight: ['k'], visitAt: T0, ticket: 't-a' });
      assert.deepEqual(await hosts.acquire(crawlId, HOST, 'c', T0 + 4 * LEASE_MS, T0 + LEASE_MS + 2, 't-a'), {
        busy: 'held',
        until: T0 + 3 * LEASE_MS,
      });
    });

    it('a release hands the host to the message carrying its ticket, with pace, inflight and cursor; no wake sends while that message is due', async () => {
      const hosts = make();
      const crawlId = crawl();
      const ticket = ticketOf(await hosts.wake(crawlId, HOST, T0));
      leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, ticket));
      await hosts.release(crawlId, HOST, 'a', {
        nextAt: T0 + 900,
        inflight: ['k1'],
        cursor: 'c1',
        visitAt: T0 + 5000,
        ticket: 'next',
      });
      assert.equal(await hosts.wake(crawlId, HOST, T0 + 10), undefined, 'a visit is due');
      assert.deepEqual(await hosts.acquire(crawlId, HOST, 'b', T0 + LEASE_MS, T0 + 10, ticket), {
        busy: 'stale',
      });
      assert.deepEqual(leased(await hosts.acquire(crawlId, HOST, 'b', T0 + LEASE_MS, T0 + 10, 'next')), {
        holder: 'b',
        leaseUntil: T0 + LEASE_MS,
        wake: 2,
        nextAt: T0 + 900,
        inflight: ['k1'],
        cursor: 'c1',
      });
    });

    it('a host handed back awaiting results is hurried once, with the ticket it expects; the copy sent then takes it and the original finds it held, as a copy; a host leased, or handed back otherwise, is not', async () => {
      const hosts = make();
      const crawlId = crawl();
      const ticket = ticketOf(await hosts.wake(crawlId, HOST, T0));
      leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, ticket));
      assert.deepEqual(await hosts.awaiting(crawlId), [], 'leased');
      assert.equal(await hosts.hurry(crawlId, HOST, T0 + 1), undefined, 'leased');
      await hosts.release(crawlId, HOST, 'a', {
        nextAt: T0,
        inflight: ['k1'],
        visitAt: T0 + 2000,
        ticket: 'next',
        sent: true,
        awaiting: true,
      });
      // Another host of the crawl, woken and never visited, does not await results.
      await hosts.wake(crawlId, 'other.test', T0 + 1);
      assert.deepEqual(await hosts.awaiting(crawlId), [HOST]);
      assert.deepEqual(await hosts.awaiting(crawl()), [], 'hosts are per crawl');
      assert.equal(await hosts.hurry(crawlId, HOST, T0 + 2), 'next');
      assert.equal(await hosts.hurry(crawlId, HOST, T0 + 3), undefined, 'once');
      assert.deepEqual(await hosts.awaiting(crawlId), []);
      assert.equal(await hosts.wake(crawlId, HOST, T0 + 4), undefined, 'its message is on its way');
      leased(await hosts.acquire(crawlId, HOST, 'b', T0 + LEASE_MS, T0 + 5, 'next'));
      assert.deepEqual(
        await hosts.acquire(crawlId, HOST, 'c', T0 + LEASE_MS, T0 + 2000, 'next'),
        { busy: 'held', until: T0 + LEASE_MS, copy: true },
        'a copy of the message the live visit came with',
      );
      assert.deepEqual(await hosts.acquire(crawlId, HOST, 'c', T0 + LEASE_MS, T0 + 2000), {
        busy: 'held',
        until: T0 + LEASE_MS,
      });
      await hosts.release(crawlId, HOST, 'b', {
        nextAt: T0,
        inflight: [],
        visitAt: T0 + 30_000,
        ticket: 'later',
        sent: true,
      });
      assert.deepEqual(await hosts.awaiting(crawlId), [], 'handed back for other work');
      assert.equal(await hosts.hurry(crawlId, HOST, T0 + 6), undefined);
      assert.equal(await hosts.hurry(crawlId, 'gone.test', T0 + 7), undefined, 'no host item');
    });

    it('a render hold is kept until its own token ends it, with no live lease; the end moves the pace on, never back', async () => {
      const hosts = make();
      const crawlId = crawl();
      const ticket = ticketOf(await hosts.wake(crawlId, HOST, T0));
      leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, ticket));
      const hold = { token: 'r1', until: T0 + 3_600_000 };
      assert.equal(await hosts.holdForRender(crawlId, HOST, 'x', hold), false, 'only by the holder');
      assert.equal(await hosts.renderHold(crawlId, HOST), undefined);
      assert.equal(await hosts.holdForRender(crawlId, HOST, 'a', hold), true);
      assert.deepEqual(await hosts.renderHold(crawlId, HOST), hold, 'held before the release');
      assert.equal(
        await hosts.endRender(crawlId, HOST, 'r1', T0 + 5_000, T0 + 1),
        undefined,
        'not before the release',
      );
      await hosts.release(crawlId, HOST, 'a', {
        nextAt: T0 + 1_000,
        inflight: ['k1'],
        visitAt: T0 + 30_000,
        ticket: 'hold',
        sent: true,
        awaiting: true,
        rendering: hold,
      });
      assert.deepEqual(await hosts.renderHold(crawlId, HOST), hold);
      // The hold's own message, early: the visit sees the hold, and hands the host back keeping it.
      const early = leased(await hosts.acquire(crawlId, HOST, 'b', T0 + LEASE_MS, T0 + 2, 'hold'));
      assert.deepEqual(early.rendering, hold);
      assert.equal(await hosts.endRender(crawlId, HOST, 'r1', T0 + 5_000, T0 + 3), undefined, 'leased');
      await hosts.release(crawlId, HOST, 'b', {
        nextAt: early.nextAt,
        inflight: early.inflight,
        visitAt: T0 + 30_000,
        ticket: 'hold2',
        sent: true,
        awaiting: true,
        rendering: hold,
      });
      assert.equal(await hosts.endRender(crawlId, HOST, 'r0', T0 + 5_000, T0 + 4), undefined, 'another hold');
      assert.equal(await hosts.endRender(crawlId, HOST, 'r1', T0 + 5_000, T0 + 5), 'hold2');
      assert.equal(await hosts.endRender(crawlId, HOST, 'r1', T0 + 5_000, T0 + 6), undefined, 'once');
      assert.equal(await hosts.renderHold(crawlId, HOST), undefined);
      assert.deepEqual(await hosts.awaiting(crawlId), []);
      const after = leased(await hosts.acquire(crawlId, HOST, 'c', T0 + LEASE_MS, T0 + 7, 'hold2'));
      assert.equal(after.rendering, undefined);
      assert.equal(after.nextAt, T0 + 5_000, 'the pace moved on to the end of the render');
      // A later pace is kept: an end whose nextAt is earlier leaves it.
      await hosts.release(crawlId, HOST, 'c', {
        nextAt: T0 + 60_000,
        inflight: [],
        visitAt: T0 + 30_000,
        ticket: 'hold3',
        sent: true,
        rendering: { token: 'r2', until: T0 + 3_600_000 },
      });
      assert.equal(await hosts.endRender(crawlId, HOST, 'r2', T0 + 9_000, T0 + 8), 'hold3');
      const kept = leased(await hosts.acquire(crawlId, HOST, 'd', T0 + LEASE_MS, T0 + 9, 'hold3'));
      assert.equal(kept.nextAt, T0 + 60_000);
    });

    it('a drain deletes the host and records its tally, unless a wake came after the lease was taken', async () => {
      const hosts = make();
      const crawlId = crawl();
      const ticket = ticketOf(await hosts.wake(crawlId, HOST, T0));
      const lease = leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, ticket));
      assert.equal(await hosts.wake(crawlId, HOST, T0 + 1), undefined, 'leased: no send, but counted');
      assert.equal(await hosts.drain(crawlId, HOST, 'a', lease.wake, tally(2), { nextAt: T0 + 50 }), false);
      assert.equal(await hosts.anyActive(crawlId), true, 'woken meanwhile: still active');
      const again = leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0 + 2));
      assert.equal(again.wake, 2);
      assert.equal(await hosts.drain(crawlId, HOST, 'a', again.wake, tally(3), { nextAt: T0 + 60 }), true);
      assert.equal(await hosts.anyActive(crawlId), false);
      assert.deepEqual(await hosts.doneTotals(crawlId), { hosts: 1, ...tally(3) });
      assert.equal(
        await hosts.drain(crawlId, HOST, 'a', again.wake, tally(3), { nextAt: 0 }),
        true,
        'repeat',
      );
    });

    it('a drained host woken again is paced from its tally; a smaller, older tally never replaces a larger one', async () => {
      const hosts = make();
      const crawlId = crawl();
      const first = ticketOf(await hosts.wake(crawlId, HOST, T0));
      const lease = leased(await hosts.acquire(crawlId, HOST, 'a', T0 + LEASE_MS, T0, first));
      const pace = { nextAt: T0 + 7000, pausedUntil: T0 + 6000 };
      assert.equal(
        await hosts.drain(crawlId, HOST, 'a', lease.wake, tally(5, { parts: ['p1'] }), pace),
        true,
      );
      const second = ticketOf(await hosts.wake(crawlId, HOST, T0 + 10));
      const next = leased(await hosts.acquire(crawlId, HOST, 'b', T0 + LEASE_MS, T0 + 10, second));
      assert.deepEqual(
        { nextAt: next.nextAt, pausedUntil: next.pausedUntil, wake: next.wake },
        { ...pace, wake: 1 },
      );
      assert.equal(await hosts.drain(crawlId, HOST, 'b', next.wake, tally(3), { nextAt: 0 }), false);
      assert.equal(await hosts.anyActive(crawlId), true);
      const other = ticketOf(await hosts.wake(crawlId, 'other.test', T0));
      const otherLease = leased(await hosts.acquire(crawlId, 'other.test', 'c', T0 + LEASE_MS, T0, other));
      const otherTally = tally(1, { byOutcome: { failed: 1 }, bytes: 0, parts: ['p2'] });
      assert.equal(
        await hosts.drain(crawlId, 'other.test', 'c', otherLease.wake, otherTally, { nextAt: 0 }),
        true,
      );
      const totals = await hosts.doneTotals(crawlId);
      assert.deepEqual(
        { ...totals, parts: totals.parts.toSorted() },
        {
          hosts: 2,
          total: 6,
          byOutcome: { fetched: 5, failed: 1 },
          bytes: 500,
          requests: 6,
          parts: ['p1', 'p2'],
        },
      );
    });

    it('hosts of one crawl, wherever their items are kept, are all active until the last drains, and all summed', async () => {
      const hosts = make();
      const crawlId = crawl();
      // Forty hosts: the adapter spreads them over most of its 32 shards (frontier-schema.ts).
      const names = Array.from({ length: 40 }, (_, i) => `h${i}.test`);
      const leases = new Map<string, HostLease>();
      for (const host of names) {
        const ticket = ticketOf(await hosts.wake(crawlId, host, T0));
        leases.set(host, leased(await hosts.acquire(crawlId, host, `v-${host}`, T0 + LEASE_MS, T0, ticket)));
      }
      for (const host of names) {
        assert.equal(await hosts.anyActive(crawlId), true, `${host} and after it still active`);
        const lease = leases.get(host)!;
        assert.equal(
          await hosts.drain(crawlId, host, lease.holder, lease.wake, tally(2), { nextAt: 0 }),
          true,
        );
      }
      assert.equal(await hosts.anyActive(crawlId), false);
      const totals = await hosts.doneTotals(crawlId);
      assert.deepEqual(
        { hosts: totals.hosts, total: totals.total, fetched: totals.byOutcome.fetched },
        { hosts: 40, total: 80, fetched: 80 },
      );
    });
  });
}
