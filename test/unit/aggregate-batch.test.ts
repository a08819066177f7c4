// processResultBatch over in-memory ports: winners only become lines and counts, another result for
// a done URL never does, completion is asked by every batch of a running crawl (and by a `drained`
// record) but fires once, only when no host is active and never while a done URL's index part is
// missing, and every crash window ends with each URL's line present (duplicated at worst), exact
// counters and the summary written once. The page store is the fake of test/fakes/blobs.ts (checked
// against S3Blobs by test/integration/port-contracts.test.ts); the DynamoDB adapters are covered by
// the integration tests (frontier-urls, frontier-hosts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { indexLine } from '../../lambdas/core/archive/index.ts';
import type { Outcome } from '../../lambdas/core/base/index.ts';
import {
  type CrawlEvent,
  type EventPublisher,
  processResultBatch,
  type ResultMessage,
  summaryFromCounters,
} from '../../lambdas/core/batches/index.ts';
import {
  type CounterDeltas,
  type CrawlConfig,
  type CrawlCounters,
  type FinalizeEntry,
  type FinalizeOutcome,
  type FrontierFinalizer,
  parseCrawlConfig,
} from '../../lambdas/core/crawl/index.ts';
import { type CrawlResult, resultId, resultMessageBodies } from '../../lambdas/core/results/index.ts';
import { resultPartKey, summaryKey } from '../../lambdas/shared/contracts.ts';
import { mapLimit } from '../../lambdas/shared/map-limit.ts';
import { MemoryBlobs } from '../fakes/blobs.ts';

/**
 * Where a fake can make the invocation die: the call never settles (like a Lambda that timed out or
 * crashed), so nothing after it runs and its messages come back with a higher receive count.
 * `<step>` dies before the step takes effect, `<step> done` after it took effect.
 */
type CrashPoint =
  | 'part put'
  | 'part put done'
  | 'addCounters done'
  | 'confirmCompletion done'
  | 'summary put'
  | 'summary put done';

class Crash {
  private armed: CrashPoint | undefined;
  private reached: (() => void) | undefined;

  /** Arms a crash at `point`; resolves once an invocation reached it (and hangs there for good). */
  at(point: CrashPoint): Promise<void> {
    this.armed = point;
    return new Promise((resolve) => {
      this.reached = resolve;
    });
  }

  async check(point: CrashPoint): Promise<void> {
    if (this.armed !== point) return;
    this.armed = undefined;
    this.reached?.();
    await new Promise<never>(() => {});
  }
}

type Method = 'finalize' | 'addCounters' | 'confirmCompletion' | 'readCounters';

/** A URL item of its host's partition (`URLS#<crawlId>#<host>`, frontier-urls). */
interface UrlItem {
  host: string;
  st: 'new' | 'held' | 'done';
  outcome?: Outcome;
  rid?: string;
  part?: string;
  bytes?: number;
  requests?: number;
}

/** The host partition a URL belongs to; `-` (the pseudo-host) for a URL that does not parse. */
const hostOf = (url: string) => URL.parse(url)?.host || '-';

/**
 * The semantics of docs/frontier.md, docs/design/host-visits.md and the DynamoDB adapters
 * (frontier-urls, frontier-hosts, frontier-counters), in memory. A host is active while one of its
 * URLs is pending (not done: a visit will fetch it, or its result is on its way) or while a visit
 * still holds it (`visit`, until `drain`). Completion is confirmed when no host of the crawl is
 * active and every part the done URLs name is written: the counters are then rewritten from the
 * done URLs (the summed `DONE#` tallies). Otherwise it changes nothing.
 */
class MemoryFrontier implements FrontierFinalizer {
  urls = new Map<string, UrlItem>();
  counters = new Map<string, CrawlCounters>();
  calls = { finalize: 0, addCounters: 0, confirmCompletion: 0, readCounters: 0 };
  /** `<crawlId>#<host>` of the hosts a visit holds (not drained yet, whatever its URLs' state). */
  private visits = new Set<string>();
  /** The next n calls of a method throw before doing anything. */
  private failures = new Map<Method, number>();
  /** Per URL key, the next finalize calls' faults: 'fail' throws before, 'lose answer' after taking effect. */
  finalizeFaults = new Map<string, Array<'fail' | 'lose answer'>>();
  /** The next n completion flips take effect, then throw (their answer is lost). */
  loseFlipAnswers = 0;
  private readonly crash: Crash;

  constructor(crash: Crash) {
    this.crash = crash;
  }

  failNext(method: Method, times = 1): void {
    this.failures.set(method, times);
  }

  private enter(method: Method): void {
    this.calls[method]++;
    const left = this.failures.get(method) ?? 0;
    if (left > 0) {
      this.failures.set(method, left - 1);
      throw new Error(`${method} failed (injected)`);
    }
  }

  /** A URL admitted (its host woken) and counted as queued by the fetch side. */
  admit(crawlId: string, key: string, host = 'site.test'): void {
    this.urls.set(`${crawlId}/${key}`, { host, st: 'new' });
    const c = this.counter(crawlId);
    c.queued++;
    c.admitted++;
  }

  /** A visit holds the host: it stays active (even once its URLs are done) until `drain`. */
  visit(crawlId: string, host = 'site.test'): void {
    this.visits.add(`${crawlId}#${host}`);
  }

  /** The visit finds the host drained and deletes its host item (then sends a `drained` record). */
  drain(crawlId: string, host = 'site.test'): void {
    const pending = this.items(crawlId).filter((i) => i.host === host && i.st !== 'done');
    assert.equal(pending.length, 0, `a host with pending URLs is not drained: ${host}`);
    this.visits.delete(`${crawlId}#${host}`);
  }

  item(crawlId: string, key: string): UrlItem | undefined {
    return this.urls.get(`${crawlId}/${key}`);
  }

  private items(crawlId: string): UrlItem[] {
    return [...this.urls].filter(([id]) => id.startsWith(`${crawlId}/`)).map(([, v]) => v);
  }

