// The FrontierTable's URL items (in their hosts' partitions) and counters, and completion by drained
// hosts (docs/frontier.md, docs/design/host-visits.md) against dynalite, over the DynamoDB wire protocol.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  ThrottlingException,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { createFrontierStore, type FrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import type { Outcome } from '../../lambdas/core/base/index.ts';
import {
  type FinalizeEntry,
  type FrontierUrl,
  frontierHost,
  type HostTally,
  type HostUrl,
  NO_HOST,
} from '../../lambdas/core/crawl/index.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';
import { allUrls } from '../fixtures/host-urls.ts';

const TABLE = FRONTIER_TABLE;
let table: FrontierTableFixture;
let dynamodb: DynamoDBClient;
let store: FrontierStore;
let crawlSeq = 0;
const newCrawl = () => `crawl-${++crawlSeq}`;
const LEASE_MS = 60_000;

const frontierUrl = (url: string, depth = 1, more: Partial<FrontierUrl> = {}): FrontierUrl => ({
  key: createHash('sha256').update(url).digest('hex'),
  url,
  depth,
  ...more,
});

/** A URL item as stored, read consistently from its host's partition. */
async function urlItem(
  crawlId: string,
  url: FrontierUrl,
  host = frontierHost(url.url),
): Promise<Record<string, AttributeValue> | undefined> {
  const out = await dynamodb.send(
    new GetItemCommand({
      TableName: TABLE,
      Key: { pk: { S: `URLS#${crawlId}#${host}` }, sk: { S: url.key } },
      ConsistentRead: true,
    }),
  );
  return out.Item;
}

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

/** What a visit that finds its host drained records: the tally of the host's done URL items. */
function tallyOf(urls: readonly HostUrl[]): HostTally {
  const tally: HostTally = { total: 0, byOutcome: {}, bytes: 0, requests: 0, parts: [] };
  const parts = new Set<string>();
  for (const url of urls) {
    assert.equal(url.st, 'done', `${url.url} is not done: the host is not drained`);
    tally.total++;
    if (url.outcome) tally.byOutcome[url.outcome] = (tally.byOutcome[url.outcome] ?? 0) + 1;
    tally.bytes += url.bytes ?? 0;
    tally.requests += url.requests ?? 0;
    if (url.part) parts.add(url.part);
  }
  tally.parts = [...parts];
  return tally;
}

/** The ticket of each host's visit message, as the waking admission got it. */
const tickets = new Map<string, string>();

/** A visit of `host` that finds every URL done and drains the host (true: no host item left). */
async function drainHost(crawlId: string, host: string): Promise<boolean> {
  const now = Date.now();
  const ticket = tickets.get(`${crawlId}\n${host}`);
  const lease = await store.acquire(crawlId, host, `visit-${host}-${now}`, now + LEASE_MS, now, ticket);
  assert.ok(!('busy' in lease), `${host}: ${JSON.stringify(lease)}`);
  const tally = tallyOf(await allUrls(store, crawlId, host));
  return store.drain(crawlId, host, lease.holder, lease.wake, tally, { nextAt: now });
}

/** Admits `urls` as seeds and wakes their hosts (what admission and its caller do). */
async function admitAndWake(crawlId: string, urls: readonly FrontierUrl[]): Promise<void> {
  await store.admit(crawlId, 'seed', urls);
  for (const host of new Set(urls.map((url) => frontierHost(url.url)))) {
    const ticket = await store.wake(crawlId, host, Date.now());
    if (ticket !== undefined) tickets.set(`${crawlId}\n${host}`, ticket);
  }
}

before(async () => {
  table = await startFrontierTable();
  dynamodb = table.dynamodb;
  store = createFrontierStore(dynamodb, TABLE);
});

after(() => table.stop());

