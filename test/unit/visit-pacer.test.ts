import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VisitPacer } from '../../lambdas/core/fetch/index.ts';

/** A clock that moves only when set or slept on. */
function manualClock(start: number) {
  let at = start;
  return {
    now: () => at,
    sleep: async (ms: number) => {
      at += ms;
    },
    set: (ms: number) => {
      at = ms;
    },
  };
}

describe('VisitPacer: one host, paced in memory by the visit that owns it', () => {
  it('hands out slots a gap apart, starting at the saved next time', async () => {
    const pacer = new VisitPacer({ nextAt: 10_000 });
    assert.equal(await pacer.reserve(1_000, 5_000), 10_000);
    assert.equal(await pacer.reserve(1_000, 5_000), 11_000);
    assert.equal(await pacer.reserve(1_000, 20_000), 20_000, 'an idle host goes at once');
    assert.deepEqual(pacer.state, { nextAt: 21_000 });
  });

  it('measures the gap from when a request really left: a late request pushes the next one back', async () => {
    let clock = 1_000;
    const slept: number[] = [];
    const now = () => clock;
    const sleep = async (ms: number) => {
      slept.push(ms);
      clock += ms;
    };
    const pacer = new VisitPacer({ nextAt: 0 });
    assert.equal(await pacer.reserve(1_000, clock), 1_000);
    clock = 1_400; // this request leaves 400 ms after its slot
    await pacer.depart(now, sleep);
    assert.equal(await pacer.reserve(1_000, 1_500), 2_400, 'the next slot counts from the real departure');
    clock = 2_000; // even a request that tries to leave early waits out the gap
    await pacer.depart(now, sleep);
    assert.deepEqual(slept, [400]);
    assert.equal(clock, 2_400);
  });

  it('a request written to the socket late (a busy event loop) keeps the next one a gap after the real send', async () => {
    const clock = manualClock(1_000);
    const pacer = new VisitPacer({ nextAt: 0 });
    await pacer.reserve(1_000, clock.now());
    await pacer.depart(clock.now, clock.sleep);
    pacer.sent(1_250); // departed at 1,000, on the wire at 1,250
    pacer.sent(900); // an earlier time never pulls the pace forward
    clock.set(2_000);
    await pacer.depart(clock.now, clock.sleep);
    assert.equal(clock.now(), 2_250, 'the gap counts from the send, not from the departure');
    assert.deepEqual(pacer.state, { nextAt: 3_250 });
  });

  it('a Retry-After pause holds every later slot back and is kept for the host item', async () => {
    const pacer = new VisitPacer({ nextAt: 0 });
    await pacer.pushBack(60_000);
    assert.equal(pacer.state.pausedUntil, 60_000);
    assert.equal(await pacer.reserve(1_000, 2_000), 60_000);
    await pacer.pushBack(30_000);
    assert.equal(pacer.state.pausedUntil, 60_000, 'a shorter pause never shortens a longer one');
    assert.deepEqual(pacer.state, { nextAt: 61_000, pausedUntil: 60_000 });
  });

  it('refund: a request refused before it reached the host gives its slot and its departure back', async () => {
    const clock = manualClock(5_000);
    const pacer = new VisitPacer({ nextAt: 0 });
    await pacer.reserve(1_000, clock.now());
    await pacer.depart(clock.now, clock.sleep);
    pacer.sent(5_010);
    assert.deepEqual(pacer.state, { nextAt: 6_010 });
    // The next request takes its slot and departs, then the address guard refuses it.
    clock.set(6_010);
    assert.equal(await pacer.reserve(1_000, clock.now()), 6_010);
    await pacer.depart(clock.now, clock.sleep);
    pacer.refund();
    assert.deepEqual(pacer.state, { nextAt: 6_010 }, 'the pace is as before its reservation');
    assert.equal(pacer.departureAt(6_010), 6_010, 'the one after it goes at once');
    pacer.refund();
    assert.deepEqual(pacer.state, { nextAt: 6_010 }, 'a second refund takes nothing more back');
  });
});