  /** HostVisits.anyActive: a host with a pending URL, or one a visit still holds. */
  anyActive(crawlId: string): boolean {
    return (
      this.items(crawlId).some((i) => i.st !== 'done') ||
      [...this.visits].some((v) => v.startsWith(`${crawlId}#`))
    );
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

  /** Condition `not exists OR st <> done OR rid = :rid`; ALL_OLD tells `created` and `repeat`. */
  async finalize(crawlId: string, entry: FinalizeEntry): Promise<FinalizeOutcome> {
    this.enter('finalize');
    const fault = this.finalizeFaults.get(entry.key)?.shift();
    if (fault === 'fail') throw new Error(`finalize ${entry.key} failed (injected)`);
    const id = `${crawlId}/${entry.key}`;
    const before = this.urls.get(id);
    if (before?.st === 'done' && before.rid !== entry.rid)
      return { won: false, repeat: false, created: false };
    const { outcome, rid, bytes, requests } = entry;
    // A repeat keeps the part its first win named (if_not_exists).
    const part = before?.part ?? entry.part;
    // An item it creates goes to its URL's host partition (that host is woken: drained at once here).
    const host = before?.host ?? hostOf(entry.url);
    this.urls.set(id, { host, st: 'done', outcome, rid, part, bytes, requests });
    if (fault === 'lose answer') throw new Error(`finalize ${entry.key}: answer lost (injected)`);
    return { won: true, repeat: before?.st === 'done', created: before === undefined, part };
  }

  /** The URL names the host partition (the item's key is its hash here, as in the tests' results). */
  async repoint(crawlId: string, url: string, key: string, rid: string, part: string): Promise<void> {
    assert.equal(keyOf(url), key, `repoint: ${url} is not the URL of ${key}`);
    const item = this.urls.get(`${crawlId}/${key}`);
    assert.equal(item?.host, hostOf(url), `repoint ${key}: not in ${hostOf(url)}'s partition`);
    if (item?.rid !== rid) throw new Error(`repoint ${key}: not won by ${rid}`);
    item.part = part;
  }

  async addCounters(crawlId: string, d: CounterDeltas): Promise<CrawlCounters> {
    this.enter('addCounters');
    const c = this.counter(crawlId);
    c.queued += d.queued ?? 0;
    c.done += d.done ?? 0;
    c.bytes += d.bytes ?? 0;
    c.requests += d.requests ?? 0;
    for (const [o, n] of Object.entries(d.byOutcome ?? {}))
      c.byOutcome[o as Outcome] = (c.byOutcome[o as Outcome] ?? 0) + (n ?? 0);
    await this.crash.check('addCounters done');
    return structuredClone(c);
  }

  async readCounters(crawlId: string): Promise<CrawlCounters | undefined> {
    this.enter('readCounters');
    const c = this.counters.get(crawlId);
    return c && structuredClone(c);
  }

  /** frontier-counters: anyActive, then the DONE# totals and their parts, then the conditional flip. */
  async confirmCompletion(
    crawlId: string,
    now: Date,
    partsWritten: (parts: ReadonlySet<string>) => Promise<boolean>,
  ): Promise<{ completedNow: boolean; counters: CrawlCounters }> {
    this.enter('confirmCompletion');
    const notYet = () => {
      const c = this.counters.get(crawlId);
      return { completedNow: false, counters: c ? structuredClone(c) : emptyCounters() };
    };
    if (this.anyActive(crawlId)) return notYet();
    const done = this.items(crawlId);
    const parts = new Set(done.flatMap((i) => (i.part ? [i.part] : [])));
    if (done.length === 0 || !(await partsWritten(parts))) return notYet();
    // The conditional flip running → complete, with every counter rewritten from the tallies.
    const existing = this.counters.get(crawlId);
    if (existing && existing.state !== 'running') return notYet();
    const byOutcome: Partial<Record<Outcome, number>> = {};
    for (const i of done) if (i.outcome) byOutcome[i.outcome] = (byOutcome[i.outcome] ?? 0) + 1;
    const c = this.counter(crawlId);
    c.queued = done.length;
    c.done = done.length;
    c.byOutcome = byOutcome;
    c.bytes = done.reduce((sum, i) => sum + (i.bytes ?? 0), 0);
    c.requests = done.reduce((sum, i) => sum + (i.requests ?? 0), 0);
    c.state = 'complete';
    c.endedAt = now.toISOString();
    await this.crash.check('confirmCompletion done');
    if (this.loseFlipAnswers > 0) {
      this.loseFlipAnswers--;
      throw new Error('confirmCompletion answer lost (injected)');
    }
    return { completedNow: true, counters: structuredClone(c) };
  }
}

function emptyCounters(): CrawlCounters {
  return { queued: 0, done: 0, admitted: 0, bytes: 0, requests: 0, byOutcome: {}, state: 'running' };
}

const kindOf = (key: string): 'part' | 'summary' | 'other' =>
  key.startsWith('results/') ? 'part' : key.endsWith('/summary.json') ? 'summary' : 'other';

/** The page store fake, read as the aggregate function's output: index parts, lines, the summary. */
class AggregateBlobs extends MemoryBlobs {
  /** Crashes at `<kind> put` before a part or summary write, `<kind> put done` after it. */
  constructor(crash: Crash) {
    super();
    this.beforeWrite = async ({ key }) => {
      const kind = kindOf(key);
      if (kind !== 'other') await crash.check(`${kind} put`);
    };
    this.afterWrite = async ({ key }) => {
      const kind = kindOf(key);
      if (kind !== 'other') await crash.check(`${kind} put done`);
    };
  }

  parts(crawlId: string): string[] {
    return [...this.objects.keys()].filter((key) => key.startsWith(`results/${crawlId}/`)).sort();
  }