describe('admission', () => {
  it('admits each URL exactly once across 100 concurrent pages with overlapping links on 3 hosts', async () => {
    const crawlId = newCrawl();
    const hosts = ['https://a.example', 'https://b.example', 'http://c.example:8080'];
    const universe = Array.from({ length: 300 }, (_, i) => frontierUrl(`${hosts[i % 3]}/p/${i}`));
    // Page i links to 24 URLs starting at 3i (wrapping): every URL is linked from 8 pages.
    const pages = Array.from({ length: 100 }, (_, i) => ({
      parent: `page-${i}`,
      links: Array.from({ length: 24 }, (_, j) => universe[(3 * i + j) % universe.length]!),
    }));
    const admitted = await Promise.all(
      pages.map(async (page) => (await store.admit(crawlId, page.parent, page.links)).admitted),
    );

    const winners = new Map<string, string[]>();
    for (const [i, urls] of admitted.entries()) {
      for (const url of urls) winners.set(url.key, [...(winners.get(url.key) ?? []), `page-${i}`]);
    }
    assert.equal(winners.size, universe.length, 'every linked URL was admitted');
    for (const [key, parents] of winners) assert.equal(parents.length, 1, `${key} admitted by ${parents}`);

    // The item is in its host's partition, records its admitting page, st new, and an expiry about
    // 30 days out; nothing is written to the crawl's own partition.
    for (const url of universe.slice(0, 3)) {
      const item = await urlItem(crawlId, url);
      assert.equal(item?.pk?.S, `URLS#${crawlId}#${new URL(url.url).host}`);
      assert.equal(item?.sk?.S, url.key);
      assert.equal(item?.st?.S, 'new');
      assert.equal(item?.url?.S, url.url);
      assert.equal(item?.depth?.N, '1');
      assert.equal(item?.redirects, undefined);
      assert.deepEqual([item?.parent?.S], winners.get(url.key));
      const expiresIn = Number(item?.expiresAt?.N) - Date.now() / 1000;
      assert.ok(Math.abs(expiresIn - 30 * 24 * 3600) < 120, `expiresAt ${expiresIn}s from now`);
    }
    assert.equal(frontierHost(universe[2]!.url), 'c.example:8080', 'the port is part of the host');
    assert.equal(await table.rawItem(crawlId, `URL#${universe[0]!.key}`), undefined);
    for (const host of ['a.example', 'b.example', 'c.example:8080'])
      assert.equal((await allUrls(store, crawlId, host)).length, 100, host);
  });

  it("lets a page re-admit its own unattempted links (a retried batch) but not another page's", async () => {
    const crawlId = newCrawl();
    const [a, b, c] = ['a', 'b', 'c'].map((p) => frontierUrl(`https://example.com/${p}`)) as [
      FrontierUrl,
      FrontierUrl,
      FrontierUrl,
    ];
    const fresh = (url: FrontierUrl) => ({ ...url, fresh: true });
    const again = (url: FrontierUrl) => ({ ...url, fresh: false });
    const admit = async (page: string, urls: FrontierUrl[]) =>
      (await store.admit(crawlId, page, urls)).admitted;
    assert.deepEqual(await admit('page-1', [a, b]), [fresh(a), fresh(b)]);
    assert.deepEqual(
      await admit('page-1', [a, b]),
      [again(a), again(b)],
      'own earlier admissions, not counted again',
    );
    assert.deepEqual(await admit('page-2', [a, c]), [fresh(c)], "page-1's link is not page-2's");
    assert.deepEqual(await admit('page-1', [c, c, a]), [again(a)], 'duplicates in one call: once');

    // Once a link has had a fetch attempt its own page cannot admit it again either.
    await store.postpone(crawlId, 'example.com', a.key, 1, Date.now() + 1_000);
    assert.deepEqual(await admit('page-1', [a, b]), [again(b)]);
    // Nor once it is done.
    await store.finalize(crawlId, entry(b, 'fetched'));
    assert.deepEqual(await admit('page-1', [a, b]), []);
  });

  it('names the links another page admitted that need nothing more from it: done or fetchable, not held or carried', async () => {
    // A held link's result, and a carried link's line, go out with its admitting page's result: if
    // that page's invocation was cut off before its results went out, its refetch must admit the
    // link again, so no other page may cache the link as seen until it is done.
    const crawlId = newCrawl();
    const [fetchable, held, done, carried] = ['fetchable', 'held', 'done', 'carried'].map((p) =>
      frontierUrl(`https://example.com/${p}`),
    ) as [FrontierUrl, FrontierUrl, FrontierUrl, FrontierUrl];
    await store.admit(crawlId, 'page-1', [
      fetchable,
      { ...held, held: true },
      done,
      { ...carried, carried: true },
    ]);
    await store.finalize(crawlId, entry(done, 'fetched'));
    const other = await store.admit(crawlId, 'page-2', [fetchable, held, done, carried]);
    assert.deepEqual(other.admitted, []);
    assert.deepEqual(other.settled.sort(), [done.key, fetchable.key].sort());
    const own = await store.admit(crawlId, 'page-1', [fetchable, { ...held, held: true }]);
    assert.deepEqual(own.admitted.map((url) => url.key).sort(), [fetchable.key, held.key].sort());
    assert.deepEqual(own.settled, []);
  });

  it('re-admits through the conditional write too when the read misses an item (eventual consistency)', async () => {
    // A store whose BatchGetItem finds nothing: every candidate goes to the conditional write.
    const blind = Object.create(dynamodb) as DynamoDBClient;
    blind.send = ((command: Parameters<DynamoDBClient['send']>[0]) => {
      if (command.constructor.name === 'BatchGetItemCommand') return Promise.resolve({ Responses: {} });
      return dynamodb.send(command as GetItemCommand);
    }) as DynamoDBClient['send'];
    const missing = createFrontierStore(blind, TABLE);
    const crawlId = newCrawl();
    const a = frontierUrl('https://example.com/a', 2, { redirects: 1 });
    const b = frontierUrl('https://example.com/b', 1, { held: true });
    assert.deepEqual(
      (await missing.admit(crawlId, 'page-1', [a, b])).admitted.map((url) => url.fresh),
      [true, true],
    );
    assert.deepEqual(
      (await missing.admit(crawlId, 'page-1', [a, b])).admitted.map((url) => url.fresh),
      [false, false],
    );
    assert.deepEqual((await missing.admit(crawlId, 'page-2', [a, b])).admitted, []);
    const item = await urlItem(crawlId, a);
    assert.deepEqual(
      { st: item?.st?.S, depth: item?.depth?.N, redirects: item?.redirects?.N, parent: item?.parent?.S },
      { st: 'new', depth: '2', redirects: '1', parent: 'page-1' },
    );
    // A held URL promoted by the page budget stays new when its page admits it again held.
    await store.promote(crawlId, [b]);
    assert.deepEqual(
      (await missing.admit(crawlId, 'page-1', [b])).admitted.map((url) => url.fresh),
      [false],
    );
    assert.equal((await urlItem(crawlId, b))?.st?.S, 'new');
  });

  it('admits a held candidate (skipped, or awaiting the page budget) as st = held; promote makes it new', async () => {
    const crawlId = newCrawl();
    const skipped = frontierUrl('https://out.example/x', 3, { held: true });
    const budgeted = frontierUrl('https://in.example/y', 1, { held: true });
    const moved = frontierUrl('https://in.example/z', 1, { redirects: 2 });
    assert.deepEqual((await store.admit(crawlId, 'page-1', [skipped, budgeted, moved])).admitted, [
      { ...skipped, fresh: true },
      { ...budgeted, fresh: true },
      { ...moved, fresh: true },
    ]);
    assert.equal((await urlItem(crawlId, skipped))?.st?.S, 'held');
    assert.equal((await urlItem(crawlId, budgeted))?.st?.S, 'held');
    const stored = await urlItem(crawlId, moved);
    assert.equal(stored?.st?.S, 'new');
    assert.equal(stored?.redirects?.N, '2');

    // Its page's retry admits it again, held or not, and leaves the item as it is.
    assert.deepEqual(
      (await store.admit(crawlId, 'page-1', [skipped, { ...budgeted, held: false }])).admitted,
      [
        { ...skipped, fresh: false },
        { ...budgeted, held: false, fresh: false },
      ],
    );
    assert.equal((await urlItem(crawlId, budgeted))?.st?.S, 'held');
    assert.deepEqual(
      await store.admit(crawlId, 'page-2', [skipped, budgeted]),
      { admitted: [], settled: [] },
      "another page's, held",
    );

    // Promotion: held → new, once; a new, done or unknown URL is left alone (never created).
    const done = frontierUrl('https://in.example/done', 1, { held: true });
    const unknown = frontierUrl('https://in.example/unknown');
    await store.admit(crawlId, 'page-1', [done]);
    await store.finalize(crawlId, entry(done, 'skipped'));
    await store.promote(crawlId, [budgeted, budgeted, moved, done, unknown]);
    assert.equal((await urlItem(crawlId, budgeted))?.st?.S, 'new');
    assert.equal((await urlItem(crawlId, moved))?.st?.S, 'new');
    assert.equal((await urlItem(crawlId, done))?.st?.S, 'done');
    assert.equal(await urlItem(crawlId, unknown), undefined);
    assert.equal((await urlItem(crawlId, skipped))?.st?.S, 'held');
    await store.promote(crawlId, []);
  });

  it('keeps one URL item per URL: the same path on two hosts is two URLs, each in its partition', async () => {
    const crawlId = newCrawl();
    const onA = frontierUrl('https://a.example/same');
    const onB = frontierUrl('https://b.example/same');
    assert.equal((await store.admit(crawlId, 'p1', [onA, onB])).admitted.length, 2);
    assert.equal((await store.admit(crawlId, 'p2', [onB, onA])).admitted.length, 0, 'both known');
    assert.deepEqual(
      (await allUrls(store, crawlId, 'a.example')).map((url) => url.key),
      [onA.key],
    );
    assert.deepEqual(
      (await allUrls(store, crawlId, 'b.example')).map((url) => url.key),
      [onB.key],
    );
    assert.equal(await urlItem(crawlId, onA, 'b.example'), undefined);
  });

  it('propagates errors other than a failed condition', async () => {
    const broken = createFrontierStore(dynamodb, 'NoSuchTable');
    await assert.rejects(
      broken.admit(newCrawl(), 'p', [frontierUrl('https://example.com/x')]),
      (err: Error) => err.name === 'ResourceNotFoundException',
    );
    await assert.rejects(
      broken.promote(newCrawl(), [frontierUrl('https://example.com/x')]),
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

describe("a host's URLs", () => {
  it('urls() reads every item of the host, and only its, with all their fields', async () => {
    const crawlId = newCrawl();
    const fresh = frontierUrl('https://h.example/new', 2, { redirects: 1 });
    const held = frontierUrl('https://h.example/held', 4, { held: true });
    const retry = frontierUrl('https://h.example/retry', 1);
    const done = frontierUrl('https://h.example/done', 1);
    await store.admit(crawlId, 'page-1', [fresh, held, retry, done]);
    await store.admit(crawlId, 'page-1', [frontierUrl('https://other.example/new')]);
    await store.admit(newCrawl(), 'page-1', [frontierUrl('https://h.example/other-crawl')]);
    await store.postpone(crawlId, 'h.example', retry.key, 2, 1_700_000_000_000);
    await store.finalize(
      crawlId,
      entry(done, 'fetched', { bytes: 1234, requests: 1, part: 'results/c/p1.jsonl.gz' }),
    );

    const urls = await allUrls(store, crawlId, 'h.example');
    const byKey = new Map(urls.map((url) => [url.key, url]));
    assert.equal(urls.length, 4);
    assert.deepEqual(byKey.get(fresh.key), {
      key: fresh.key,
      url: fresh.url,
      depth: 2,
      st: 'new',
      parent: 'page-1',
      redirects: 1,
    });
    assert.deepEqual(byKey.get(held.key), {
      key: held.key,
      url: held.url,
      depth: 4,
      st: 'held',
      parent: 'page-1',
    });
    assert.deepEqual(byKey.get(retry.key), {
      key: retry.key,
      url: retry.url,
      depth: 1,
      st: 'new',
      parent: 'page-1',
      attempts: 2,
      retryAt: 1_700_000_000_000,
    });
    assert.deepEqual(byKey.get(done.key), {
      key: done.key,
      url: done.url,
      depth: 1,
      st: 'done',
      parent: 'page-1',
      outcome: 'fetched',
      bytes: 1234,
      requests: 1,
      part: 'results/c/p1.jsonl.gz',
    });
    assert.deepEqual(await allUrls(store, crawlId, 'nobody.example'), []);
  });

  it('urls() reads every item across Query pages', async () => {
    const crawlId = newCrawl();
    // Long URLs make the items big enough that the Query needs several 1 MB pages.
    const urls = Array.from({ length: 700 }, (_, i) =>
      frontierUrl(`https://example.com/${'x'.repeat(2000)}/${i}`),
    );
    await store.admit(crawlId, 'seed', urls);
    const firstPage = await dynamodb.send(
      new QueryCommand({
        TableName: TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: `URLS#${crawlId}#example.com` } },
      }),
    );
    assert.ok(firstPage.LastEvaluatedKey, 'the items do not fit one Query page');
    const read = await allUrls(store, crawlId, 'example.com');
    assert.equal(read.length, 700);
    assert.deepEqual(new Set(read.map((url) => url.key)), new Set(urls.map((url) => url.key)));
  });

  it('postpone records attempts and retryAt on an item not done; finalize clears retryAt', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/flaky');
    await store.admit(crawlId, 'seed', [url]);
    const t0 = Date.now();
    await store.postpone(crawlId, 'example.com', url.key, 1, t0 + 1_000);
    await store.postpone(crawlId, 'example.com', url.key, 2, t0 + 3_000);
    let item = await urlItem(crawlId, url);
    assert.deepEqual(
      { st: item?.st?.S, att: item?.att?.N, retryAt: item?.retryAt?.N },
      { st: 'new', att: '2', retryAt: String(t0 + 3_000) },
    );
    await store.finalize(crawlId, entry(url, 'failed', { requests: 1 }));
    item = await urlItem(crawlId, url);
    assert.deepEqual(
      { st: item?.st?.S, att: item?.att?.N, retryAt: item?.retryAt },
      { st: 'done', att: '2', retryAt: undefined },
    );
    // A done URL is not postponed, and an unknown one is not created.
    await store.postpone(crawlId, 'example.com', url.key, 3, t0 + 9_000);
    assert.deepEqual(await urlItem(crawlId, url), item);
    const unknown = frontierUrl('https://example.com/unknown');
    await store.postpone(crawlId, 'example.com', unknown.key, 1, t0);
    assert.equal(await urlItem(crawlId, unknown), undefined);
  });
});

describe('finalize and counters', () => {
  it('lets exactly one of 10 different results win', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/dup');
    await store.admit(crawlId, 'seed', [url]);
    await store.postpone(crawlId, 'example.com', url.key, 1, Date.now());
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
    const item = await urlItem(crawlId, url);
    assert.equal(item?.st?.S, 'done');
    assert.equal(item?.outcome?.S, 'fetched');
    assert.equal(item?.rid?.S, winner.rid, 'the winner is the result recorded');
    assert.equal(item?.retryAt, undefined);
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
    const item = await urlItem(crawlId, url);
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
        parent: item?.parent?.S,
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
        parent: 'seed',
      },
    );
  });

  it('finalizes a held URL (its skipped result)', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://out.example/skipped', 5, { held: true });
    await store.admit(crawlId, 'page-1', [url]);
    const skipped = entry(url, 'skipped');
    assert.deepEqual(await store.finalize(crawlId, skipped), {
      won: true,
      repeat: false,
      created: false,
      part: skipped.part,
    });
    const [done] = await allUrls(store, crawlId, 'out.example');
    assert.deepEqual(
      { st: done?.st, outcome: done?.outcome, depth: done?.depth },
      { st: 'done', outcome: 'skipped', depth: 5 },
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
    assert.equal((await urlItem(crawlId, url))?.part?.S, first.part, 'kept');
    // Its first part was never written: the aggregate function points the URL at its own.
    await store.repoint(crawlId, url.url, url.key, first.rid, again.part);
    const item = await urlItem(crawlId, url);
    assert.equal(item?.part?.S, 'results/c/redelivery.jsonl.gz');
    assert.equal(item?.rid?.S, first.rid);
    assert.equal(item?.bytes?.N, '10');
    const other = entry(url, 'fetched', { part: 'results/c/other.jsonl.gz' });
    await assert.rejects(
      store.repoint(crawlId, url.url, url.key, other.rid, other.part),
      (err: Error) => err.name === 'ConditionalCheckFailedException',
      'only the winner repoints',
    );
    assert.equal((await urlItem(crawlId, url))?.part?.S, 'results/c/redelivery.jsonl.gz');
  });

  it('a different result for a done URL loses and changes nothing on the item', async () => {
    const crawlId = newCrawl();
    const url = frontierUrl('https://example.com/taken');
    await store.admit(crawlId, 'seed', [url]);
    const first = entry(url, 'fetched', { bytes: 10, requests: 1, part: 'results/c/first.jsonl.gz' });
    await store.finalize(crawlId, first);
    const before = await urlItem(crawlId, url);
    // A second fetch of the URL (another result id), even with the same outcome and part.
    const other = entry(url, 'failed', { bytes: 99, requests: 1, part: 'results/c/second.jsonl.gz' });
    assert.deepEqual(await store.finalize(crawlId, other), { won: false, repeat: false, created: false });
    assert.deepEqual(await store.finalize(crawlId, { ...other, outcome: 'fetched', part: first.part }), {
      won: false,
      repeat: false,
      created: false,
    });
    assert.deepEqual(await urlItem(crawlId, url), before);
  });

  it('reports a result for a URL with no item as created (never counted as queued), at depth 0', async () => {
    const crawlId = newCrawl();
    // Not a URL at all (an invalid task): kept under the pseudo-host.
    const invalid = frontierUrl('not a url at all');
    assert.equal(frontierHost(invalid.url), NO_HOST);
    const result = entry(invalid, 'invalid');
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
    assert.deepEqual(await store.finalize(crawlId, entry(invalid, 'invalid')), {
      won: false,
      repeat: false,
      created: false,
    });
    const item = await urlItem(crawlId, invalid, NO_HOST);
    assert.equal(item?.pk?.S, `URLS#${crawlId}#-`);
    assert.equal(item?.url?.S, invalid.url);
    assert.equal(item?.depth?.N, '0');
    assert.ok(item?.expiresAt?.N);

    // A URL never admitted (a bare URL task's result): in its host's partition.
    const bare = frontierUrl('https://bare.example/x');
    assert.equal((await store.finalize(crawlId, entry(bare, 'blocked'))).created, true);
    assert.deepEqual(
      (await allUrls(store, crawlId, 'bare.example')).map(({ url, depth, st, outcome }) => ({
        url,
        depth,
        st,
        outcome,
      })),
      [{ url: bare.url, depth: 0, st: 'done', outcome: 'blocked' }],
    );
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
  it('is not confirmed while a host is active, and is, exactly once, with the DONE sums once all drained', async () => {
    const crawlId = newCrawl();
    const urls = [
      frontierUrl('https://a.example/0'),
      frontierUrl('https://a.example/1'),
      frontierUrl('https://b.example/0'),
      frontierUrl('https://b.example/1', 1, { held: true }),
      frontierUrl('https://c.example/0'),
    ];
    await admitAndWake(crawlId, urls);
    await store.addQueued(crawlId, urls.length);
    const results = [
      entry(urls[0]!, 'fetched', { bytes: 100, requests: 1, part: 'results/c/p1.jsonl.gz' }),
      entry(urls[1]!, 'fetched', { bytes: 250, requests: 1, part: 'results/c/p1.jsonl.gz' }),
      entry(urls[2]!, 'failed', { bytes: 7, requests: 1, part: 'results/c/p2.jsonl.gz' }),
      entry(urls[3]!, 'skipped', { part: 'results/c/p2.jsonl.gz' }),
      entry(urls[4]!, 'disallowed', { part: 'results/c/p3.jsonl.gz' }),
    ];
    for (const result of results) await store.finalize(crawlId, result);
    // The ADDs drift from the URL items: a lost ADD, and an SDK retry that counted a batch twice.
    await store.addCounters(crawlId, {
      queued: 2,
      done: 4,
      bytes: 714,
      requests: 6,
      byOutcome: { fetched: 3, skipped: 1 },
    });
    const drifted = await store.readCounters(crawlId);

    // Every URL is done, but no host is drained yet; then two of three.
    let asked = 0;
    const counting = async () => {
      asked++;
      return true;
    };
    assert.deepEqual(await store.confirmCompletion(crawlId, new Date(), counting), {
      completedNow: false,
      counters: drifted,
    });
    assert.equal(await drainHost(crawlId, 'a.example'), true);
    assert.equal(await drainHost(crawlId, 'b.example'), true);
    assert.deepEqual(await store.confirmCompletion(crawlId, new Date(), counting), {
      completedNow: false,
      counters: drifted,
    });
    assert.equal(asked, 0, 'the parts are not listed while a host is active');
    assert.deepEqual(await store.readCounters(crawlId), drifted, 'nothing written');

    assert.equal(await drainHost(crawlId, 'c.example'), true);
    const endedAt = new Date('2030-01-02T03:04:05.000Z');
    const parts: string[][] = [];
    const confirmations = await Promise.all(
      Array.from({ length: 10 }, () =>
        store.confirmCompletion(crawlId, endedAt, async (written) => {
          parts.push([...written].sort());
          return true;
        }),
      ),
    );
    assert.equal(confirmations.filter((c) => c.completedNow).length, 1);
    assert.deepEqual(
      parts[0],
      ['results/c/p1.jsonl.gz', 'results/c/p2.jsonl.gz', 'results/c/p3.jsonl.gz'],
      'the parts every drained host names',
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
        byOutcome: { fetched: 2, failed: 1, skipped: 1, disallowed: 1 },
        state: 'complete',
        startedAt: undefined,
        endedAt: endedAt.toISOString(),
      },
      "every number is the drained hosts' tally, whatever the ADDs said",
    );
    assert.equal(counters?.startedAt, drifted?.startedAt, 'startedAt kept');
    assert.deepEqual(confirmations.find((c) => c.completedNow)?.counters, counters);
    for (const lost of confirmations.filter((c) => !c.completedNow))
      assert.deepEqual(lost.counters, counters);
    assert.equal(
      (await store.confirmCompletion(crawlId, new Date(), partsWritten)).completedNow,
      false,
      'already complete',
    );
    assert.deepEqual(await store.readCounters(crawlId), counters, 'a complete crawl is not touched again');
  });

  it('lets exactly one of two concurrent confirmers complete the crawl', async () => {
    for (let round = 0; round < 5; round++) {
      const crawlId = newCrawl();
      const url = frontierUrl(`https://race.example/${round}`);
      await admitAndWake(crawlId, [url]);
      await store.finalize(crawlId, entry(url, 'fetched', { bytes: 3, requests: 1 }));
      assert.equal(await drainHost(crawlId, 'race.example'), true);
      const [one, two] = await Promise.all([
        store.confirmCompletion(crawlId, new Date(), partsWritten),
        store.confirmCompletion(crawlId, new Date(), partsWritten),
      ]);
      assert.deepEqual([one.completedNow, two.completedNow].filter(Boolean), [true], `round ${round}`);
      assert.deepEqual(one.counters, two.counters);
      assert.deepEqual(
        { state: one.counters.state, queued: one.counters.queued, done: one.counters.done },
        { state: 'complete', queued: 1, done: 1 },
      );
    }
  });

  it('is not confirmed while an index part a drained host names is missing', async () => {
    const crawlId = newCrawl();
    const urls = [frontierUrl('https://m.example/0'), frontierUrl('https://n.example/0')];
    await admitAndWake(crawlId, urls);
    await store.finalize(
      crawlId,
      entry(urls[0]!, 'fetched', { bytes: 5, requests: 1, part: 'results/c/written.jsonl.gz' }),
    );
    await store.finalize(
      crawlId,
      entry(urls[1]!, 'fetched', { bytes: 6, requests: 1, part: 'results/c/late.jsonl.gz' }),
    );
    await drainHost(crawlId, 'm.example');
    await drainHost(crawlId, 'n.example');
    await store.addCounters(crawlId, { done: 1, bytes: 5, requests: 1, byOutcome: { fetched: 1 } });
    const before = await store.readCounters(crawlId);
    const written = new Set(['results/c/written.jsonl.gz']);
    const onlyWritten = async (parts: ReadonlySet<string>) => [...parts].every((part) => written.has(part));

    const missing = await store.confirmCompletion(crawlId, new Date(), onlyWritten);
    assert.deepEqual(missing, { completedNow: false, counters: before });
    assert.deepEqual(await store.readCounters(crawlId), before, 'nothing written');

    // The aggregate invocation still writing that part finishes it.
    written.add('results/c/late.jsonl.gz');
    const done = await store.confirmCompletion(crawlId, new Date(), onlyWritten);
    assert.equal(done.completedNow, true);
    assert.deepEqual(
      {
        state: done.counters.state,
        queued: done.counters.queued,
        done: done.counters.done,
        bytes: done.counters.bytes,
        requests: done.counters.requests,
        byOutcome: done.counters.byOutcome,
      },
      { state: 'complete', queued: 2, done: 2, bytes: 11, requests: 2, byOutcome: { fetched: 2 } },
    );
  });

  it('is not confirmed while a drained host is woken again by a new admission', async () => {
    const crawlId = newCrawl();
    const first = frontierUrl('https://w.example/first');
    await admitAndWake(crawlId, [first]);
    await store.finalize(crawlId, entry(first, 'fetched'));
    assert.equal(await drainHost(crawlId, 'w.example'), true);
    // A cross-link admitted right after the drain: the host is active again.
    const late = frontierUrl('https://w.example/late');
    await admitAndWake(crawlId, [late]);
    assert.equal((await store.confirmCompletion(crawlId, new Date(), partsWritten)).completedNow, false);
    await store.finalize(crawlId, entry(late, 'fetched'));
    assert.equal(await drainHost(crawlId, 'w.example'), true);
    const done = await store.confirmCompletion(crawlId, new Date(), partsWritten);
    assert.equal(done.completedNow, true);
    assert.equal(done.counters.done, 2, 'the second drain tallies both URLs');
  });

  it('does not complete a crawl with no drained host, or a cancelled one', async () => {
    const empty = newCrawl();
    const nothing = await store.confirmCompletion(empty, new Date(), partsWritten);
    assert.equal(nothing.completedNow, false);
    assert.equal(nothing.counters.state, 'running');
    assert.equal(await store.readCounters(empty), undefined, 'nothing written');

    const cancelled = newCrawl();
    const url = frontierUrl('https://cancelled.example/');
    await admitAndWake(cancelled, [url]);
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
    await store.finalize(cancelled, entry(url, 'cancelled'));
    await drainHost(cancelled, 'cancelled.example');
    const result = await store.confirmCompletion(cancelled, new Date(), partsWritten);
    assert.equal(result.completedNow, false);
    assert.equal(result.counters.state, 'cancelled');
    assert.equal(result.counters.queued, 1, 'a cancelled crawl keeps its counters');
  });
});
