// processResultBatch over in-memory ports: winners only become lines and counts, duplicates never do,
// completion fires once, and every crash window ends with each URL's line present (duplicated at
// worst) and exact counters. The DynamoDB finalizer itself is covered by the integration tests.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  mapLimit,
  processResultBatch,
  type ResultMessage,
  resultPartKey,
  summaryFromCounters,
  summaryKey,
} from '../../lambdas/core/aggregate-batch.ts';
import { indexLine } from '../../lambdas/core/cdxj.ts';
import type { Outcome } from '../../lambdas/core/outcome.ts';
import type {
  BlobWriter,
  CounterDeltas,
  CrawlCounters,
  FrontierFinalizer,
} from '../../lambdas/core/ports.ts';
import type { CrawlResult } from '../../lambdas/core/result.ts';

/** The semantics of docs/frontier.md, in memory; `failNext` makes the next call of a method throw. */
class MemoryFrontier implements FrontierFinalizer {
  urls = new Map<string, { st: 'new' | 'fetching' | 'done'; outcome?: Outcome }>();
  counters = new Map<string, CrawlCounters>();
  failNext = new Set<'finalize' | 'addCounters' | 'confirmCompletion' | 'readCounters'>();
  calls = { finalize: 0, addCounters: 0, confirmCompletion: 0, readCounters: 0 };

  private fail(method: 'finalize' | 'addCounters' | 'confirmCompletion' | 'readCounters') {
    this.calls[method]++;
    if (this.failNext.delete(method)) throw new Error(`${method} failed (injected)`);
  }

  /** A URL admitted and counted as queued by the fetch side. */
  admit(crawlId: string, key: string): void {
    this.urls.set(`${crawlId}/${key}`, { st: 'new' });
    const c = this.counter(crawlId);
    c.queued++;
    c.admitted++;
  }

  private counter(crawlId: string): CrawlCounters {
    let c = this.counters.get(crawlId);
    if (!c) {
      c = {
        queued: 0,
        done: 0,
        admitted: 0,
        bytes: 0,
        requests: 0,
        byOutcome: {},
        state: 'running',
        startedAt: '2024-05-01T12:00:00.000Z',
      };
      this.counters.set(crawlId, c);
    }
    return c;
  }

  async finalize(crawlId: string, key: string, _url: string, outcome: Outcome) {
    this.fail('finalize');
    const id = `${crawlId}/${key}`;
    const item = this.urls.get(id);
    if (item?.st === 'done') return { won: false, created: false };
    this.urls.set(id, { st: 'done', outcome });
    return { won: true, created: item === undefined };
  }

  async addCounters(crawlId: string, d: CounterDeltas): Promise<CrawlCounters> {
    this.fail('addCounters');
    const c = this.counter(crawlId);
    c.queued += d.queued ?? 0;
    c.done += d.done ?? 0;
    c.bytes += d.bytes ?? 0;
    c.requests += d.requests ?? 0;
    for (const [o, n] of Object.entries(d.byOutcome ?? {}))
      c.byOutcome[o as Outcome] = (c.byOutcome[o as Outcome] ?? 0) + (n ?? 0);
    return structuredClone(c);
  }

  async readCounters(crawlId: string): Promise<CrawlCounters | undefined> {
    this.fail('readCounters');
    const c = this.counters.get(crawlId);
    return c && structuredClone(c);
  }

  async confirmCompletion(crawlId: string, now: Date) {
    this.fail('confirmCompletion');
    const c = this.counter(crawlId);
    const items = [...this.urls].filter(([id]) => id.startsWith(`${crawlId}/`)).map(([, v]) => v);
    c.queued = items.length;
    c.done = items.filter((i) => i.st === 'done').length;
    c.byOutcome = {};
    for (const i of items) if (i.outcome) c.byOutcome[i.outcome] = (c.byOutcome[i.outcome] ?? 0) + 1;
    if (c.done < c.queued || c.state !== 'running')
      return { completedNow: false, counters: structuredClone(c) };
    c.state = 'complete';
    c.endedAt = now.toISOString();
    return { completedNow: true, counters: structuredClone(c) };
  }
}

class MemoryBlobs implements BlobWriter {
  objects = new Map<string, Uint8Array>();
  puts: string[] = [];
  failNextPut: RegExp | undefined;

  async put(key: string, body: Uint8Array): Promise<void> {
    if (this.failNextPut?.test(key)) {
      this.failNextPut = undefined;
      throw new Error(`PUT ${key} failed (injected)`);
    }
    this.puts.push(key);
    this.objects.set(key, body);
  }

