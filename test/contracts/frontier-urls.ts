/**
 * What link admission, task admission, host visits and the aggregate function rely on from the
 * frontier's URL items (FrontierAdmission, HostUrlStore, and finalize), run against the in-memory
 * fake (test/fakes/frontier-urls.ts) and the FrontierTable adapter on dynalite
 * (test/integration/port-contracts.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type {
  FinalizeEntry,
  FrontierAdmission,
  FrontierFinalizer,
  FrontierUrl,
  HostUrl,
  HostUrlStore,
} from '../../lambdas/core/crawl/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { allUrls } from '../fixtures/host-urls.ts';

export type FrontierUrlsUnderTest = FrontierAdmission & HostUrlStore & Pick<FrontierFinalizer, 'finalize'>;

const HOST = 'site.test';

function link(path: string, extra: Partial<FrontierUrl> = {}): FrontierUrl {
  const normalized = normalizeUrl(`https://${HOST}${path}`);
  assert.ok(normalized.ok);
  return { key: normalized.key, url: normalized.url, depth: 1, ...extra };
}

function entry(url: FrontierUrl, rid: string, part = 'results/c/part-1.jsonl.gz'): FinalizeEntry {
  return { key: url.key, url: url.url, outcome: 'fetched', bytes: 10, requests: 1, rid, part };
}

const byKey = (urls: readonly HostUrl[]) => new Map(urls.map((url) => [url.key, url]));

export function frontierUrlsContract(name: string, make: () => FrontierUrlsUnderTest): void {
  const crawl = () => `urls-${randomUUID().slice(0, 8)}`;

  describe(`FrontierAdmission + HostUrlStore contract: ${name}`, () => {
    it('a URL is admitted once: fresh to its first page; another page finds it settled, not admitted', async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/a');
      const first = await frontier.admit(crawlId, 'page-1', [a]);
      assert.deepEqual(first, { admitted: [{ ...a, fresh: true }], settled: [] });
      const other = await frontier.admit(crawlId, 'page-2', [a]);
      assert.deepEqual(other, { admitted: [], settled: [a.key] });
    });

    it("without the probe (a re-crawl's earlier URLs) a URL is still admitted once, and its capture is read back with its item", async () => {
      const frontier = make();
      const crawlId = crawl();
      const prior = {
        sha1: 'a'.repeat(40),
        uri: 'https://site.test/a',
        date: '2026-11-04T09:00:00.000Z',
        warc: { key: 'warc/c-0/2026-11-04/x.warc.gz', offset: 0, length: 900 },
        etag: '"v1"',
      };
      const a = { ...link('/a'), prior };
      const first = await frontier.admit(crawlId, 'prior#0', [a], { probe: false });
      assert.deepEqual(first, { admitted: [{ ...a, fresh: true }], settled: [] });
      assert.deepEqual(await frontier.admit(crawlId, 'prior#1', [a], { probe: false }), {
        admitted: [],
        settled: [],
      });
      assert.deepEqual(byKey(await allUrls(frontier, crawlId, HOST)).get(a.key)?.prior, prior);
      // Once done it is not asked again: its capture is not read with it.
      await frontier.finalize(crawlId, entry(a, 'r1'));
      assert.equal(byKey(await allUrls(frontier, crawlId, HOST)).get(a.key)?.prior, undefined);
    });

    it('of many concurrent pages admitting one URL, exactly one gets it fresh', async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/race');
      const all = await Promise.all(
        Array.from({ length: 6 }, (_, i) => frontier.admit(crawlId, `page-${i}`, [a])),
      );
      assert.equal(all.flatMap((admission) => admission.admitted.filter((url) => url.fresh)).length, 1);
    });

    it("a page's own earlier admission, not yet attempted, is admitted again, not fresh and unchanged; once attempted it is settled", async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/a');
      await frontier.admit(crawlId, 'page-1', [a]);
      const again = await frontier.admit(crawlId, 'page-1', [{ ...a, depth: 5 }]);
      assert.deepEqual(again, { admitted: [{ ...a, depth: 5, fresh: false }], settled: [] });
      assert.equal((await allUrls(frontier, crawlId, HOST))[0]?.depth, 1, 'the item is as first admitted');
      await frontier.postpone(crawlId, HOST, a.key, 1, 1_000);
      assert.deepEqual(await frontier.admit(crawlId, 'page-1', [a]), { admitted: [], settled: [a.key] });
    });

    it("held URLs are admitted held (another page's held URL is neither admitted nor settled); promote makes them fetchable", async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/a', { held: true });
      const b = link('/b', { held: true });
      const admitted = await frontier.admit(crawlId, 'page-1', [a, b]);
      assert.deepEqual(
        admitted.admitted.map((url) => url.fresh),
        [true, true],
      );
      assert.deepEqual(
        [...byKey(await allUrls(frontier, crawlId, HOST)).values()].map((url) => url.st),
        ['held', 'held'],
      );
      assert.deepEqual(await frontier.admit(crawlId, 'page-2', [a]), { admitted: [], settled: [] });
      await frontier.promote(crawlId, [a]);
      const urls = byKey(await allUrls(frontier, crawlId, HOST));
      assert.equal(urls.get(a.key)?.st, 'new');
      assert.equal(urls.get(b.key)?.st, 'held');
      assert.deepEqual(await frontier.admit(crawlId, 'page-2', [a]), { admitted: [], settled: [a.key] });
    });

    it('a carried link is created done, admitted again only to the page that carried it (as carried), neither admitted nor settled for another; no result wins it', async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/carried', { carried: true });
      const first = await frontier.admit(crawlId, 'page-1', [a]);
      assert.deepEqual(first, { admitted: [{ ...a, fresh: true }], settled: [] });
      assert.deepEqual(await allUrls(frontier, crawlId, HOST), [
        { key: a.key, url: a.url, depth: 1, st: 'done', parent: 'page-1', carried: true },
      ]);
      // Its page fetched again: carried again, whether it comes carried or (past the cap) held.
      const { carried: _carried, ...plain } = a;
      assert.deepEqual(await frontier.admit(crawlId, 'page-1', [a]), {
        admitted: [{ ...a, fresh: false }],
        settled: [],
      });
      assert.deepEqual(await frontier.admit(crawlId, 'page-1', [{ ...plain, held: true }]), {
        admitted: [{ ...plain, held: true, carried: true, fresh: false }],
        settled: [],
      });
      // Not settled for another page: its line goes out with page-1's result, so no other page may
      // cache it as seen (page-1's refetch in that container would skip it, and the line be lost).
      assert.deepEqual(await frontier.admit(crawlId, 'page-2', [a]), { admitted: [], settled: [] });
      assert.deepEqual(await frontier.admit(crawlId, 'page-2', [plain]), { admitted: [], settled: [] });
      assert.deepEqual(await frontier.finalize(crawlId, entry(a, 'r1')), {
        won: false,
        created: false,
        repeat: false,
      });
      // A page's own held admission met by a carried candidate stays held (its result is on its way).
      const b = link('/held', { held: true });
      await frontier.admit(crawlId, 'page-1', [b]);
      const { held: _held, ...bare } = b;
      assert.deepEqual(await frontier.admit(crawlId, 'page-1', [{ ...bare, carried: true }]), {
        admitted: [{ ...bare, fresh: false }],
        settled: [],
      });
      assert.equal(byKey(await allUrls(frontier, crawlId, HOST)).get(b.key)?.st, 'held');
    });

    it('a page admitting its carried link many times at once (an SDK repeat, a retried flush) gets it fresh once and carried again otherwise', async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/carried-race', { carried: true });
      const all = await Promise.all(Array.from({ length: 4 }, () => frontier.admit(crawlId, 'page-1', [a])));
      const admitted = all.flatMap((admission) => admission.admitted);
      assert.deepEqual(admitted.map((url) => [url.fresh, url.carried]).toSorted(), [
        [false, true],
        [false, true],
        [false, true],
        [true, true],
      ]);
    });

    it("finalize records on the page's item how many skipped links its winning result carries", async () => {
      const frontier = make();
      const crawlId = crawl();
      const page = link('/page');
      await frontier.admit(crawlId, 'seed', [page]);
      await frontier.finalize(crawlId, { ...entry(page, 'r1', 'p1'), kids: 3 });
      assert.equal((await allUrls(frontier, crawlId, HOST))[0]?.kids, 3);
      // Another result of the page loses, and its links with it.
      await frontier.finalize(crawlId, { ...entry(page, 'r2', 'p2'), kids: 5 });
      assert.equal((await allUrls(frontier, crawlId, HOST))[0]?.kids, 3);
    });

    it('duplicate keys in one admission are admitted once', async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/a');
      const admission = await frontier.admit(crawlId, 'page-1', [a, { ...a, depth: 3 }, a]);
      assert.deepEqual(admission, { admitted: [{ ...a, fresh: true }], settled: [] });
    });

    it("urls reads every item of the host's partition and no other host's, as admitted, with a retry's attempts and time", async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/a');
      const r = link('/r', { redirects: 2, depth: 0 });
      const elsewhere = { ...link('/e'), url: 'https://elsewhere.test/e' };
      await frontier.admit(crawlId, 'page-1', [a, r, elsewhere]);
      await frontier.postpone(crawlId, HOST, a.key, 2, 123_456);
      const urls = byKey(await allUrls(frontier, crawlId, HOST));
      assert.deepEqual([...urls.keys()].sort(), [a.key, r.key].sort());
      assert.deepEqual(urls.get(a.key), {
        key: a.key,
        url: a.url,
        depth: 1,
        st: 'new',
        parent: 'page-1',
        attempts: 2,
        retryAt: 123_456,
      });
      assert.deepEqual(urls.get(r.key), {
        key: r.key,
        url: r.url,
        depth: 0,
        st: 'new',
        parent: 'page-1',
        redirects: 2,
      });
      assert.equal((await allUrls(frontier, crawlId, 'elsewhere.test')).length, 1);
      assert.deepEqual(await allUrls(frontier, crawlId, 'nobody.test'), []);
    });

    it('page reads the partition in key order from after a key, at most `limit` items, and names where to go on until its end', async () => {
      const frontier = make();
      const crawlId = crawl();
      const links = Array.from({ length: 5 }, (_, i) => link(`/page/${i}`));
      await frontier.admit(crawlId, 'page-1', links);
      const keys = links.map((url) => url.key).sort();
      const first = await frontier.page(crawlId, HOST, undefined, 2);
      assert.deepEqual(
        first.urls.map((url) => url.key),
        keys.slice(0, 2),
      );
      assert.equal(first.next, keys[1]);
      const rest = await frontier.page(crawlId, HOST, first.next, 10);
      assert.deepEqual(
        rest.urls.map((url) => url.key),
        keys.slice(2),
      );
      assert.equal(rest.next, undefined, 'the end of the partition');
      // After a key that is not an item's: from the next item on.
      const fromBetween = await frontier.page(crawlId, HOST, `${keys[1]}0`, 1);
      assert.deepEqual(
        fromBetween.urls.map((url) => url.key),
        [keys[2]],
      );
      assert.deepEqual(await frontier.page(crawlId, HOST, keys[4], 3), { urls: [] });
      assert.deepEqual(await frontier.page(crawlId, 'nobody.test', undefined, 3), { urls: [] });
    });

    it('get reads the items of the keys that exist, as page reads them', async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/a');
      const b = link('/b');
      await frontier.admit(crawlId, 'page-1', [a, b]);
      await frontier.finalize(crawlId, entry(a, 'r1', 'p1'));
      const got = byKey(await frontier.get(crawlId, HOST, [a.key, link('/never').key, b.key]));
      assert.deepEqual([...got.keys()].sort(), [a.key, b.key].sort());
      assert.deepEqual(got, byKey(await allUrls(frontier, crawlId, HOST)));
      assert.equal(got.get(a.key)?.st, 'done');
      const many = Array.from({ length: 150 }, (_, i) => link(`/many/${i}`));
      await frontier.admit(crawlId, 'page-2', many);
      const all = await frontier.get(
        crawlId,
        HOST,
        many.map((url) => url.key),
      );
      assert.equal(all.length, 150, 'more keys than one BatchGetItem takes');
    });

    it('the first result finalizes a URL; its repeat wins again with the part it first named; another result loses; a done URL is settled, never postponed nor promoted', async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/a');
      await frontier.admit(crawlId, 'page-1', [a]);
      await frontier.postpone(crawlId, HOST, a.key, 1, 99);
      assert.deepEqual(await frontier.finalize(crawlId, entry(a, 'r1', 'p1')), {
        won: true,
        created: false,
        repeat: false,
        part: 'p1',
      });
      assert.deepEqual(await frontier.finalize(crawlId, entry(a, 'r1', 'p2')), {
        won: true,
        created: false,
        repeat: true,
        part: 'p1',
      });
      assert.deepEqual(await frontier.finalize(crawlId, entry(a, 'r2', 'p3')), {
        won: false,
        created: false,
        repeat: false,
      });
      await frontier.postpone(crawlId, HOST, a.key, 2, 1_000);
      await frontier.promote(crawlId, [a]);
      const [done] = await allUrls(frontier, crawlId, HOST);
      assert.deepEqual(done, {
        key: a.key,
        url: a.url,
        depth: 1,
        st: 'done',
        parent: 'page-1',
        attempts: 1,
        outcome: 'fetched',
        bytes: 10,
        requests: 1,
        part: 'p1',
      });
      assert.deepEqual(await frontier.admit(crawlId, 'page-1', [a]), { admitted: [], settled: [a.key] });
    });

    it('a result for a URL never admitted creates its item, done; a retry of a URL never admitted writes nothing', async () => {
      const frontier = make();
      const crawlId = crawl();
      const a = link('/never');
      assert.deepEqual(await frontier.finalize(crawlId, entry(a, 'r1')), {
        won: true,
        created: true,
        repeat: false,
        part: 'results/c/part-1.jsonl.gz',
      });
      const [item] = await allUrls(frontier, crawlId, HOST);
      assert.equal(item?.st, 'done');
      assert.equal(item?.depth, 0);
      await frontier.postpone(crawlId, HOST, link('/other').key, 1, 5);
      assert.equal((await allUrls(frontier, crawlId, HOST)).length, 1);
    });

    it('page budget: concurrent reservations never grant more than maxPages in all', async () => {
      const frontier = make();
      const crawlId = crawl();
      const grants = await Promise.all(
        Array.from({ length: 5 }, () => frontier.reservePages(crawlId, 3, 10)),
      );
      assert.equal(
        grants.reduce((sum, grant) => sum + grant, 0),
        10,
        `grants: ${grants.join()}`,
      );
      assert.equal(await frontier.reservePages(crawlId, 1, 10), 0);
      assert.equal(await frontier.reservePages(crawl(), 4, 3), 3, 'at most what is left');
    });
  });
}
