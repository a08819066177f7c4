/**
 * The scale simulation's clock and queues (test/fakes/virtual-clock.ts, sim-queue.ts): virtual time
 * moves only when nothing can run; Lambda's event source enforces the function timeout (an abandoned
 * invocation's messages come back after the visibility timeout, and past maxReceiveCount go to the
 * DLQ), deletes what succeeded and brings failures back after the delay asked for.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwsMeter } from '../fakes/aws-meter.ts';
import { type Invocation, type QueuedMessage, runEventSource, SimQueue } from '../fakes/sim-queue.ts';
import { VirtualClock } from '../fakes/virtual-clock.ts';

describe('VirtualClock', () => {
  it('fires timers in virtual order, jumping time only when nothing can run', async () => {
    const clock = new VirtualClock(1_000);
    const restore = clock.install();
    const seen: string[] = [];
    try {
      await clock.run(
        (async () => {
          const slow = clock.sleep(5_000).then(() => seen.push(`slow ${clock.now()}`));
          const busy = (async () => {
            // Work between immediates (as the fakes yield) finishes before any timer fires.
            for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
            seen.push(`busy ${clock.now()}`);
          })();
          await new Promise((resolve) => setTimeout(resolve, 2_000));
          seen.push(`timeout ${clock.now()}`);
          await Promise.all([slow, busy]);
        })(),
      );
    } finally {
      restore();
    }
    assert.deepEqual(seen, ['busy 1000', 'timeout 3000', 'slow 6000']);
  });

  it('reports a simulation in which nothing can run and no timer is due', async () => {
    const clock = new VirtualClock(0);
    await assert.rejects(clock.run(new Promise(() => {})), /simulation stuck/);
  });
});

/** Virtual time a test's run may take: past it, the run fails rather than spins. */
const HOUR = 3_600_000;

function setup(timeoutSeconds = 60) {
  const clock = new VirtualClock(0);
  const meter = new AwsMeter(clock, () => 0);
  const queue = new SimQueue('q', clock, { visibilityMs: 360_000, maxReceiveCount: 2 });
  const options = {
    batchSize: 10,
    maxBatchingWindowSeconds: 1,
    maxConcurrency: 2,
    timeoutSeconds,
    memoryMb: 1024,
  };
  return { clock, meter, queue, options };
}

describe('Lambda event source on a SimQueue', () => {
  it('abandons an invocation past its timeout: its messages come back after the visibility timeout, then go to the DLQ', async () => {
    const { clock, meter, queue, options } = setup();
    const receives: Array<{ at: number; receiveCount: number }> = [];
    let frozenAfterKill = 0;
    queue.send([{ body: 'hangs' }]);
    const usage = await clock.run(
      runEventSource(
        queue,
        clock,
        meter,
        options,
        async (messages: QueuedMessage[], invocation: Invocation) => {
          receives.push({ at: clock.now(), receiveCount: messages[0]!.receiveCount });
          await clock.sleep(120_000);
          if (invocation.killed) frozenAfterKill++;
          return [];
        },
        () => queue.dlq.length > 0,
      ),
      HOUR,
    );
    assert.equal(receives.length, 2, 'received maxReceiveCount times');
    assert.deepEqual(
      receives.map((r) => r.receiveCount),
      [1, 2],
    );
    assert.ok(receives[1]!.at - receives[0]!.at >= 360_000, 'back only after the visibility timeout');
    assert.equal(usage.timedOut, 2);
    assert.equal(usage.durationMs, 2 * 60_000, 'billed up to the timeout');
    assert.equal(frozenAfterKill, 2, 'the abandoned invocation knows it was killed');
    assert.deepEqual(
      queue.dlq.map((m) => m.body),
      ['hangs'],
    );
    assert.equal(queue.size, 0);
  });

  it('invokes a full batch at once, without waiting for the batching window', async () => {
    const { clock, meter, queue, options } = setup();
    const batches: Array<{ size: number; at: number }> = [];
    queue.send(Array.from({ length: 12 }, (_, i) => ({ body: `m${i}` })));
    await clock.run(
      runEventSource(
        queue,
        clock,
        meter,
        options,
        async (messages) => {
          batches.push({ size: messages.length, at: clock.now() });
          return [];
        },
        () => queue.size === 0,
      ),
      HOUR,
    );
    const full = batches.find((b) => b.size === options.batchSize);
    assert.ok(full, 'one batch of batchSize');
    assert.ok(full.at < 100, `at ${full.at} ms: only the receive's latency`);
    assert.equal(
      batches.reduce((sum, b) => sum + b.size, 0),
      12,
    );
  });

  it('deletes what succeeded, brings batch item failures back after their delay, honours DelaySeconds', async () => {
    const { clock, meter, queue, options } = setup();
    const handled: Array<{ body: string; at: number }> = [];
    queue.send([{ body: 'ok' }, { body: 'fail-once' }, { body: 'later', delaySeconds: 30 }]);
    await clock.run(
      runEventSource(
        queue,
        clock,
        meter,
        options,
        async (messages) => {
          for (const m of messages) handled.push({ body: m.body, at: clock.now() });
          return messages
            .filter((m) => m.body === 'fail-once' && m.receiveCount === 1)
            .map((m) => ({ id: m.id, seconds: 5 }));
        },
        () => handled.length >= 4 && queue.size === 0,
      ),
      HOUR,
    );
    const at = (body: string) => handled.filter((h) => h.body === body).map((h) => h.at);
    // Each receive waits the batching window (1 s) and the request's latency (10 ms).
    const near = (actual: number | undefined, expected: number) =>
      assert.ok(
        actual !== undefined && actual >= expected && actual < expected + 100,
        `${actual} ~ ${expected}`,
      );
    assert.equal(at('ok').length, 1, 'deleted once handled');
    near(at('ok')[0], 1_000);
    const [first, again] = at('fail-once');
    near(first, 1_000);
    near(again! - first!, 6_000);
    assert.equal(at('fail-once').length, 2);
    assert.equal(at('later').length, 1);
    near(at('later')[0], 31_000);
    assert.equal(queue.dlq.length, 0);
  });
});