  lines(crawlId: string): Array<Record<string, unknown>> {
    return [...this.objects]
      .filter(([key]) => key.startsWith(`results/${crawlId}/`))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .flatMap(([, body]) =>
        gunzipSync(body)
          .toString('utf8')
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as Record<string, unknown>),
      );
  }

  summary(crawlId: string): Record<string, unknown> | undefined {
    const body = this.objects.get(summaryKey(crawlId));
    return body && JSON.parse(new TextDecoder().decode(body));
  }
}

const keyOf = (url: string) => createHash('sha256').update(url).digest('hex');

function result(crawlId: string, path: string, overrides: Partial<CrawlResult> = {}): CrawlResult {
  const url = `http://site.test${path}`;
  return {
    v: 1,
    crawlId,
    key: keyOf(url),
    url,
    status: 200,
    outcome: 'fetched',
    contentType: 'text/html',
    bytes: 100,
    sha1: 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d',
    warc: { key: `warc/${crawlId}/x.warc.gz`, offset: 10, length: 20 },
    fetchedAt: '2024-05-01T12:00:01.000Z',
    ms: 3,
    depth: 0,
    outlinks: 0,
    ...overrides,
  };
}

let nextId = 0;
function message(body: CrawlResult | string, receiveCount = 1): ResultMessage {
  return { id: `m${nextId++}`, body: typeof body === 'string' ? body : JSON.stringify(body), receiveCount };
}

function setup() {
  const frontier = new MemoryFrontier();
  const blobs = new MemoryBlobs();
  let clock = Date.parse('2024-05-01T12:00:10.000Z');
  let invocation = 0;
  const run = (messages: ResultMessage[]) =>
    processResultBatch(messages, {
      frontier,
      blobs,
      invocationId: `inv${invocation++}`,
      now: () => {
        clock += 1000;
        return new Date(clock);
      },
    });
  return { frontier, blobs, run };
}