  lines(crawlId: string): Array<Record<string, unknown>> {
    return this.parts(crawlId).flatMap((key) =>
      gunzipSync(this.objects.get(key) ?? new Uint8Array())
        .toString('utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    );
  }

  /** The URLs as readers see them: the first line per key (cli/index-reader.ts). */
  urls(crawlId: string): string[] {
    const seen = new Map<unknown, unknown>();
    for (const line of this.lines(crawlId)) if (!seen.has(line.key)) seen.set(line.key, line.url);
    return [...seen.values()].map(String).sort();
  }

  summary(crawlId: string): Record<string, unknown> | undefined {
    const body = this.objects.get(summaryKey(crawlId));
    return body && JSON.parse(new TextDecoder().decode(body));
  }

  summaryWrites(crawlId: string): number {
    return this.puts.filter((key) => key === summaryKey(crawlId)).length;
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

/** The same SQS message delivered again (a crash, a timeout or a batch item failure). */
const redelivered = (m: ResultMessage): ResultMessage => ({ ...m, receiveCount: (m.receiveCount ?? 1) + 1 });

const ids = (entries: ReadonlyArray<{ id: string }>) => entries.map((e) => e.id).sort();

/** The control record a visit sends when it drained a host (fetch-batch.ts). */
const drained = (crawlId: string) => JSON.stringify({ v: 1, kind: 'drained', crawlId });

/** Events published, in order; `failNext(n)` makes the next n publishes throw. */
class RecordingPublisher implements EventPublisher {
  readonly events: CrawlEvent[] = [];
  #failures = 0;
  failNext(times: number): void {
    this.#failures = times;
  }
  async publish(events: readonly CrawlEvent[]): Promise<void> {
    if (this.#failures > 0) {
      this.#failures--;
      throw new Error('EventBridge throttled');
    }
    this.events.push(...events);
  }
}

function setup(options: { events?: { publisher: EventPublisher; config?: Partial<CrawlConfig> } } = {}) {
  const crash = new Crash();
  const frontier = new MemoryFrontier(crash);
  const blobs = new AggregateBlobs(crash);
  const events = options.events && {
    publisher: options.events.publisher,
    configs: { get: async (crawlId: string) => parseCrawlConfig({ crawlId, ...options.events?.config }) },
  };
  let clock = Date.parse('2024-05-01T12:00:10.000Z');
  let invocation = 0;
  const run = (messages: ResultMessage[], deadline?: number) =>
    processResultBatch(messages, {
      frontier,
      blobs,
      invocationId: `inv${invocation++}`,
      now: () => {
        clock += 1000;
        return new Date(clock);
      },
      ...(deadline === undefined ? {} : { deadline }),
      ...(events === undefined ? {} : { events }),
    });
  /** Runs an invocation that dies at `point`; resolves when it has (it never returns). */
  const crashingRun = async (point: CrashPoint, messages: ResultMessage[]) => {
    const reached = crash.at(point);
    void run(messages);
    await reached;
  };
  return { frontier, blobs, run, crashingRun, clock: () => clock };
}

/** The exact numbers of a crawl from its URLs' winning results. */
function exact(results: readonly CrawlResult[]) {
  const byOutcome: Partial<Record<Outcome, number>> = {};
  for (const r of results) byOutcome[r.outcome] = (byOutcome[r.outcome] ?? 0) + 1;
  return {
    queued: results.length,
    done: results.length,
    bytes: results.reduce((sum, r) => sum + r.bytes, 0),
    requests: results.filter((r) => r.status !== undefined).length,
    byOutcome,
  };
}

const numbers = (c: CrawlCounters | undefined) =>
  c && { queued: c.queued, done: c.done, bytes: c.bytes, requests: c.requests, byOutcome: c.byOutcome };

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
    const messages = results.map((r) => message(r));
    const report = await run(messages);
    assert.deepEqual(report.rejected, []);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.duplicates, []);
    assert.deepEqual(report.rewritten, []);
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
    // Each URL item records the result that counts and the part its line is in.
    assert.deepEqual(frontier.item('c1', results[1]!.key), {
      host: 'site.test',
      st: 'done',
      outcome: 'failed',
      rid: resultId(messages[1]!.body),
      part: report.written[0]!.key,
      bytes: 7,
      requests: 1,
    });
    assert.equal(frontier.item('c2', results[2]!.key)?.requests, 0, 'no HTTP status: no request');
    const c1 = frontier.counters.get('c1')!;
    assert.equal(c1.done, 2);
    assert.equal(c1.queued, 3);
    assert.equal(c1.bytes, 107);
    assert.equal(c1.requests, 2);
    assert.deepEqual(c1.byOutcome, { fetched: 1, failed: 1 });
    const c2 = frontier.counters.get('c2')!;
    assert.equal(c2.requests, 0, 'a result without an HTTP status is no request');
    assert.deepEqual(report.summaries, [], 'nothing complete yet');
    assert.equal(frontier.calls.confirmCompletion, 2, 'each running crawl of the batch asks once');
    assert.equal(blobs.lists, 0, 'a host with a pending URL is active: no part listed');
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

  it('drops another result for a done URL: no second line, counters unchanged, even when redelivered', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    const a = result('c1', '/a');
    await run([message(a)]);
    const before = structuredClone(frontier.counters.get('c1'));
    // The URL fetched twice (a duplicate task): another result, however often SQS delivers it.
    const second = message({ ...a, fetchedAt: '2024-05-01T12:00:05.000Z', bytes: 55 }, 3);
    const third = message({ ...a, outcome: 'failed', status: 503, code: 'http-503' });
    const report = await run([second, third]);
    assert.deepEqual(ids(report.duplicates), ids([second, third]));
    assert.deepEqual(report.rewritten, []);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.written, []);
    assert.deepEqual(frontier.counters.get('c1'), before);
    assert.deepEqual(blobs.lines('c1'), [indexLine(a)]);
    assert.equal(before?.done, 1);
    assert.equal(frontier.item('c1', a.key)?.outcome, 'fetched', 'the first result still counts');
  });

  it('writes and counts one line for the same message delivered twice in one batch', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    const a = result('c1', '/a');
    await run([message(a), message(a)]); // sent twice (an SQS send retried after a lost answer)
    assert.equal(blobs.lines('c1').length, 1);
    assert.equal(frontier.counters.get('c1')?.done, 1);
  });

