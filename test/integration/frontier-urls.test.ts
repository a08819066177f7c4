// The FrontierTable's URL items and counters (docs/frontier.md) against dynalite, over the DynamoDB wire protocol.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  type DynamoDBClient,
  QueryCommand,
  ThrottlingException,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { createFrontierStore, type FrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import type { Outcome } from '../../lambdas/core/outcome.ts';
import type { FinalizeEntry, FrontierUrl } from '../../lambdas/core/ports.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';

const TABLE = FRONTIER_TABLE;
let table: FrontierTableFixture;
let dynamodb: DynamoDBClient;
let store: FrontierStore;
let crawlSeq = 0;
const newCrawl = () => `crawl-${++crawlSeq}`;
const rawItem = (crawlId: string, sk: string) => table.rawItem(crawlId, sk);

const frontierUrl = (url: string, depth = 1): FrontierUrl => ({
  key: createHash('sha256').update(url).digest('hex'),
  url,
  depth,
});

let resultSeq = 0;
const PART = 'results/c/2024-05-01T12-00-00-000Z-inv.jsonl.gz';
/** What the aggregate function finalizes for one result: a fresh result id unless `rid` is given. */
const entry = (url: FrontierUrl, outcome: Outcome, more: Partial<FinalizeEntry> = {}): FinalizeEntry => ({
  key: url.key,
  url: url.url,
  outcome,
  bytes: 0,
  requests: 0,
  rid: `result-${++resultSeq}`,
  part: PART,
  ...more,
});
/** The index parts exist (the aggregate function's S3 listing, stood in for). */
const partsWritten = async () => true;

before(async () => {
  table = await startFrontierTable();
  dynamodb = table.dynamodb;
  store = createFrontierStore(dynamodb, TABLE);
});

after(() => table.stop());

describe('admission', () => {
  it('admits each URL exactly once across 100 concurrent pages with overlapping links', async () => {
    const crawlId = newCrawl();
    const universe = Array.from({ length: 300 }, (_, i) => frontierUrl(`https://example.com/p/${i}`));
    // Page i links to 24 URLs starting at 3i (wrapping): every URL is linked from 8 pages.
    const pages = Array.from({ length: 100 }, (_, i) => ({
      parent: `page-${i}`,
      links: Array.from({ length: 24 }, (_, j) => universe[(3 * i + j) % universe.length]!),
    }));
    const admitted = await Promise.all(pages.map((page) => store.admit(crawlId, page.parent, page.links)));

    const winners = new Map<string, string[]>();
    for (const [i, urls] of admitted.entries()) {
      for (const url of urls) winners.set(url.key, [...(winners.get(url.key) ?? []), `page-${i}`]);
    }
    assert.equal(winners.size, universe.length, 'every linked URL was admitted');
    for (const [key, parents] of winners) assert.equal(parents.length, 1, `${key} admitted by ${parents}`);

    // The item records its admitting page, st new, and an expiry about 30 days out.
    const first = universe[0]!;
    const item = await rawItem(crawlId, `URL#${first.key}`);
    assert.equal(item?.st?.S, 'new');
    assert.equal(item?.url?.S, first.url);
    assert.equal(item?.depth?.N, '1');
    assert.deepEqual([item?.parent?.S], winners.get(first.key));
    const expiresIn = Number(item?.expiresAt?.N) - Date.now() / 1000;
    assert.ok(Math.abs(expiresIn - 30 * 24 * 3600) < 120, `expiresAt ${expiresIn}s from now`);
  });

  it("lets a page re-admit its own unsent links (a retried batch) but not another page's", async () => {
    const crawlId = newCrawl();
    const [a, b, c] = ['a', 'b', 'c'].map((p) => frontierUrl(`https://example.com/${p}`)) as [
      FrontierUrl,
      FrontierUrl,
      FrontierUrl,
    ];
    const fresh = (url: FrontierUrl) => ({ ...url, fresh: true });
    const again = (url: FrontierUrl) => ({ ...url, fresh: false });
    const admit = (page: string, urls: FrontierUrl[]) => store.admit(crawlId, page, urls);
    assert.deepEqual(await admit('page-1', [a, b]), [fresh(a), fresh(b)]);
    assert.deepEqual(
      await admit('page-1', [a, b]),
      [again(a), again(b)],
      'own earlier admissions, not counted again',
    );
    assert.deepEqual(await admit('page-2', [a, c]), [fresh(c)], "page-1's link is not page-2's");
    assert.deepEqual(await admit('page-1', [c, c, a]), [again(a)], 'duplicates in one call: once');

    // Once a link is being fetched its own page cannot send it again either.
    assert.deepEqual(await store.claim(crawlId, a, 60_000, Date.now()), {
      status: 'claimed',
      attempts: 0,
      relink: false,
    });
    assert.deepEqual(await admit('page-1', [a, b]), [again(b)]);
  });

  it('tells the next claimer to relink when a claim was given back with unsent links or its holder died', async () => {
    const crawlId = newCrawl();
    const [a, b, c] = ['a', 'b', 'c'].map((p) => frontierUrl(`https://example.com/${p}`)) as [
      FrontierUrl,
      FrontierUrl,
      FrontierUrl,
    ];
    await store.admit(crawlId, 'seed', [a, b, c]);
    const now = Date.now();
    assert.deepEqual(await store.claim(crawlId, a, 60_000, now), {
      status: 'claimed',
      attempts: 0,
      relink: false,
    });
    await store.release(crawlId, a.key); // a politeness deferral: nothing was admitted
    assert.deepEqual(await store.claim(crawlId, a, 60_000, now), {
      status: 'claimed',
      attempts: 0,
      relink: false,
    });
    await store.release(crawlId, a.key, true); // a failed batch: links admitted, maybe not sent
    assert.deepEqual(await store.claim(crawlId, a, 60_000, now), {
      status: 'claimed',
      attempts: 0,
      relink: true,
    });

    // A holder that crashed: its lease runs out and the next claimer takes over.
    await store.claim(crawlId, b, 1_000, now);
    assert.deepEqual(await store.claim(crawlId, b, 60_000, now + 2_000), {
      status: 'claimed',
      attempts: 0,
      relink: true,
    });
    // A postponed retry is not a relink (a retried fetch admitted nothing).
    await store.claim(crawlId, c, 60_000, now);
    await store.postpone(crawlId, c.key, 1, now + 1_000);
    assert.deepEqual(await store.claim(crawlId, c, 60_000, now + 2_000), {
      status: 'claimed',
      attempts: 1,
      relink: false,
    });
  });

  it('propagates errors other than a failed condition', async () => {
    const broken = createFrontierStore(dynamodb, 'NoSuchTable');
    await assert.rejects(
      broken.admit(newCrawl(), 'p', [frontierUrl('https://example.com/x')]),
      (err: Error) => err.name === 'ResourceNotFoundException',
    );
  });
});

describe('page budget', () => {
  it('never grants more than maxPages to 20 concurrent reservers', async () => {
    const crawlId = newCrawl();
    const grants = await Promise.all(Array.from({ length: 20 }, () => store.reservePages(crawlId, 7, 50)));
    assert.equal(
      grants.reduce((sum, n) => sum + n, 0),
      50,
    );
    assert.ok(grants.every((n) => n >= 0 && n <= 7));
    assert.equal(await store.reservePages(crawlId, 5, 50), 0, 'budget spent');
    const counters = await store.readCounters(crawlId);
    assert.equal(counters?.admitted, 50);
    assert.equal(counters?.state, 'running');
  });

  it('grants what is left, and nothing for nothing wanted', async () => {
    const crawlId = newCrawl();
    assert.equal(await store.reservePages(crawlId, 0, 10), 0);
    assert.equal(await store.readCounters(crawlId), undefined, 'no write for 0');
    assert.equal(await store.reservePages(crawlId, 8, 10), 8);
    assert.equal(await store.reservePages(crawlId, 8, 10), 2);
    assert.equal(await store.reservePages(crawlId, 8, 10), 0);
    assert.equal(await store.reservePages(crawlId, 8, 0), 0);

    const unlimited = newCrawl();
    assert.equal(await store.reservePages(unlimited, 1_000, Number.POSITIVE_INFINITY), 1_000);
    assert.equal((await store.readCounters(unlimited))?.admitted, 1_000);
  });
});

describe('claims', () => {
  it('lets exactly one of 10 concurrent claimers fetch; the others see the live lease', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/once');
    await store.admit(crawlId, 'seed', [url]);
    const now = Date.now();
    const claims = await Promise.all(
      Array.from({ length: 10 }, () => store.claim(crawlId, url, 30_000, now)),
    );
    assert.equal(claims.filter((c) => c.status === 'claimed').length, 1);
    for (const claim of claims.filter((c) => c.status !== 'claimed')) {
      assert.deepEqual(claim, { status: 'held', leaseUntil: now + 30_000 });
    }
  });

  it('takes over a claim whose lease has run out, and reports a finished URL as done', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/crashed');
    await store.admit(crawlId, 'seed', [url]);
    const t0 = Date.now();
    assert.deepEqual(await store.claim(crawlId, url, 1_000, t0), {
      status: 'claimed',
      attempts: 0,
      relink: false,
    });
    assert.deepEqual(await store.claim(crawlId, url, 1_000, t0 + 999), {
      status: 'held',
      leaseUntil: t0 + 1_000,
    });
    assert.deepEqual(
      await store.claim(crawlId, url, 1_000, t0 + 1_001),
      { status: 'claimed', attempts: 0, relink: true },
      'stale lease: the crashed holder may have admitted links it never sent',
    );
    await store.finalize(crawlId, entry(url, 'fetched'));
    assert.deepEqual(await store.claim(crawlId, url, 1_000, t0 + 10_000), { status: 'done' });
  });

  it('creates and counts as queued a URL nobody admitted (a bare URL task), once', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/bare', 0);
    const now = Date.now();
    assert.deepEqual(await store.claim(crawlId, url, 30_000, now), {
      status: 'claimed',
      attempts: 0,
      relink: false,
    });
    assert.equal((await store.claim(crawlId, url, 30_000, now)).status, 'held');
    const counters = await store.readCounters(crawlId);
    assert.equal(counters?.queued, 1);
    const item = await rawItem(crawlId, `URL#${url.key}`);
    assert.equal(item?.st?.S, 'fetching');
    assert.equal(item?.url?.S, url.url);
    assert.equal(item?.depth?.N, '0');
    assert.ok(item?.expiresAt?.N);
  });

  it("release gives a claim back at once, but never a newer holder's", async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/retry');
    await store.admit(crawlId, 'seed', [url]);
    const t0 = Date.now();
    assert.equal((await store.claim(crawlId, url, 60_000, t0)).status, 'claimed');
    await store.release(crawlId, url.key);
    const other = createFrontierStore(dynamodb, TABLE); // another container
    assert.equal((await other.claim(crawlId, url, 1_000, t0)).status, 'claimed', 'released claim is free');

    // `other` stalls past its lease; `store` takes over; the stale holder's release is a no-op.
    assert.equal((await store.claim(crawlId, url, 60_000, t0 + 2_000)).status, 'claimed');
    await other.release(crawlId, url.key);
    assert.deepEqual(await other.claim(crawlId, url, 1_000, t0 + 3_000), {
      status: 'held',
      leaseUntil: t0 + 62_000,
    });
    await store.release(crawlId, url.key);
    await store.finalize(crawlId, entry(url, 'failed'));
    await store.release(crawlId, url.key); // nothing to give back once done
    assert.deepEqual(await store.claim(crawlId, url, 1_000, t0 + 4_000), { status: 'done' });
  });
});