describe('processResultBatch', () => {
  it('writes the winners as one sorted index part per crawl and counts them once', async () => {
    const { frontier, blobs, run } = setup();
    for (const p of ['/a', '/b', '/c']) frontier.admit('c1', keyOf(`http://site.test${p}`));
    frontier.admit('c2', keyOf('http://site.test/x'));
    frontier.admit('c2', keyOf('http://site.test/pending'));
    const results = [
      result('c1', '/c'),
      result('c1', '/a', { outcome: 'failed', status: 500, code: 'http-500', bytes: 7 }),
      result('c2', '/x', { outcome: 'skipped', code: 'out-of-scope', status: undefined, bytes: 0 }),
    ];
    const report = await run(results.map((r) => message(r)));
    assert.deepEqual(report.rejected, []);
    assert.deepEqual(report.retry, []);
    assert.equal(report.written.length, 2);
    assert.deepEqual(
      report.written.map((w) => [w.crawlId, w.lines]),
      [
        ['c1', 2],
        ['c2', 1],
      ],
    );
    assert.match(report.written[0]!.key, /^results\/c1\/2024-05-01T12-00-11-000Z-inv0\.jsonl\.gz$/);
    // Lines are the index lines, sorted by urlkey.
    assert.deepEqual(blobs.lines('c1'), [indexLine(results[1]!), indexLine(results[0]!)]);
    const c1 = frontier.counters.get('c1')!;
    assert.equal(c1.done, 2);
    assert.equal(c1.queued, 3);
    assert.equal(c1.bytes, 107);
    assert.equal(c1.requests, 2);
    assert.deepEqual(c1.byOutcome, { fetched: 1, failed: 1 });
    const c2 = frontier.counters.get('c2')!;
    assert.equal(c2.requests, 0, 'a result without an HTTP status is no request');
    assert.deepEqual(report.summaries, [], 'nothing complete yet');
    assert.equal(frontier.calls.readCounters, 0, 'no counter read on the normal path');
  });

  it('rejects messages that are not result records and processes the rest', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    const good = message(result('c1', '/a'));
    const notJson = message('{nope');
    const notResult = message(JSON.stringify({ v: 1, crawlId: 'c1', url: 'http://x/' }));
    const report = await run([notJson, good, notResult]);
    assert.deepEqual(
      report.rejected.map((r) => r.id),
      [notJson.id, notResult.id],
    );
    assert.match(report.rejected[0]!.reason, /^not JSON/);
    assert.match(report.rejected[1]!.reason, /key/);
    assert.equal(blobs.lines('c1').length, 1);
  });

  it('drops a duplicate result: no second line, counters unchanged', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    const a = result('c1', '/a');
    await run([message(a), message(a)]); // twice in one batch
    const before = structuredClone(frontier.counters.get('c1'));
    const report = await run([message(a), message({ ...a, fetchedAt: '2024-05-01T12:00:05.000Z' })]);
    assert.equal(report.duplicates.length, 2);
    assert.deepEqual(report.written, []);
    assert.deepEqual(frontier.counters.get('c1'), before);
    assert.equal(blobs.lines('c1').length, 1);
    assert.equal(before?.done, 1);
  });

  it('counts a result for a URL that was never queued as queued too', async () => {
    const { frontier, run } = setup();
    await run([message(result('c1', '/bare'))]);
    const c = frontier.counters.get('c1')!;
    assert.equal(c.queued, 1);
    assert.equal(c.done, 1);
  });

  it('completes the crawl once and writes its summary with one PUT', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    const first = await run([message(result('c1', '/a'))]);
    assert.deepEqual(first.summaries, []);
    assert.equal(frontier.calls.confirmCompletion, 0, 'done < queued: no completion query');
    const last = await run([message(result('c1', '/b', { outcome: 'redirected', status: 301 }))]);
    assert.deepEqual(last.summaries, [{ crawlId: 'c1', key: 'crawls/c1/summary.json', completedNow: true }]);
    assert.equal(blobs.puts.filter((k) => k === summaryKey('c1')).length, 1);
    const summary = blobs.summary('c1')!;
    assert.equal(summary.state, 'complete');
    assert.equal(summary.done, 2);
    assert.equal(summary.queued, 2);
    assert.equal(summary.bytes, 200);
    assert.equal(summary.requests, 2);
    assert.deepEqual(summary.byOutcome, {
      fetched: 1,
      redirected: 1,
      disallowed: 0,
      skipped: 0,
      failed: 0,
      blocked: 0,
      invalid: 0,
      cancelled: 0,
    });
    assert.equal(summary.startedAt, '2024-05-01T12:00:00.000Z');
    assert.equal(summary.endedAt, '2024-05-01T12:00:13.000Z');
    assert.equal(summary.seconds, 13);
    assert.equal(summary.pagesPerSecond, Number((1 / 13).toFixed(2)));
    // A late duplicate changes nothing and does not complete again.
    const late = await run([message(result('c1', '/b'))]);
    assert.deepEqual(late.summaries, []);
    assert.equal(frontier.calls.confirmCompletion, 1);
  });

  it('does not complete while the completion query finds pending URLs', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    // The fetch side admitted /b but its queued count was lost in a crash: counters say done >= queued.
    frontier.urls.set(`c1/${keyOf('http://site.test/b')}`, { st: 'fetching' });
    const report = await run([message(result('c1', '/a'))]);
    assert.equal(frontier.calls.confirmCompletion, 1);
    assert.deepEqual(report.summaries, []);
    assert.equal(blobs.summary('c1'), undefined);
    assert.equal(frontier.counters.get('c1')!.queued, 2, 'reconciled by the query');
    await run([message(result('c1', '/b'))]);
    assert.equal(blobs.summary('c1')?.done, 2);
  });

  it('crash between finalize and the part PUT: the redelivery writes the line and counts it', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    const a = message(result('c1', '/a'));
    blobs.failNextPut = /^results\//;
    const failed = await run([a]);
    assert.deepEqual(
      failed.retry.map((r) => r.id),
      [a.id],
    );
    assert.match(failed.retry[0]!.reason, /^write index part/);
    assert.equal(blobs.lines('c1').length, 0);
    assert.equal(frontier.counters.get('c1')!.done, 0);
    // SQS redelivers it: it loses finalize (the URL is done) but is written and counted.
    const again = await run([{ ...a, receiveCount: 2 }]);
    assert.equal(again.rewritten.length, 1);
    assert.equal(blobs.lines('c1').length, 1);
    assert.equal(frontier.counters.get('c1')!.done, 1);
    await run([message(result('c1', '/b'))]);
    assert.equal(blobs.summary('c1')?.done, 2, 'the crawl completes: nothing was lost');
  });

  it('crash after the PUT, before the counters: the line is duplicated at worst, never lost', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    const a = message(result('c1', '/a'));
    frontier.failNext.add('addCounters');
    const failed = await run([a]);
    assert.equal(failed.retry.length, 1);
    assert.equal(blobs.lines('c1').length, 1);
    const again = await run([{ ...a, receiveCount: 2 }]);
    assert.deepEqual(again.retry, []);
    const lines = blobs.lines('c1');
    assert.equal(lines.length, 2, 'written again');
    assert.equal(new Set(lines.map((l) => l.key)).size, 1, 'same key: readers keep one');
    assert.equal(frontier.counters.get('c1')!.done, 1);
    assert.equal(blobs.summary('c1')?.state, 'complete', 'completion fired on the redelivery');
  });

  it('a failed finalize is retried; the retry wins normally', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    frontier.failNext.add('finalize');
    const msgs = [message(result('c1', '/a')), message(result('c1', '/b'))];
    const report = await run(msgs);
    assert.equal(report.retry.length, 1);
    assert.match(report.retry[0]!.reason, /^finalize/);
    assert.equal(blobs.lines('c1').length, 1);
    const retried = msgs.find((m) => m.id === report.retry[0]!.id)!;
    await run([{ ...retried, receiveCount: 2 }]);
    assert.equal(blobs.lines('c1').length, 2);
    assert.equal(blobs.summary('c1')?.done, 2);
  });

  it('crash before the summary PUT: the redelivery rewrites the summary without re-counting', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    const a = message(result('c1', '/a'));
    blobs.failNextPut = /summary\.json$/;
    const failed = await run([a]);
    assert.equal(failed.retry.length, 1);
    assert.match(failed.retry[0]!.reason, /^write summary/);
    assert.equal(frontier.counters.get('c1')!.state, 'complete');
    const again = await run([{ ...a, receiveCount: 2 }]);
    assert.deepEqual(again.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: false }]);
    assert.equal(frontier.counters.get('c1')!.done, 1, 'not counted again after completion');
    assert.equal(blobs.summary('c1')?.done, 1);
  });

  it('a failed completion query is retried, and completion still fires once', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    const a = message(result('c1', '/a'));
    frontier.failNext.add('confirmCompletion');
    const failed = await run([a]);
    assert.equal(failed.retry.length, 1);
    await run([{ ...a, receiveCount: 2 }]);
    assert.equal(blobs.summary('c1')?.state, 'complete');
    assert.equal(blobs.summary('c1')?.done, 1, 'the over-count was reconciled by the completion query');
    assert.equal(blobs.puts.filter((k) => k === summaryKey('c1')).length, 1);
  });

  it('one failing crawl does not hold back another', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c2', keyOf('http://site.test/a'));
    blobs.failNextPut = /^results\/c1\//;
    const report = await run([message(result('c1', '/a')), message(result('c2', '/a'))]);
    assert.deepEqual(
      report.retry.map((r) => r.crawlId),
      ['c1'],
    );
    assert.equal(blobs.lines('c2').length, 1);
    assert.equal(blobs.summary('c2')?.done, 1);
  });
});

