import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LruSet } from '../../lambdas/core/base/index.ts';
import { type FrontierUrl, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { admitLinks } from '../../lambdas/core/frontier/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../fakes/host-visits.ts';

const config = parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/'] });

function link(url: string): FrontierUrl {
  const normalized = normalizeUrl(url);
  assert.ok(normalized.ok);
  return { key: normalized.key, url: normalized.url, depth: 1 };
}

function keyOf(url: string): string {
  const normalized = normalizeUrl(url);
  assert.ok(normalized.ok);
  return normalized.key;
}

/** A frontier (the URL items fake) that records the candidates each admission asked about. */
function frontier(asked: FrontierUrl[][] = []): MemoryFrontierUrls {
  const urls = new MemoryFrontierUrls();
  const admit = urls.admit.bind(urls);
  urls.admit = async (crawlId, parentKey, candidates) => {
    asked.push([...candidates]);
    return admit(crawlId, parentKey, candidates);
  };
  return urls;
}

const urlsOf = (asked: FrontierUrl[][]) => asked.map((candidates) => candidates.map((c) => c.url));

const page = (links: string[], relink = false) => ({
  config,
  parentKey: 'p',
  parentUrl: 'https://site.test/',
  depth: 0,
  links: links.map((url) => ({ url, nofollow: false })),
  relink,
});

describe('admitLinks', () => {
  it('skips links this container has seen without asking the frontier', async () => {
    const seen = new LruSet(100);
    seen.add(`c1:${keyOf('https://site.test/a')}`);
    const asked: FrontierUrl[][] = [];
    const hosts = new MemoryHostVisits();
    const out = await admitLinks([page(['https://site.test/a', 'https://site.test/b'])], {
      frontier: frontier(asked),
      hosts,
      seen,
      now: new Date(),
    });
    assert.deepEqual(urlsOf(asked), [['https://site.test/b']]);
    assert.deepEqual(
      out.visits.map((v) => v.visit),
      [
        {
          v: 1,
          kind: 'visit',
          crawlId: 'c1',
          host: 'site.test',
          ticket: hosts.host('c1', 'site.test')?.visitBy,
        },
      ],
    );
    assert.deepEqual(out.seenKeys, [`c1:${keyOf('https://site.test/b')}`]);
  });

  it("caches as seen the links it admits and another page's settled ones, never another page's held or carried ones", async () => {
    // A held link waits for its own page's results, a carried one for its page's result line: if
    // that page's invocation was cut off, its refetch in this container must not skip the link as
    // seen, or its skipped result (line) is never sent. A fault-suite run (kills) lost four so.
    const links = [
      'https://site.test/mine',
      'https://site.test/settled',
      'https://site.test/held',
      'https://site.test/carried',
    ];
    const urls = frontier();
    // Another page admitted /settled (fetchable), /held (skipped, its result on its way) and
    // /carried (skipped, its line in that page's result).
    await urls.admit('c1', 'other-page', [
      link(links[1]!),
      { ...link(links[2]!), held: true },
      { ...link(links[3]!), carried: true },
    ]);
    const out = await admitLinks([page(links)], {
      frontier: urls,
      hosts: new MemoryHostVisits(),
      seen: new LruSet(100),
      now: new Date(),
    });
    assert.deepEqual(
      out.seenKeys.toSorted(),
      [`c1:${keyOf(links[0]!)}`, `c1:${keyOf(links[1]!)}`].toSorted(),
    );
  });

  it('a page whose earlier fetch did not finish asks for every link again: the cache may hold its unsent ones', async () => {
    // /a was admitted by this page's failed batch, then seen here on another page: only a relink finds it.
    const seen = new LruSet(100);
    seen.add(`c1:${keyOf('https://site.test/a')}`);
    const asked: FrontierUrl[][] = [];
    const out = await admitLinks([page(['https://site.test/a'], true)], {
      frontier: frontier(asked),
      hosts: new MemoryHostVisits(),
      seen,
      now: new Date(),
    });
    assert.deepEqual(urlsOf(asked), [['https://site.test/a']]);
    assert.equal(out.visits.length, 1);
  });

  it('wakes each host that got URLs once, and sends a visit only to a host that has none live or due', async () => {
    const wakeable = new MemoryHostVisits();
    const urls = frontier();
    const links = ['https://site.test/a', 'https://site.test/b', 'https://other.test/x'];
    const scoped = {
      ...page(links),
      config: parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/', 'https://other.test/'] }),
    };
    const first = await admitLinks([scoped], {
      frontier: urls,
      hosts: wakeable,
      seen: new LruSet(10),
      now: new Date(),
    });
    assert.deepEqual(
      ['other.test', 'site.test'].map((host) => wakeable.host('c1', host)?.wake),
      [1, 1],
      'each host woken once',
    );
    assert.deepEqual(first.visits.map((v) => v.visit.host).toSorted(), ['other.test', 'site.test']);
    const again = await admitLinks([page(['https://site.test/c'])], {
      frontier: urls,
      hosts: wakeable,
      seen: new LruSet(10),
      now: new Date(),
    });
    assert.deepEqual(again.visits, [], 'site.test has a visit already');
  });

  it('gives back the claims of the hosts it woke when another wake fails, so the repeat can wake them again', async () => {
    const links = ['https://site.test/a', 'https://other.test/x'];
    const scoped = {
      ...page(links),
      config: parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/', 'https://other.test/'] }),
    };
    const flaky = new MemoryHostVisits();
    flaky.faults.fail('wake', {
      times: Number.POSITIVE_INFINITY,
      when: ([, host]) => host === 'other.test',
      error: () => new Error('ProvisionedThroughputExceededException'),
    });
    const deps = { frontier: frontier(), hosts: flaky, seen: new LruSet(10), now: new Date() };
    await assert.rejects(admitLinks([scoped], deps), /ProvisionedThroughput/);
    assert.equal(flaky.host('c1', 'site.test')?.visitBy, undefined, "site.test's claim was given back");
    assert.ok(await flaky.wake('c1', 'site.test', Date.now()), 'the repeat wakes it and sends its visit');
  });

  it('admits what will not be fetched as held, with its skipped result; the budget promotes only what it grants', async () => {
    const asked: FrontierUrl[][] = [];
    const urls = frontier(asked);
    const budgeted = parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/'], maxPages: 1 });
    const links = ['https://site.test/a', 'https://site.test/b', 'https://elsewhere.test/'];
    const out = await admitLinks([{ ...page(links), config: budgeted }], {
      frontier: urls,
      hosts: new MemoryHostVisits(),
      seen: new LruSet(10),
      now: new Date(),
    });
    assert.ok(
      asked.flat().every((url) => url.held === true),
      'a budgeted crawl admits everything held',
    );
    assert.deepEqual(
      urls
        .all('c1')
        .filter((url) => url.st === 'new')
        .map((url) => url.url),
      ['https://site.test/a'],
      'only what the budget granted is fetchable',
    );
    assert.deepEqual(out.results.map((r) => [r.url, r.code]).toSorted(), [
      ['https://elsewhere.test/', 'scope'],
      ['https://site.test/b', 'limit'],
    ]);
  });
});