  it('the same message twice in one batch: readers see it once, and the crawl completes exactly', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    const a = result('c1', '/a');
    const b = result('c1', '/b');
    const copy = message(a);
    const report = await run([message(a), copy]);
    assert.deepEqual(ids(report.duplicates), ids([copy]), 'the copy is dropped before finalize');
    assert.deepEqual(blobs.urls('c1'), [a.url]);
    await run([message(b)]);
    assert.deepEqual(blobs.urls('c1'), [a.url, b.url]);
    assert.deepEqual(numbers(frontier.counters.get('c1')), exact([a, b]));
    assert.equal(blobs.summary('c1')?.done, 2);
  });

  it('counts a result for a URL that was never queued as queued too', async () => {
    const { frontier, run } = setup();
    await run([message(result('c1', '/bare'))]);
    const c = frontier.counters.get('c1')!;
    assert.equal(c.queued, 1);
    assert.equal(c.done, 1);
  });

  it('completes the crawl once and writes its summary once', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    const first = await run([message(result('c1', '/a'))]);
    assert.deepEqual(first.summaries, []);
    assert.equal(frontier.calls.confirmCompletion, 1, "a running crawl's batch asks");
    assert.equal(frontier.counters.get('c1')!.state, 'running', '/b is pending: its host is active');
    assert.equal(blobs.lists, 0, 'an active host: no part listed');
    const last = await run([message(result('c1', '/b', { outcome: 'redirected', status: 301 }))]);
    assert.equal(frontier.calls.confirmCompletion, 2);
    assert.deepEqual(last.summaries, [{ crawlId: 'c1', key: 'crawls/c1/summary.json', completedNow: true }]);
    assert.equal(blobs.summaryWrites('c1'), 1);
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
    // The clock ticks a second a reading: part key and completion check of each batch (11-12, 13-14).
    assert.equal(summary.endedAt, '2024-05-01T12:00:14.000Z');
    assert.equal(summary.seconds, 14);
    assert.equal(summary.pagesPerSecond, Number((1 / 14).toFixed(2)));
    // A late different result changes nothing and does not complete again.
    const late = await run([message(result('c1', '/b'))]);
    assert.equal(late.duplicates.length, 1);
    assert.deepEqual(late.summaries, []);
    assert.equal(frontier.calls.confirmCompletion, 2, 'no winner: nothing to ask');
    assert.equal(blobs.summaryWrites('c1'), 1);
  });

  it('does not complete while a URL is pending, whatever the counters say', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    // The fetch side admitted /b but its queued count was lost in a crash: counters say done >= queued.
    frontier.urls.set(`c1/${keyOf('http://site.test/b')}`, { host: 'site.test', st: 'new' });
    const report = await run([message(result('c1', '/a'))]);
    assert.equal(frontier.calls.confirmCompletion, 1);
    assert.deepEqual(report.summaries, []);
    assert.equal(blobs.summary('c1'), undefined);
    assert.equal(frontier.counters.get('c1')!.state, 'running');
    // An incomplete crawl's counters are left as the ADDs made them.
    assert.equal(frontier.counters.get('c1')!.queued, 1);
    await run([message(result('c1', '/b'))]);
    assert.equal(blobs.summary('c1')?.done, 2);
    assert.equal(blobs.summary('c1')?.queued, 2, 'exact once complete');
  });

  it('crash between finalize and the part: the redelivery writes the line as a repeat and counts it', async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    const a = result('c1', '/a');
    const ma = message(a);
    await crashingRun('part put', [ma]);
    assert.equal(frontier.item('c1', a.key)?.st, 'done', 'finalized');
    assert.equal(blobs.lines('c1').length, 0, 'the part was never written');
    assert.equal(frontier.counters.get('c1')!.done, 0);

    // SQS redelivers the same message: it wins again as a repeat, is written and counted.
    const again = await run([redelivered(ma)]);
    assert.deepEqual(again.rewritten, [{ id: ma.id, crawlId: 'c1', key: a.key }]);
    assert.deepEqual(again.duplicates, []);
    assert.deepEqual(again.retry, []);
    assert.deepEqual(blobs.lines('c1'), [indexLine(a)]);
    assert.equal(frontier.item('c1', a.key)?.part, again.written[0]?.key, 'the URL points at the new part');
    assert.equal(frontier.counters.get('c1')!.done, 1);
    assert.equal(frontier.calls.readCounters, 1, 'a repeat reads the counters first');

    const b = result('c1', '/b');
    await run([message(b)]);
    assert.equal(blobs.summary('c1')?.done, 2, 'the crawl completes: nothing was lost');
    assert.deepEqual(numbers(frontier.counters.get('c1')), exact([a, b]));
  });

  it('a part PUT is retried in the function; if it keeps failing the winners come back as repeats', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c1', keyOf('http://site.test/b'));
    frontier.admit('c1', keyOf('http://site.test/c'));
    blobs.failPuts(/^results\//, 2);
    const a = message(result('c1', '/a'));
    const first = await run([a]);
    assert.deepEqual(first.retry, [], 'two failures are absorbed');
    assert.equal(blobs.lines('c1').length, 1);

    blobs.failPuts(/^results\//, 3);
    const b = message(result('c1', '/b'));
    const failed = await run([b]);
    assert.deepEqual(ids(failed.retry), [b.id]);
    assert.match(failed.retry[0]!.reason, /^write index part/);
    assert.equal(blobs.lines('c1').length, 1);
    assert.equal(frontier.counters.get('c1')!.done, 1, 'nothing counted for b');
    const again = await run([redelivered(b)]);
    assert.equal(again.rewritten.length, 1);
    assert.equal(blobs.lines('c1').length, 2);
    assert.equal(frontier.counters.get('c1')!.done, 2);
  });

  it('crash after the PUT, before the counters: the redelivery finds its line written and writes no second one', async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    const key = keyOf('http://site.test/a');
    frontier.admit('c1', key);
    const a = message(result('c1', '/a'));
    await crashingRun('part put done', [a]);
    assert.equal(blobs.lines('c1').length, 1);
    const firstPart = frontier.item('c1', key)?.part;
    const again = await run([redelivered(a)]);
    assert.deepEqual(again.retry, []);
    assert.equal(again.rewritten.length, 1);
    assert.equal(blobs.lines('c1').length, 1, 'not written again');
    assert.equal(
      frontier.item('c1', key)?.part,
      firstPart,
      'the URL still names the part that holds its line',
    );
    assert.equal(frontier.counters.get('c1')!.done, 1);
    assert.equal(blobs.summary('c1')?.state, 'complete', 'completion fired on the redelivery');
  });

  it('a later step failing (counters) retries the batch without writing its lines twice', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    const b = result('c1', '/b');
    frontier.admit('c1', a.key);
    frontier.admit('c1', b.key);
    frontier.failNext('addCounters', 2);
    const absorbed = await run([message(a)]);
    assert.deepEqual(absorbed.retry, [], 'two failures are absorbed in the function');
    frontier.failNext('addCounters', 3);
    const first = await run([message(a), message(b)]);
    assert.equal(first.retry.length, 2, 'both retried');
    assert.equal(blobs.lines('c1').length, 2);
    const again = await run([redelivered(message(a)), redelivered(message(b))]);
    assert.deepEqual(again.retry, []);
    assert.equal(blobs.lines('c1').length, 2, 'one line per URL');
    assert.equal(blobs.summary('c1')?.done, 2);
  });

  it('crash after finalize, before the PUT: the redelivery writes the line into its own part and points the URL at it', async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    const key = keyOf('http://site.test/a');
    frontier.admit('c1', key);
    const a = message(result('c1', '/a'));
    await crashingRun('part put', [a]);
    assert.equal(blobs.lines('c1').length, 0);
    const lostPart = frontier.item('c1', key)?.part;
    await run([redelivered(a)]);
    assert.equal(blobs.lines('c1').length, 1);
    const part = frontier.item('c1', key)?.part;
    assert.notEqual(part, lostPart);
    assert.ok(part !== undefined && blobs.objects.has(part), 'the URL names a part that exists');
    assert.equal(blobs.summary('c1')?.state, 'complete');
  });

  it('a failed finalize is repeated in the function; the batch goes through', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    const b = result('c1', '/b');
    frontier.admit('c1', a.key);
    frontier.admit('c1', b.key);
    frontier.finalizeFaults.set(a.key, ['fail', 'fail']);
    const report = await run([message(a), message(b)]);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.rewritten, []);
    assert.deepEqual(blobs.urls('c1'), [a.url, b.url]);
    assert.equal(blobs.lines('c1').length, 2);
    assert.equal(blobs.summary('c1')?.done, 2);
  });

  it('a finalize whose answer was lost wins again as a repeat: one line, counted once', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    frontier.admit('c1', keyOf('http://site.test/b'));
    frontier.finalizeFaults.set(a.key, ['lose answer']);
    const ma = message(a);
    const report = await run([ma]);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.rewritten, [{ id: ma.id, crawlId: 'c1', key: a.key }]);
    assert.deepEqual(blobs.lines('c1'), [indexLine(a)]);
    assert.equal(frontier.counters.get('c1')!.done, 1);
  });

  it('a finalize that keeps failing: every message of that crawl is retried, nothing is written', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    const b = result('c1', '/b');
    const x = result('c2', '/x');
    frontier.admit('c1', a.key);
    frontier.admit('c1', b.key);
    frontier.admit('c2', x.key);
    frontier.finalizeFaults.set(a.key, ['fail', 'fail', 'fail']);
    const [ma, mb, mx] = [message(a), message(b), message(x)];
    const report = await run([ma, mb, mx]);
    assert.deepEqual(ids(report.retry), ids([ma, mb]), "b won, but it is retried with a's crawl");
    assert.ok(report.retry.every((r) => r.crawlId === 'c1' && /^finalize/.test(r.reason)));
    assert.deepEqual(blobs.parts('c1'), [], 'no part written');
    assert.equal(frontier.counters.get('c1')!.done, 0, 'nothing counted');
    assert.equal(frontier.item('c1', b.key)?.st, 'done', 'b points at a part that does not exist');
    assert.deepEqual(blobs.urls('c2'), [x.url], 'the other crawl goes through');
    assert.equal(blobs.summary('c2')?.done, 1);

    const again = await run([redelivered(ma), redelivered(mb)]);
    assert.deepEqual(again.retry, []);
    assert.deepEqual(ids(again.rewritten), [mb.id]);
    assert.deepEqual(blobs.urls('c1'), [a.url, b.url]);
    assert.equal(blobs.lines('c1').length, 2);
    assert.equal(blobs.summary('c1')?.done, 2);
    assert.deepEqual(numbers(frontier.counters.get('c1')), exact([a, b]));
  });

  it("completion waits for a done URL's missing part and is confirmed by the batch that writes it", async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    const a = result('c1', '/a');
    const b = result('c1', '/b', { bytes: 30 });
    frontier.admit('c1', a.key);
    frontier.admit('c1', b.key);
    const [ma, mb] = [message(a), message(b)];
    // b's invocation dies after counting it (before acknowledging it); a's after finalizing a,
    // before its part.
    await crashingRun('addCounters done', [mb]);
    await crashingRun('part put', [ma]);
    // b's redelivery counts it again and asks: no host is active (every URL is done), but a's line
    // is missing.
    const againB = await run([redelivered(mb)]);
    assert.deepEqual(againB.retry, []);
    assert.equal(frontier.calls.confirmCompletion, 1, 'asked once');
    assert.ok(blobs.lists > 0, 'the parts were listed');
    assert.deepEqual(againB.summaries, []);
    assert.equal(frontier.counters.get('c1')!.state, 'running');
    assert.equal(blobs.summary('c1'), undefined);
    assert.deepEqual(blobs.urls('c1'), [b.url]);

    const againA = await run([redelivered(ma)]);
    assert.deepEqual(againA.rewritten, [{ id: ma.id, crawlId: 'c1', key: a.key }]);
    assert.deepEqual(againA.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: true }]);
    assert.deepEqual(blobs.urls('c1'), [a.url, b.url]);
    assert.deepEqual(numbers(frontier.counters.get('c1')), exact([a, b]), 'the over-count of b is gone');
    assert.equal(blobs.summary('c1')?.done, 2);
  });

  it('crash between completion and the summary: the redelivery writes it once, without re-counting', async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    const ma = message(a);
    await crashingRun('confirmCompletion done', [ma]);
    assert.equal(frontier.counters.get('c1')!.state, 'complete');
    assert.equal(blobs.summary('c1'), undefined);
    const counters = structuredClone(frontier.counters.get('c1'));

    const again = await run([redelivered(ma)]);
    assert.deepEqual(again.retry, []);
    assert.deepEqual(again.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: false }]);
    assert.deepEqual(frontier.counters.get('c1'), counters, 'not counted again after completion');
    assert.equal(frontier.calls.addCounters, 1);
    assert.equal(blobs.summary('c1')?.done, 1);
    assert.equal(blobs.summaryWrites('c1'), 1);

    // Once more (the redelivery's own answer lost): the summary is not written again.
    const third = await run([redelivered(redelivered(ma))]);
    assert.deepEqual(third.summaries, []);
    assert.equal(blobs.summaryWrites('c1'), 1);
  });

  it("publishes the crawl's end once: Completed, and never again when results or drains repeat", async () => {
    const publisher = new RecordingPublisher();
    const { frontier, run } = setup({ events: { publisher } });
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    const ma = message(a);
    await run([ma]);
    await run([redelivered(ma)]);
    await run([{ id: 'd', body: drained('c1') }]);
    assert.deepEqual(
      publisher.events.map((event) => [event.kind, event.detail.eventId]),
      [['completed', 'c1:completed']],
    );
    const detail = publisher.events[0]?.detail as {
      summary: { urls: number; byOutcome: Record<string, number> };
    };
    assert.deepEqual([detail.summary.urls, detail.summary.byOutcome], [1, { fetched: 1 }]);
  });

  it('a publish of the end that keeps failing fails the batch; its redelivery publishes it, once', async () => {
    const publisher = new RecordingPublisher();
    const { frontier, blobs, run } = setup({ events: { publisher } });
    const a = result('c1', '/a', { outcome: 'failed', status: 500, code: 'http-500' });
    frontier.admit('c1', a.key);
    publisher.failNext(10);
    const failed = await run([message(a)]);
    assert.equal(failed.retry.length, 1);
    assert.match(failed.retry[0]!.reason, /confirm completion: .*EventBridge throttled/);
    assert.equal(blobs.summaryWrites('c1'), 1, 'the summary is written first');
    publisher.failNext(0);
    await run([redelivered(message(a))]);
    await run([redelivered(redelivered(message(a)))]);
    assert.deepEqual(
      publisher.events.map((event) => event.kind),
      ['failed'],
      'a crawl with no page fetched ends Failed',
    );
  });

  it('a re-crawl with --page-events publishes a Page Changed per new, changed or removed line, none for same ones', async () => {
    const publisher = new RecordingPublisher();
    const { frontier, run } = setup({ events: { publisher, config: { since: 'c0', pageEvents: true } } });
    const lines = [
      result('c1', '/new', { change: 'new' }),
      result('c1', '/same', { change: 'same' }),
      result('c1', '/gone', { change: 'removed', outcome: 'failed', status: 404, code: 'http-404' }),
      result('c1', '/other', { change: 'changed' }),
      result('c1', '/pending'),
    ];
    for (const line of lines) frontier.admit('c1', line.key);
    await run(lines.slice(0, 4).map((line) => message(line)));
    assert.deepEqual(
      publisher.events.map((event) => {
        const detail = event.detail as { url: string; change: string; since: string };
        return [event.kind, new URL(detail.url).pathname, detail.change, detail.since];
      }),
      [
        ['pageChanged', '/new', 'new', 'c0'],
        ['pageChanged', '/gone', 'removed', 'c0'],
        ['pageChanged', '/other', 'changed', 'c0'],
      ],
    );
  });

  it('crash after the summary PUT: the redelivery does not write it again', async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    const a = result('c1', '/a');
    const b = result('c1', '/b');
    frontier.admit('c1', a.key);
    frontier.admit('c1', b.key);
    await run([message(a)]);
    const mb = message(b);
    await crashingRun('summary put done', [mb]);
    const summary = blobs.objects.get(summaryKey('c1'));
    assert.ok(summary);
    const counters = structuredClone(frontier.counters.get('c1'));

    const again = await run([redelivered(mb)]);
    assert.deepEqual(again.retry, []);
    assert.deepEqual(again.summaries, [], 'it was there already');
    assert.equal(blobs.summaryWrites('c1'), 1);
    assert.deepEqual(blobs.objects.get(summaryKey('c1')), summary);
    assert.deepEqual(frontier.counters.get('c1'), counters);
    assert.deepEqual(blobs.urls('c1'), [a.url, b.url]);
  });

  it('a failed summary write is retried by the redelivery, which writes it', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    const a = message(result('c1', '/a'));
    blobs.failPuts(/summary\.json$/, 3);
    const failed = await run([a]);
    assert.equal(failed.retry.length, 1);
    assert.match(failed.retry[0]!.reason, /^confirm completion: .*summary\.json/);
    assert.deepEqual(failed.summaries, []);
    assert.equal(frontier.counters.get('c1')!.state, 'complete');
    const again = await run([redelivered(a)]);
    assert.deepEqual(again.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: false }]);
    assert.equal(frontier.counters.get('c1')!.done, 1, 'not counted again after completion');
    assert.equal(blobs.summary('c1')?.done, 1);
    assert.equal(blobs.summaryWrites('c1'), 1);
  });

  it('a failed completion query is retried, and completion still fires once', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    const a = message(result('c1', '/a'));
    frontier.failNext('confirmCompletion', 3);
    const failed = await run([a]);
    assert.equal(failed.retry.length, 1);
    await run([redelivered(a)]);
    assert.equal(blobs.summary('c1')?.state, 'complete');
    assert.equal(blobs.summary('c1')?.done, 1, "the over-count is replaced by the hosts' tallies");
    assert.equal(blobs.summaryWrites('c1'), 1);
  });

  it('a completion check that fails twice is repeated in the function: nothing is retried, the summary is written', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.failNext('confirmCompletion', 2);
    const report = await run([message(result('c1', '/a'))]);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: true }]);
    assert.equal(blobs.summaryWrites('c1'), 1);
  });

  it('a completion flip whose answer was lost: the repeat finds the crawl complete and writes the summary once', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.loseFlipAnswers = 1;
    const report = await run([message(result('c1', '/a'))]);
    assert.deepEqual(report.retry, []);
    assert.equal(frontier.counters.get('c1')!.state, 'complete');
    assert.equal(blobs.summary('c1')?.done, 1);
    assert.equal(blobs.summaryWrites('c1'), 1);
  });

  it('counters after completion are exact whatever the repeats counted, and final', async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    const a = result('c1', '/a', { bytes: 11 });
    const b = result('c1', '/b', { outcome: 'failed', status: 500, code: 'http-500', bytes: 3 });
    const c = result('c1', '/c', { outcome: 'skipped', status: undefined, code: 'out-of-scope', bytes: 0 });
    for (const r of [a, b, c]) frontier.admit('c1', r.key);
    const [ma, mb, mc] = [message(a), message(b), message(c)];
    // Counted, then the invocation died before acknowledging: a and b come back and count again.
    await crashingRun('addCounters done', [ma, mb]);
    const again = await run([redelivered(ma), redelivered(mb)]);
    assert.equal(again.rewritten.length, 2);
    assert.equal(frontier.counters.get('c1')!.done, 4, 'over-counted while running');
    assert.equal(frontier.counters.get('c1')!.state, 'running', 'c is still pending');
    const last = await run([mc]);
    assert.equal(last.summaries[0]?.completedNow, true);
    const final = frontier.counters.get('c1');
    assert.deepEqual(numbers(final), exact([a, b, c]));
    const summary = blobs.summary('c1')!;
    assert.deepEqual(
      { queued: summary.queued, done: summary.done, bytes: summary.bytes, requests: summary.requests },
      { queued: 3, done: 3, bytes: 14, requests: 2 },
    );

    // A late repeat after completion counts nothing.
    const counted = frontier.calls.addCounters;
    const late = await run([redelivered(redelivered(ma))]);
    assert.deepEqual(late.retry, []);
    assert.equal(frontier.calls.addCounters, counted);
    assert.deepEqual(frontier.counters.get('c1'), final);
    assert.deepEqual(blobs.urls('c1'), [a.url, b.url, c.url]);
  });

  it('a result for a URL the crawl never had, arriving after completion, counts nothing', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    await run([message(result('c1', '/a'))]);
    const final = structuredClone(frontier.counters.get('c1'));
    assert.equal(final?.state, 'complete');
    await run([message(result('c1', '/late-bare-task'))]);
    assert.deepEqual(frontier.counters.get('c1'), final);
    assert.equal(blobs.summary('c1')?.done, final?.done);
  });

  it('one failing crawl does not hold back another', async () => {
    const { frontier, blobs, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    frontier.admit('c2', keyOf('http://site.test/a'));
    blobs.failPuts(/^results\/c1\//, 3);
    const report = await run([message(result('c1', '/a')), message(result('c2', '/a'))]);
    assert.deepEqual(
      report.retry.map((r) => r.crawlId),
      ['c1'],
    );
    assert.equal(blobs.lines('c2').length, 1);
    assert.equal(blobs.summary('c2')?.done, 1);
  });

  it('a host a visit still holds keeps the crawl running; its `drained` record alone then completes it', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    const b = result('c1', '/b', { outcome: 'failed', status: 500, code: 'http-500', bytes: 40 });
    frontier.admit('c1', a.key);
    frontier.admit('c1', b.key);
    frontier.visit('c1'); // the visit that fetched a and b has not drained site.test yet
    const first = await run([message(a), message(b)]);
    assert.deepEqual(first.retry, []);
    assert.equal(frontier.calls.confirmCompletion, 1, "a running crawl's batch asks");
    assert.deepEqual(first.summaries, [], 'every URL is done, but its host is still active');
    assert.equal(frontier.counters.get('c1')!.state, 'running');

    frontier.drain('c1');
    const d = message(drained('c1'));
    const report = await run([d]);
    assert.deepEqual(report.rejected, []);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.written, [], 'a control record is no index line');
    assert.deepEqual(report.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: true }]);
    assert.equal(frontier.calls.confirmCompletion, 2);
    assert.equal(frontier.calls.addCounters, 1, 'a control record counts nothing');
    assert.deepEqual(numbers(report.counters.c1), exact([a, b]));
    assert.deepEqual(numbers(frontier.counters.get('c1')), exact([a, b]));
    assert.equal(blobs.summary('c1')?.state, 'complete');
    assert.equal(blobs.summary('c1')?.done, 2);
    assert.equal(blobs.summary('c1')?.requests, 2);
    assert.equal(blobs.summaryWrites('c1'), 1);

    // Delivered again (its deletion lost) with another host's late record: one read, nothing more.
    const reads = frontier.calls.readCounters;
    const again = await run([redelivered(d), message(drained('c1'))]);
    assert.deepEqual(again.rejected, []);
    assert.deepEqual(again.retry, []);
    assert.deepEqual(again.summaries, []);
    assert.equal(frontier.calls.readCounters, reads + 1, "one read for the crawl's records");
    assert.equal(frontier.calls.confirmCompletion, 2, 'a complete crawl is not asked again');
    assert.equal(blobs.summaryWrites('c1'), 1);
  });

  it("a `drained` record next to results of its crawl: the crawl's batch asks once for both", async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    frontier.admit('c1', keyOf('http://site.test/b'));
    frontier.admit('c2', keyOf('http://site.test/x'));
    const report = await run([message(drained('c1')), message(a), message(drained('c2'))]);
    assert.deepEqual(report.rejected, []);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.summaries, []);
    assert.equal(frontier.calls.confirmCompletion, 2, 'c1 once (with its result), c2 once (its record)');
    assert.equal(frontier.calls.readCounters, 1, "only c2's record reads the counters");
    assert.equal(frontier.counters.get('c2')!.state, 'running', "c2's /x is pending");
    assert.equal(frontier.counters.get('c2')!.done, 0, 'nothing counted for a record');
    assert.deepEqual(blobs.urls('c1'), [a.url]);
  });

  it('a `drained` record whose completion check fails is retried; its redelivery completes the crawl', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    frontier.visit('c1');
    await run([message(a)]);
    frontier.drain('c1');
    const d = message(drained('c1'));
    frontier.failNext('confirmCompletion', 3);
    const failed = await run([d]);
    assert.deepEqual(
      failed.retry.map((r) => [r.id, r.crawlId]),
      [[d.id, 'c1']],
    );
    assert.match(failed.retry[0]!.reason, /^confirm completion/);
    assert.equal(frontier.counters.get('c1')!.state, 'running');
    assert.equal(blobs.summary('c1'), undefined);

    const again = await run([redelivered(d)]);
    assert.deepEqual(again.retry, []);
    assert.deepEqual(again.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: true }]);
    assert.equal(blobs.summary('c1')?.done, 1);
  });

  it('a `drained` record of a complete crawl whose summary is missing writes it once', async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    const ma = message(a);
    // Completed, then the invocation died before the summary PUT.
    await crashingRun('summary put', [ma]);
    assert.equal(frontier.counters.get('c1')!.state, 'complete');
    assert.equal(blobs.summary('c1'), undefined);
    const counters = structuredClone(frontier.counters.get('c1'));
    const asked = frontier.calls.confirmCompletion;

    const d = message(drained('c1'));
    const report = await run([d]);
    assert.deepEqual(report.rejected, []);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: false }]);
    assert.equal(frontier.calls.confirmCompletion, asked, 'complete already: not asked');
    assert.deepEqual(frontier.counters.get('c1'), counters, 'nothing counted');
    assert.equal(blobs.summary('c1')?.state, 'complete');
    assert.equal(blobs.summary('c1')?.done, 1);
    assert.equal(blobs.summary('c1')?.endedAt, counters?.endedAt);
    assert.equal(blobs.summaryWrites('c1'), 1);

    // The crashed invocation's result comes back with the record once more: nothing is written again.
    const again = await run([redelivered(ma), redelivered(d)]);
    assert.deepEqual(again.retry, []);
    assert.deepEqual(again.summaries, []);
    assert.deepEqual(again.written, []);
    assert.equal(blobs.summaryWrites('c1'), 1);
    assert.deepEqual(frontier.counters.get('c1'), counters);
    assert.deepEqual(blobs.lines('c1'), [indexLine(a)]);
  });

  it('a malformed `drained`-looking body is rejected like any bad record and checks nothing', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    frontier.visit('c1');
    await run([message(a)]);
    frontier.drain('c1'); // completion is due now: only a valid record may ask
    const asked = frontier.calls.confirmCompletion;
    const reads = frontier.calls.readCounters;
    const notJson = message('{"v":1,"kind":"drained","crawlId":"c1"');
    const bad = [
      '{"v":1,"kind":"drained"}',
      '{"v":1,"kind":"drained","crawlId":7}',
      '{"v":2,"kind":"drained","crawlId":"c1"}',
      '{"kind":"drained","crawlId":"c1"}',
      '["drained","c1"]',
      '"drained"',
    ].map((body) => message(body));
    const report = await run([notJson, ...bad]);
    assert.deepEqual(ids(report.rejected), ids([notJson, ...bad]));
    assert.match(report.rejected.find((r) => r.id === notJson.id)!.reason, /^not JSON/);
    for (const m of bad)
      assert.match(report.rejected.find((r) => r.id === m.id)!.reason, /^not a result record/, m.body);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.summaries, []);
    assert.equal(frontier.calls.confirmCompletion, asked, 'no completion check');
    assert.equal(frontier.calls.readCounters, reads);
    assert.equal(frontier.counters.get('c1')!.state, 'running');
    assert.equal(blobs.summary('c1'), undefined);

    const good = await run([message(drained('c1'))]);
    assert.equal(good.summaries[0]?.completedNow, true, 'a valid record then completes it');
  });

  it('a `drained` record next to losing results of its crawl still checks completion', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    frontier.visit('c1');
    await run([message(a)]);
    frontier.drain('c1');
    // The last host's record arrives with another result for /a (a URL fetched twice): it loses.
    const other = message({ ...a, fetchedAt: '2024-05-01T12:00:05.000Z' });
    const report = await run([other, message(drained('c1'))]);
    assert.deepEqual(ids(report.duplicates), [other.id]);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(report.summaries, [{ crawlId: 'c1', key: summaryKey('c1'), completedNow: true }]);
    assert.equal(blobs.summary('c1')?.done, 1);
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
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
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

describe('processResultBatch near its deadline', () => {
  it('starts no crawl after the deadline: what is left is deferred untouched, not failed, and done when sent again', async () => {
    const { frontier, blobs, run, clock } = setup();
    for (const p of ['/a', '/b']) frontier.admit('c1', keyOf(`http://site.test${p}`));
    frontier.admit('c2', keyOf('http://site.test/x'));
    const first = [message(result('c1', '/a')), message(result('c1', '/b'))];
    const late = [message(result('c2', '/x')), message(drained('c3'))];
    // Each read of the fake clock is a second: c1 starts before the deadline, and once it is done
    // (its part key, its steps) the deadline has passed.
    const report = await run([...first, ...late], clock() + 1_500);
    assert.deepEqual(report.retry, [], 'running out of time is no failure');
    assert.deepEqual(report.rejected, []);
    assert.deepEqual(ids(report.deferred), ids(late));
    assert.deepEqual(
      report.written.map((w) => [w.crawlId, w.lines]),
      [['c1', 2]],
    );
    assert.equal(frontier.calls.finalize, 2, 'nothing of c2 was started');
    assert.deepEqual(blobs.lines('c2'), []);
    // Sent again as new messages (receive count 1), they are done like any others.
    const again = await run(late.map((m) => ({ ...m, receiveCount: 1 })));
    assert.deepEqual(again.deferred, []);
    assert.deepEqual(
      again.written.map((w) => [w.crawlId, w.lines]),
      [['c2', 1]],
    );
  });

  it('without a deadline nothing is deferred', async () => {
    const { frontier, run } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    const report = await run([message(result('c1', '/a')), message(drained('c1'))]);
    assert.deepEqual(report.deferred, []);
  });
});

/** One message carrying `results` packed, as the fetch function sends a flush's records of a crawl. */
function packed(results: readonly CrawlResult[], receiveCount = 1): ResultMessage {
  const bodies = resultMessageBodies(results);
  assert.equal(bodies.length, 1, 'the records fit one message');
  return message(bodies[0]!, receiveCount);
}

describe('processResultBatch: messages carrying many records', () => {
  it('finalizes each record of a packed message as it would alone: one part, counted once', async () => {
    const { frontier, blobs, run } = setup();
    const results = ['/a', '/b', '/c'].map((p) => result('c1', p));
    for (const r of results) frontier.admit('c1', r.key);
    frontier.admit('c1', keyOf('http://site.test/pending'));
    const m = packed(results);
    const report = await run([m]);
    assert.deepEqual(report.rejected, []);
    assert.deepEqual(report.retry, []);
    assert.deepEqual(
      report.written.map((w) => [w.crawlId, w.lines]),
      [['c1', 3]],
    );
    assert.deepEqual(blobs.urls('c1'), results.map((r) => r.url).sort());
    assert.equal(frontier.counters.get('c1')?.done, 3);
    // The id each record had as a message of its own: the same record alone is the same result.
    for (const r of results) assert.equal(frontier.item('c1', r.key)?.rid, resultId(JSON.stringify(r)));
  });

  it('a bare record left from before the upgrade and the same record packed are one result: one line', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    const b = result('c1', '/b');
    frontier.admit('c1', a.key);
    frontier.admit('c1', b.key);
    const old = message(a);
    const report = await run([old, packed([a, b])]);
    assert.deepEqual(report.rejected, []);
    assert.equal(report.duplicates.length, 1, 'the second copy of a is dropped before finalize');
    assert.deepEqual(blobs.urls('c1'), [a.url, b.url]);
    assert.equal(blobs.lines('c1').length, 2);
    assert.deepEqual(numbers(frontier.counters.get('c1')), exact([a, b]));
    assert.equal(blobs.summary('c1')?.done, 2);
  });

  it('a packed message redelivered after a crash past its PUT: its records are repeats, no second line, exact counts', async () => {
    const { frontier, blobs, run, crashingRun } = setup();
    const results = ['/a', '/b', '/c'].map((p) => result('c1', p));
    for (const r of results) frontier.admit('c1', r.key);
    const m = packed(results);
    await crashingRun('part put done', [m]);
    assert.equal(blobs.lines('c1').length, 3);
    const again = await run([redelivered(m)]);
    assert.deepEqual(again.retry, []);
    assert.equal(again.rewritten.length, 3);
    assert.equal(blobs.lines('c1').length, 3, 'not written again');
    assert.deepEqual(numbers(frontier.counters.get('c1')), exact(results));
    assert.equal(blobs.summary('c1')?.state, 'complete');
  });

  it('a packed message whose step keeps failing is retried once, as a unit, and its redelivery writes every line once', async () => {
    const { frontier, blobs, run } = setup();
    const results = ['/a', '/b', '/c'].map((p) => result('c1', p));
    for (const r of results) frontier.admit('c1', r.key);
    frontier.finalizeFaults.set(results[1]!.key, ['fail', 'fail', 'fail']);
    const m = packed(results);
    const failed = await run([m]);
    assert.deepEqual(ids(failed.retry), [m.id], 'one failure for the message, not one per record');
    assert.deepEqual(blobs.parts('c1'), []);
    frontier.failNext('addCounters', 3);
    const countersFailed = await run([redelivered(m)]);
    assert.deepEqual(ids(countersFailed.retry), [m.id]);
    const again = await run([redelivered(redelivered(m))]);
    assert.deepEqual(again.retry, []);
    assert.equal(blobs.lines('c1').length, 3, 'one line per URL');
    assert.equal(blobs.summary('c1')?.done, 3);
  });

  it('a packed message with a malformed record, or a record of another crawl, is rejected whole: nothing of it is finalized', async () => {
    const { frontier, blobs, run } = setup();
    const a = result('c1', '/a');
    frontier.admit('c1', a.key);
    const badRecord = message(
      JSON.stringify({ v: 1, kind: 'results', crawlId: 'c1', results: [a, { ...a, key: undefined }] }),
    );
    const otherCrawl = message(
      JSON.stringify({ v: 1, kind: 'results', crawlId: 'c1', results: [a, result('c2', '/x')] }),
    );
    const noList = message(JSON.stringify({ v: 1, kind: 'results', crawlId: 'c1' }));
    const report = await run([badRecord, otherCrawl, noList]);
    assert.deepEqual(ids(report.rejected), ids([badRecord, otherCrawl, noList]));
    const reasons = new Map(report.rejected.map((r) => [r.id, r.reason]));
    assert.match(reasons.get(badRecord.id)!, /results\.1\.key/);
    assert.match(reasons.get(otherCrawl.id)!, /results\.1 is of crawl "c2"/);
    assert.match(reasons.get(noList.id)!, /results array/);
    assert.equal(frontier.calls.finalize, 0);
    assert.deepEqual(blobs.parts('c1'), []);
  });

  it('a packed message not started before the deadline is deferred once, whole', async () => {
    const { frontier, run, clock } = setup();
    frontier.admit('c1', keyOf('http://site.test/a'));
    for (const p of ['/x', '/y']) frontier.admit('c2', keyOf(`http://site.test${p}`));
    const late = packed([result('c2', '/x'), result('c2', '/y')]);
    const report = await run([message(result('c1', '/a')), late], clock() + 1_500);
    assert.deepEqual(report.deferred, [{ id: late.id, crawlId: 'c2' }]);
  });
});