describe('finalize and counters', () => {
  it('lets exactly one of 10 different results win', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/dup');
    await store.admit(crawlId, 'seed', [url]);
    await store.claim(crawlId, url, 30_000, Date.now());
    const entries = Array.from({ length: 10 }, () => entry(url, 'fetched'));
    const outcomes = await Promise.all(entries.map((e) => store.finalize(crawlId, e)));
    assert.equal(outcomes.filter((o) => o.won).length, 1);
    const winner = entries[outcomes.findIndex((o) => o.won)]!;
    assert.deepEqual(
      outcomes.find((o) => o.won),
      { won: true, repeat: false, created: false, part: winner.part },
    );
    for (const lost of outcomes.filter((o) => !o.won))
      assert.deepEqual(lost, { won: false, repeat: false, created: false });
    const item = await rawItem(crawlId, `URL#${url.key}`);
    assert.equal(item?.st?.S, 'done');
    assert.equal(item?.outcome?.S, 'fetched');
    assert.equal(item?.rid?.S, winner.rid, 'the winner is the result recorded');
    assert.equal(item?.lease, undefined);
  });

  it('records the winning result on the URL item: id, index part, bytes and requests', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/recorded');
    await store.admit(crawlId, 'seed', [url]);
    const won = entry(url, 'failed', { bytes: 1234, requests: 1, part: 'results/c/part-1.jsonl.gz' });
    assert.deepEqual(await store.finalize(crawlId, won), {
      won: true,
      repeat: false,
      created: false,
      part: won.part,
    });
    const item = await rawItem(crawlId, `URL#${url.key}`);
    assert.deepEqual(
      {
        st: item?.st?.S,
        outcome: item?.outcome?.S,
        rid: item?.rid?.S,
        part: item?.part?.S,
        bytes: item?.bytes?.N,
        requests: item?.requests?.N,
        url: item?.url?.S,
        depth: item?.depth?.N,
      },
      {
        st: 'done',
        outcome: 'failed',
        rid: won.rid,
        part: 'results/c/part-1.jsonl.gz',
        bytes: '1234',
        requests: '1',
        url: url.url,
        depth: '1',
      },
    );
  });

  it('the same result again wins as a repeat and names the part of its first win; repoint moves it', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/again');
    await store.admit(crawlId, 'seed', [url]);
    const first = entry(url, 'fetched', { bytes: 10, requests: 1, part: 'results/c/crashed.jsonl.gz' });
    assert.deepEqual(await store.finalize(crawlId, first), {
      won: true,
      repeat: false,
      created: false,
      part: first.part,
    });
    // A redelivery after a crash: same result (same id), from another invocation with its own part.
    const again = { ...first, part: 'results/c/redelivery.jsonl.gz' };
    const repeat = { won: true, repeat: true, created: false, part: first.part };
    assert.deepEqual(await store.finalize(crawlId, again), repeat);
    assert.deepEqual(await store.finalize(crawlId, again), repeat);
    assert.equal((await rawItem(crawlId, `URL#${url.key}`))?.part?.S, first.part, 'kept');
    // Its first part was never written: the aggregate function points the URL at its own.
    await store.repoint(crawlId, url.key, first.rid, again.part);
    const item = await rawItem(crawlId, `URL#${url.key}`);
    assert.equal(item?.part?.S, 'results/c/redelivery.jsonl.gz');
    assert.equal(item?.rid?.S, first.rid);
    assert.equal(item?.bytes?.N, '10');
    const other = entry(url, 'fetched', { part: 'results/c/other.jsonl.gz' });
    await assert.rejects(store.repoint(crawlId, url.key, other.rid, other.part), 'only the winner repoints');
  });

  it('a different result for a done URL loses and changes nothing on the item', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/taken');
    await store.admit(crawlId, 'seed', [url]);
    const first = entry(url, 'fetched', { bytes: 10, requests: 1, part: 'results/c/first.jsonl.gz' });
    await store.finalize(crawlId, first);
    const before = await rawItem(crawlId, `URL#${url.key}`);
    // A second fetch of the URL (another result id), even with the same outcome and part.
    const other = entry(url, 'failed', { bytes: 99, requests: 1, part: 'results/c/second.jsonl.gz' });
    assert.deepEqual(await store.finalize(crawlId, other), { won: false, repeat: false, created: false });
    assert.deepEqual(await store.finalize(crawlId, { ...other, outcome: 'fetched', part: first.part }), {
      won: false,
      repeat: false,
      created: false,
    });
    assert.deepEqual(await rawItem(crawlId, `URL#${url.key}`), before);
  });

  it('reports a result for a URL with no item as created (never counted as queued)', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('not a url at all');
    const result = entry(url, 'invalid');
    assert.deepEqual(await store.finalize(crawlId, result), {
      won: true,
      repeat: false,
      created: true,
      part: result.part,
    });
    assert.deepEqual(
      await store.finalize(crawlId, result),
      { won: true, repeat: true, created: false, part: result.part },
      'its repeat: the item exists now',
    );
    assert.deepEqual(await store.finalize(crawlId, entry(url, 'invalid')), {
      won: false,
      repeat: false,
      created: false,
    });
    const item = await rawItem(crawlId, `URL#${url.key}`);
    assert.equal(item?.url?.S, url.url);
    assert.ok(item?.expiresAt?.N);
  });

  it('adds all deltas of a batch at once and returns the totals', async () => {
    const crawlId = newCrawl();
    assert.equal(await store.readCounters(crawlId), undefined);
    await store.addQueued(crawlId, 3);
    await store.addQueued(crawlId, 0);
    const first = await store.addCounters(crawlId, {
      done: 2,
      bytes: 1000,
      requests: 3,
      byOutcome: { fetched: 1, skipped: 1 },
    });
    assert.equal(first.queued, 3);
    assert.equal(first.done, 2);
    assert.equal(first.bytes, 1000);
    assert.equal(first.requests, 3);
    assert.deepEqual(first.byOutcome, { fetched: 1, skipped: 1 });
    assert.equal(first.state, 'running');
    assert.ok(first.startedAt && !Number.isNaN(Date.parse(first.startedAt)));
    const second = await store.addCounters(crawlId, { queued: 1, done: 1, byOutcome: { failed: 1 } });
    assert.deepEqual(
      { queued: second.queued, done: second.done, byOutcome: second.byOutcome, startedAt: second.startedAt },
      { queued: 4, done: 3, byOutcome: { fetched: 1, skipped: 1, failed: 1 }, startedAt: first.startedAt },
    );
    assert.deepEqual(await store.readCounters(crawlId), second);
    const unchanged = await store.addCounters(crawlId, {});
    assert.deepEqual(unchanged, second);
  });
  it('makes every counter ADD on the single-attempt client: a throttle is retried, nothing else is', async () => {
    // An ADD repeated after its first attempt took effect counts twice (a queued counted twice keeps
    // the crawl from completing); only a throttled ADD, which never took effect, may be repeated.
    const single = table.newClient();
    const calls: string[] = [];
    const faults: Array<'throttle' | 'lose answer'> = [];
    single.middlewareStack.add(
      (next, context) => async (args) => {
        calls.push(context.commandName ?? '?');
        const fault = faults.shift();
        if (fault === 'throttle') throw new ThrottlingException({ message: 'Rate exceeded', $metadata: {} });
        const out = await next(args);
        if (fault === 'lose answer')
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        return out;
      },
      { step: 'build', name: 'injectFaults' },
    );
    const counted = createFrontierStore(dynamodb, TABLE, { singleAttemptClient: single });
    const crawlId = newCrawl();
    await counted.addQueued(crawlId, 2);
    assert.equal(await counted.reservePages(crawlId, 3, 10), 3);
    await counted.addCounters(crawlId, { done: 1, bytes: 5 });
    assert.deepEqual(calls, ['UpdateItemCommand', 'UpdateItemCommand', 'UpdateItemCommand']);

    faults.push('throttle', 'throttle');
    await counted.addQueued(crawlId, 1);
    assert.equal(calls.length, 6, 'two throttled attempts, then the one that counts');
    assert.equal((await counted.readCounters(crawlId))?.queued, 3, 'counted once');

    faults.push('lose answer');
    await assert.rejects(counted.addCounters(crawlId, { done: 1 }), /socket hang up/);
    assert.equal(calls.length, 7, 'not repeated: the ADD may have taken effect');
    const counters = await counted.readCounters(crawlId);
    assert.deepEqual(
      {
        queued: counters?.queued,
        done: counters?.done,
        admitted: counters?.admitted,
        bytes: counters?.bytes,
      },
      { queued: 3, done: 2, admitted: 3, bytes: 5 },
    );
  });
});

