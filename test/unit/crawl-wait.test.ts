import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrawlProbe, waitForCrawl } from '../../cli/crawl-wait.ts';
import type { CrawlCounters } from '../../lambdas/core/crawl/index.ts';

function counters(state: CrawlCounters['state']): CrawlCounters {
  return { queued: 3, done: 1, admitted: 3, bytes: 0, requests: 1, byOutcome: {}, state };
}

/** Answers from a script, one read at a time; the last answer repeats (drained: the DONE# sums' totals). */
function probe(
  states: Array<CrawlCounters['state'] | undefined>,
  active: boolean[],
  drained: number[] = [],
): CrawlProbe & { reads: number } {
  const p = {
    reads: 0,
    async readCounters() {
      const state = states[Math.min(p.reads++, states.length - 1)];
      return state === undefined ? undefined : counters(state);
    },
    async anyActive() {
      return active.shift() ?? false;
    },
    async doneTotals() {
      const total = drained.length > 1 ? drained.shift()! : (drained[0] ?? 1);
      return { hosts: 1, total, byOutcome: {}, bytes: 0, requests: 0, parts: [] };
    },
  };
  return p;
}

describe('waitForCrawl: done when this crawl is, whatever else the queues hold', () => {
  it('waits while the crawl runs and ends when it is complete', async () => {
    const p = probe([undefined, 'running', 'running', 'complete'], []);
    assert.equal(await waitForCrawl(p, 'c', { intervalMs: 1 }), 'complete');
    assert.equal(p.reads, 4);
  });

  it('a cancelled crawl ends once none of its hosts is active (every URL has its result)', async () => {
    const p = probe(['cancelled'], [true, true, false]);
    assert.equal(await waitForCrawl(p, 'c', { intervalMs: 1 }), 'cancelled');
    assert.equal(p.reads, 3);
  });

  it('a cancelled crawl whose hosts look idle while one drains between the shard reads waits one more poll', async () => {
    // First poll: no host in either look, but the sums grew between them (a host drained meanwhile).
    const p = probe(['cancelled'], [false, false, false, false], [3, 4, 4, 4]);
    assert.equal(await waitForCrawl(p, 'c', { intervalMs: 1 }), 'cancelled');
    assert.equal(p.reads, 2);
  });

  it('stops waiting at once when interrupted', async () => {
    const controller = new AbortController();
    const p = probe(['running'], []);
    const waiting = waitForCrawl(p, 'c', { intervalMs: 60_000, signal: controller.signal });
    setTimeout(() => controller.abort(), 10);
    const started = Date.now();
    assert.equal(await waiting, 'interrupted');
    assert.ok(Date.now() - started < 5_000);
  });

  it('reads again as soon as it is woken, not an interval later, and unsubscribes when done', async () => {
    const listeners = new Set<() => void>();
    const p = probe(['running', 'complete'], []);
    const waiting = waitForCrawl(p, 'c', {
      intervalMs: 600_000,
      wake: (listener) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    });
    while (p.reads < 1) await new Promise((resolve) => setImmediate(resolve));
    for (const listener of listeners) listener();
    assert.equal(await waiting, 'complete');
    assert.equal(p.reads, 2);
    assert.equal(listeners.size, 0);
  });

  it('a wake that comes while a read is under way is not lost: the next read follows at once', async () => {
    let wakeNow: () => void = () => {};
    let reads = 0;
    const p: CrawlProbe = {
      async readCounters() {
        reads++;
        // The crawl completes during the first read, and says so after that read has looked.
        if (reads === 1) wakeNow();
        return counters(reads === 1 ? 'running' : 'complete');
      },
      anyActive: async () => false,
      doneTotals: async () => ({ hosts: 1, total: 1, byOutcome: {}, bytes: 0, requests: 0, parts: [] }),
    };
    const state = await waitForCrawl(p, 'c', {
      intervalMs: 600_000,
      wake: (listener) => {
        wakeNow = listener;
        return () => {};
      },
    });
    assert.equal(state, 'complete');
    assert.equal(reads, 2);
  });
});
