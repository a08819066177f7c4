import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BodyBudget, type BodyLease } from '../../lambdas/core/fetch/index.ts';

const KiB = 1024;
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Reserves and records when the grant arrives. */
function reserve(lease: BodyLease, bytes: number, log: string[], name: string): boolean {
  return lease.reserve(bytes, () => log.push(name));
}

describe('BodyBudget', () => {
  it('grants what fits and gives it back when the body ends', () => {
    const budget = new BodyBudget(100 * KiB);
    const lease = budget.lease();
    assert.equal(
      lease.reserve(64 * KiB, () => assert.fail('granted at once')),
      true,
    );
    assert.equal(budget.usedBytes, 64 * KiB);
    lease.keep(40 * KiB);
    assert.equal(lease.reservedBytes, 24 * KiB);
    assert.equal(lease.keptBytes, 40 * KiB);
    // Topping up to 64 KiB asks for the 40 KiB used.
    assert.equal(
      lease.reserve(64 * KiB, () => {}),
      true,
    );
    assert.equal(budget.usedBytes, 104 * KiB - 40 * KiB + 40 * KiB);
    lease.end();
    assert.equal(budget.usedBytes, 0);
    assert.equal(budget.peakBytes, 104 * KiB);
  });

  it('lets the first lease that does not fit overdraw, queues the others in order', async () => {
    const budget = new BodyBudget(100 * KiB);
    const log: string[] = [];
    const a = budget.lease();
    const b = budget.lease();
    const c = budget.lease();
    const d = budget.lease();
    assert.equal(reserve(a, 80 * KiB, log, 'a'), true);
    assert.equal(reserve(b, 64 * KiB, log, 'b'), true, 'b overdraws');
    assert.equal(budget.usedBytes, 144 * KiB);
    assert.equal(reserve(c, 10 * KiB, log, 'c'), false, 'c waits although 10 KiB is small');
    assert.equal(reserve(d, 10 * KiB, log, 'd'), false);
    assert.equal(budget.waiting, 2);
    // The overdrawing lease keeps reading past the budget.
    b.keep(64 * KiB);
    assert.equal(reserve(b, 64 * KiB, log, 'b'), true);
    assert.equal(budget.usedBytes, 208 * KiB);
    // a ends: 128 KiB still in use (b's), over the budget, so c and d still wait.
    a.end();
    await tick();
    assert.deepEqual(log, []);
    // b ends: its excess leaves with it; c and d fit.
    b.end();
    await tick();
    assert.deepEqual(log, ['c', 'd']);
    assert.equal(budget.usedBytes, 20 * KiB);
    assert.equal(budget.waiting, 0);
    assert.equal(budget.waits, 2, 'c and d each waited once');
    c.end();
    d.end();
    assert.equal(budget.usedBytes, 0);
  });

  it('calls the grant from a microtask, never from inside the caller that gave bytes back', async () => {
    const budget = new BodyBudget(10 * KiB);
    const log: string[] = [];
    const a = budget.lease();
    const b = budget.lease();
    const c = budget.lease();
    reserve(a, 20 * KiB, log, 'a');
    assert.equal(reserve(b, 5 * KiB, log, 'b'), false);
    a.end();
    assert.deepEqual(log, [], 'not synchronously');
    assert.equal(b.reservedBytes, 5 * KiB, 'the bytes are b’s already');
    assert.equal(reserve(c, 5 * KiB, log, 'c'), true, 'c fits behind b');
    await Promise.resolve();
    assert.deepEqual(log, ['b']);
    b.end();
    c.end();
  });

  it('passes the overdraft on when the head waiter does not fit and nobody else overdraws', async () => {
    const budget = new BodyBudget(100 * KiB);
    const log: string[] = [];
    const a = budget.lease();
    const b = budget.lease();
    const c = budget.lease();
    reserve(a, 90 * KiB, log, 'a');
    reserve(b, 128 * KiB, log, 'b'); // overdraws: 218 KiB
    assert.equal(reserve(c, 128 * KiB, log, 'c'), false);
    b.keep(128 * KiB);
    b.end(); // 90 KiB in use: c does not fit, but may overdraw now
    await tick();
    assert.deepEqual(log, ['c']);
    assert.equal(budget.usedBytes, 218 * KiB);
    a.end();
    c.end();
    assert.equal(budget.usedBytes, 0);
  });

  it('keeps a body charged to its hold until the hold is released', async () => {
    const budget = new BodyBudget(100 * KiB);
    const hold = budget.hold();
    const lease = await hold.run(async () => {
      await tick();
      assert.equal(budget.currentHold(), hold, 'the hold follows the async context');
      const lease = budget.lease(budget.currentHold());
      lease.reserve(64 * KiB, () => {});
      lease.keep(50 * KiB);
      return lease;
    });
    assert.equal(budget.currentHold(), undefined);
    lease.end();
    assert.equal(budget.usedBytes, 50 * KiB, 'the unused reservation is back, the body held');
    assert.equal(hold.bytes, 50 * KiB);
    hold.release();
    assert.equal(budget.usedBytes, 0);
    assert.equal(hold.bytes, 0);
    hold.release();
    assert.equal(budget.usedBytes, 0, 'release is idempotent');
  });

  it('gives a body back at once when its hold was released before it completed', () => {
    const budget = new BodyBudget(100 * KiB);
    const hold = budget.hold();
    const lease = budget.lease(hold);
    lease.reserve(64 * KiB, () => {});
    lease.keep(30 * KiB);
    hold.release();
    lease.end();
    assert.equal(budget.usedBytes, 0);
  });

  it('moves the right to overdraw to the hold of the body that overdrew, until it is released', async () => {
    const budget = new BodyBudget(100 * KiB);
    const log: string[] = [];
    const hold = budget.hold();
    const a = budget.lease();
    const b = budget.lease(hold);
    const c = budget.lease();
    reserve(a, 80 * KiB, log, 'a');
    reserve(b, 128 * KiB, log, 'b'); // overdraws
    b.keep(128 * KiB);
    b.end(); // held: still 208 KiB in use
    assert.equal(reserve(c, 128 * KiB, log, 'c'), false);
    a.end(); // 128 KiB in use (held), over the budget: the hold still has the overdraft
    await tick();
    assert.deepEqual(log, [], 'no second overdraft while the first is held');
    hold.release();
    await tick();
    assert.deepEqual(log, ['c']);
    c.end();
    assert.equal(budget.usedBytes, 0);
  });

  it('lets a later body of the hold that overdrew overdraw too (or that hold could never be released)', () => {
    const budget = new BodyBudget(100 * KiB);
    const log: string[] = [];
    const hold = budget.hold();
    const other = budget.lease();
    const robots = budget.lease(hold);
    reserve(other, 90 * KiB, log, 'other');
    reserve(robots, 64 * KiB, log, 'robots'); // overdraws
    robots.keep(64 * KiB);
    robots.end(); // held by the task, which now fetches its page
    const waiting = budget.lease();
    assert.equal(reserve(waiting, 10 * KiB, log, 'waiting'), false);
    const page = budget.lease(hold);
    assert.equal(reserve(page, 128 * KiB, log, 'page'), true, 'granted past the queue');
    page.keep(128 * KiB);
    page.end();
    hold.release();
    other.cancel();
    waiting.cancel();
    assert.equal(budget.usedBytes, 0);
  });

  it('gives back everything a cancelled lease kept, hold or not', () => {
    const budget = new BodyBudget(100 * KiB);
    const hold = budget.hold();
    const lease = budget.lease(hold);
    lease.reserve(64 * KiB, () => {});
    lease.keep(30 * KiB);
    lease.cancel();
    assert.equal(budget.usedBytes, 0);
    assert.equal(hold.bytes, 0);
    lease.end();
    assert.equal(budget.usedBytes, 0, 'ending twice changes nothing');
  });

  it('drops a waiting lease from the queue when it ends, and serves the next one', async () => {
    const budget = new BodyBudget(100 * KiB);
    const log: string[] = [];
    const a = budget.lease();
    const b = budget.lease();
    const c = budget.lease();
    const d = budget.lease();
    reserve(a, 60 * KiB, log, 'a');
    reserve(b, 128 * KiB, log, 'b'); // overdraws
    assert.equal(reserve(c, 64 * KiB, log, 'c'), false);
    assert.equal(reserve(d, 30 * KiB, log, 'd'), false);
    c.end(); // e.g. its deadline passed while it waited
    assert.equal(budget.waiting, 1);
    b.end();
    await tick();
    assert.deepEqual(log, ['d']);
    assert.equal(budget.usedBytes, 90 * KiB);
    a.end();
    d.end();
    assert.equal(budget.usedBytes, 0);
  });

  it('charges bytes beyond the reservation (they are in memory already)', () => {
    const budget = new BodyBudget(100 * KiB);
    const lease = budget.lease();
    lease.reserve(10 * KiB, () => {});
    lease.keep(30 * KiB);
    assert.equal(budget.usedBytes, 30 * KiB);
    lease.end();
    assert.equal(budget.usedBytes, 0);
  });

  it('never exceeds the budget plus one body, and always finishes, under random traffic', async () => {
    const max = 1024 * KiB;
    const cap = 320 * KiB;
    const window = 128 * KiB;
    let overdrew = 0;
    for (let seed = 1; seed <= 20; seed++) {
      let state = seed;
      const random = () => {
        state = (state * 1103515245 + 12345) % 2 ** 31;
        return state / 2 ** 31;
      };
      const budget = new BodyBudget(max);
      const bodies = Array.from({ length: 40 }, () => Math.floor(random() * cap));
      let finished = 0;
      await Promise.all(
        bodies.map(async (size, i) => {
          const hold = i % 2 === 0 ? budget.hold() : undefined;
          const lease = budget.lease(hold);
          let read = 0;
          while (read < size) {
            const want = Math.min(window, size - read);
            if (!lease.reserve(want, () => {})) {
              while (lease.waiting) await tick();
            }
            await tick();
            const chunk = Math.min(want, 1 + Math.floor(random() * want));
            lease.keep(chunk);
            read += chunk;
            assert.ok(budget.usedBytes <= max + cap, `${budget.usedBytes} > ${max} + ${cap}`);
          }
          lease.end();
          if (hold) {
            await tick();
            hold.release();
          }
          finished++;
        }),
      );
      assert.equal(finished, bodies.length);
      assert.equal(budget.usedBytes, 0, `seed ${seed}: bytes left charged`);
      assert.ok(budget.peakBytes <= max + cap, `seed ${seed}: peak ${budget.peakBytes}`);
      if (budget.peakBytes > max) overdrew++;
    }
    assert.ok(overdrew > 0, 'the overdraft was never used: the test does not test it');
  });

  it('refuses a budget that is not a positive finite number', () => {
    assert.throws(() => new BodyBudget(0), RangeError);
    assert.throws(() => new BodyBudget(Number.POSITIVE_INFINITY), RangeError);
  });
});