describe('completion', () => {
  it('is confirmed only when no URL is pending, exactly once, with the counters made exact', async () => {
    const crawlId = newCrawl();
    const urls = Array.from({ length: 5 }, (_, i) => frontierUrl(`https://example.com/c/${i}`));
    await store.admit(crawlId, 'seed', urls);
    await store.addQueued(crawlId, urls.length);
    const results = [
      entry(urls[0]!, 'fetched', { bytes: 100, requests: 1, part: 'results/c/p1.jsonl.gz' }),
      entry(urls[1]!, 'fetched', { bytes: 250, requests: 1, part: 'results/c/p1.jsonl.gz' }),
      entry(urls[2]!, 'skipped', { part: 'results/c/p2.jsonl.gz' }),
      entry(urls[3]!, 'failed', { bytes: 7, requests: 1, part: 'results/c/p2.jsonl.gz' }),
    ];
    for (const result of results) await store.finalize(crawlId, result);
    // The ADDs drift from the URL items: an SDK retry counted bytes and requests twice.
    await store.addCounters(crawlId, {
      done: 4,
      bytes: 714,
      requests: 6,
      byOutcome: { fetched: 2, skipped: 1, failed: 1 },
    });

    const pending = await store.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.equal(pending.completedNow, false);
    assert.equal(pending.counters.state, 'running');
    assert.equal(pending.counters.endedAt, undefined);

    // The last result is finalized, but its counters drift: the ADD for it was lost (crash) and an
    // earlier batch was counted twice.
    await store.finalize(crawlId, entry(urls[4]!, 'disallowed', { part: 'results/c/p3.jsonl.gz' }));
    await store.addCounters(crawlId, { queued: 2, done: 1, bytes: 3, byOutcome: { fetched: 1 } });

    const endedAt = new Date('2030-01-02T03:04:05.000Z');
    const asked: string[][] = [];
    const confirmations = await Promise.all(
      Array.from({ length: 10 }, () =>
        store.confirmCompletion(crawlId, endedAt, async (parts) => {
          asked.push([...parts].sort());
          return true;
        }),
      ),
    );
    assert.equal(confirmations.filter((c) => c.completedNow).length, 1);
    assert.deepEqual(
      asked[0],
      ['results/c/p1.jsonl.gz', 'results/c/p2.jsonl.gz', 'results/c/p3.jsonl.gz'],
      'the parts every done URL points at',
    );
    const counters = await store.readCounters(crawlId);
    assert.deepEqual(
      { ...counters, startedAt: undefined },
      {
        queued: 5,
        done: 5,
        admitted: 0,
        bytes: 357,
        requests: 3,
        byOutcome: { fetched: 2, skipped: 1, failed: 1, disallowed: 1 },
        state: 'complete',
        startedAt: undefined,
        endedAt: endedAt.toISOString(),
      },
      "every number is the URL items' tally, whatever the ADDs said",
    );
    assert.deepEqual(confirmations.find((c) => c.completedNow)?.counters, counters);
    assert.equal(
      (await store.confirmCompletion(crawlId, new Date(), partsWritten)).completedNow,
      false,
      'already complete',
    );
    assert.deepEqual(await store.readCounters(crawlId), counters, 'a complete crawl is not touched again');
  });

  it('is not confirmed while an index part a done URL points at is missing', async () => {
    const crawlId = newCrawl();
    const urls = Array.from({ length: 2 }, (_, i) => frontierUrl(`https://example.com/m/${i}`));
    await store.admit(crawlId, 'seed', urls);
    await store.addQueued(crawlId, urls.length);
    const a = entry(urls[0]!, 'fetched', { bytes: 5, requests: 1, part: 'results/c/written.jsonl.gz' });
    // The invocation that finalized b crashed before writing its part.
    const b = entry(urls[1]!, 'fetched', { bytes: 6, requests: 1, part: 'results/c/lost.jsonl.gz' });
    await store.finalize(crawlId, a);
    await store.finalize(crawlId, b);
    await store.addCounters(crawlId, { done: 1, bytes: 5, requests: 1, byOutcome: { fetched: 1 } });
    const written = new Set(['results/c/written.jsonl.gz']);
    const onlyWritten = async (parts: ReadonlySet<string>) => [...parts].every((part) => written.has(part));

    const missing = await store.confirmCompletion(crawlId, new Date(), onlyWritten);
    assert.equal(missing.completedNow, false);
    assert.equal(missing.counters.state, 'running');
    assert.equal(missing.counters.endedAt, undefined);
    assert.equal((await store.readCounters(crawlId))?.state, 'running');

    // b's redelivery wins as a repeat, finds its part missing, points the URL at its own and writes it.
    const again = await store.finalize(crawlId, { ...b, part: 'results/c/redelivered.jsonl.gz' });
    assert.deepEqual(again, { won: true, repeat: true, created: false, part: b.part });
    await store.repoint(crawlId, urls[1]!.key, b.rid, 'results/c/redelivered.jsonl.gz');
    written.add('results/c/redelivered.jsonl.gz');
    const done = await store.confirmCompletion(crawlId, new Date(), onlyWritten);
    assert.equal(done.completedNow, true);
    assert.deepEqual(
      {
        state: done.counters.state,
        queued: done.counters.queued,
        done: done.counters.done,
        bytes: done.counters.bytes,
        requests: done.counters.requests,
      },
      { state: 'complete', queued: 2, done: 2, bytes: 11, requests: 2 },
    );
  });

  it('does not ask for the parts while a URL is pending', async () => {
    const crawlId = newCrawl();
    const urls = Array.from({ length: 2 }, (_, i) => frontierUrl(`https://example.com/p/${i}`));
    await store.admit(crawlId, 'seed', urls);
    await store.addQueued(crawlId, urls.length);
    await store.finalize(crawlId, entry(urls[0]!, 'fetched'));
    let asked = 0;
    const result = await store.confirmCompletion(crawlId, new Date(), async () => {
      asked++;
      return true;
    });
    assert.equal(result.completedNow, false);
    assert.equal(asked, 0, 'listing the parts is wasted while something is pending');
  });

  it('while URLs are pending, corrects only drift the Query proves (queued too high, done too low)', async () => {
    const crawlId = newCrawl();
    const urls = Array.from({ length: 3 }, (_, i) => frontierUrl(`https://example.com/d/${i}`));
    await store.admit(crawlId, 'seed', urls);
    await store.addQueued(crawlId, 3);
    await store.addQueued(crawlId, 2); // a retried batch re-admitted its own links and counted them again
    await store.finalize(crawlId, entry(urls[0]!, 'fetched'));
    await store.finalize(crawlId, entry(urls[1]!, 'redirected'));
    await store.addCounters(crawlId, { done: 1, bytes: 10, byOutcome: { fetched: 1 } }); // one ADD lost

    const { completedNow, counters } = await store.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.equal(completedNow, false);
    assert.deepEqual(
      { queued: counters.queued, done: counters.done, byOutcome: counters.byOutcome, bytes: counters.bytes },
      { queued: 3, done: 2, byOutcome: { fetched: 1, redirected: 1 }, bytes: 10 },
    );
    assert.deepEqual(await store.readCounters(crawlId), counters);

    // queued below the URL items may be an ADD still in flight: raising it could count that twice,
    // and queued > done at the end would keep completion from ever being checked. It is left as is.
    const low = newCrawl();
    await store.admit(low, 'seed', urls);
    await store.addQueued(low, 1);
    assert.equal((await store.confirmCompletion(low, new Date(), partsWritten)).counters.queued, 1);
  });

  it('does not complete a crawl with no URL items, or a cancelled one', async () => {
    const empty = newCrawl();
    const nothing = await store.confirmCompletion(empty, new Date(), partsWritten);
    assert.equal(nothing.completedNow, false);
    assert.equal(await store.readCounters(empty), undefined, 'nothing written');

    const cancelled = newCrawl();
    const url = frontierUrl('https://example.com/cancelled');
    await store.admit(cancelled, 'seed', [url]);
    await store.addQueued(cancelled, 1);
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: TABLE,
        Key: { pk: { S: `CRAWL#${cancelled}` }, sk: { S: 'COUNTERS' } },
        UpdateExpression: 'SET #state = :cancelled',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':cancelled': { S: 'cancelled' } },
      }),
    );
    await store.finalize(cancelled, entry(url, 'skipped'));
    const result = await store.confirmCompletion(cancelled, new Date(), partsWritten);
    assert.equal(result.completedNow, false);
    assert.equal(result.counters.state, 'cancelled');
  });

  it('counts every URL item across Query pages', async () => {
    const crawlId = newCrawl();
    // Long URLs make the items big enough that the Query needs several 1 MB pages.
    const urls = Array.from({ length: 700 }, (_, i) =>
      frontierUrl(`https://example.com/${'x'.repeat(2000)}/${i}`),
    );
    await store.admit(crawlId, 'seed', urls);
    await Promise.all(urls.map((url) => store.finalize(crawlId, entry(url, 'fetched'))));
    const firstPage = await dynamodb.send(
      new QueryCommand({
        TableName: TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: `CRAWL#${crawlId}` } },
      }),
    );
    assert.ok(firstPage.LastEvaluatedKey, 'the items do not fit one Query page');
    const { completedNow, counters } = await store.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.equal(completedNow, true);
    assert.equal(counters.queued, 700);
    assert.equal(counters.done, 700);
    assert.deepEqual(counters.byOutcome, { fetched: 700 });
  });
});