describe('helpers', () => {
  it('part keys sort by time, then invocation', () => {
    const keys = [
      resultPartKey('c', new Date('2024-05-01T12:00:01.000Z'), 'b'),
      resultPartKey('c', new Date('2024-05-01T12:00:00.999Z'), 'z'),
      resultPartKey('c', new Date('2024-05-01T12:00:01.000Z'), 'a'),
    ];
    assert.deepEqual([...keys].sort(), [keys[1], keys[2], keys[0]]);
  });

  it('mapLimit keeps at most `limit` calls in flight and settles each', async () => {
    let inFlight = 0;
    let most = 0;
    const settled = await mapLimit([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      if (n === 4) throw new Error('four');
      return n * 2;
    });
    assert.equal(most, 3);
    assert.deepEqual(
      settled.map((s) => (s.status === 'fulfilled' ? s.value : 'x')),
      [2, 4, 6, 'x', 10, 12, 14],
    );
  });

  it('summaryFromCounters without a start time has no rate', () => {
    const summary = summaryFromCounters(
      'c',
      { queued: 1, done: 1, admitted: 1, bytes: 0, requests: 0, byOutcome: {}, state: 'complete' },
      new Date('2024-05-01T00:00:00Z'),
    );
    assert.equal(summary.seconds, undefined);
    assert.equal(summary.pagesPerSecond, undefined);
    assert.equal(summary.endedAt, '2024-05-01T00:00:00.000Z');
  });
});
