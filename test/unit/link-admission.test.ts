import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCrawlConfig } from '../../lambdas/core/crawl-config.ts';
import { admitLinks } from '../../lambdas/core/link-admission.ts';
import { LruSet } from '../../lambdas/core/lru.ts';
import type { Admission, FrontierAdmission, FrontierUrl, HostVisits } from '../../lambdas/core/ports.ts';
import { normalizeUrl } from '../../lambdas/core/url-normalize.ts';

const config = parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/'] });

function keyOf(url: string): string {
  const normalized = normalizeUrl(url);
  assert.ok(normalized.ok);
  return normalized.key;
}

/**
 * A frontier that admits, as this page's, the URLs in `mine`; every other URL belongs to another page,
 * and those in `settled` need nothing more from any page (done, or fetchable).
 */
function frontier(
  mine: readonly string[],
  asked: string[][] = [],
  admittedAs: FrontierUrl[] = [],
  promoted: string[] = [],
  settled: readonly string[] = [],
): FrontierAdmission {
  return {
    admit: async (_crawlId, _parent, candidates: readonly FrontierUrl[]): Promise<Admission> => {
      asked.push(candidates.map((c) => c.url));
      admittedAs.push(...candidates);
      return {
        admitted: candidates.filter((c) => mine.includes(c.url)).map((c) => ({ ...c, fresh: true })),
        settled: candidates.filter((c) => settled.includes(c.url)).map((c) => c.key),
      };
    },
    reservePages: async (_crawlId, wanted, maxPages) => Math.min(wanted, maxPages),
    promote: async (_crawlId, urls) => {
      promoted.push(...urls.map((url) => url.url));
    },
    addQueued: async () => {},
  };
}

/** Hosts that need a visit the first time they are woken (no visit live or due yet). */
function hosts(woken: string[] = []): HostVisits {
  const active = new Set<string>();
  return {
    wake: async (_crawlId, host) => {
      woken.push(host);
      if (active.has(host)) return undefined;
      active.add(host);
      return `ticket-${host}`;
    },
    unwake: async () => {},
    acquire: async () => ({ busy: 'idle' }),
    checkpoint: async () => {},
    release: async () => {},
    drain: async () => true,
    anyActive: async () => false,
    doneTotals: async () => ({ total: 0, byOutcome: {}, bytes: 0, requests: 0, parts: [], hosts: 0 }),
  };
}

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
    const asked: string[][] = [];
    const out = await admitLinks([page(['https://site.test/a', 'https://site.test/b'])], {
      frontier: frontier(['https://site.test/b'], asked),
      hosts: hosts(),
      seen,
      now: new Date(),
    });
    assert.deepEqual(asked, [['https://site.test/b']]);
    assert.deepEqual(
      out.visits.map((v) => v.visit),
      [{ v: 1, kind: 'visit', crawlId: 'c1', host: 'site.test', ticket: 'ticket-site.test' }],
    );
    assert.deepEqual(out.seenKeys, [`c1:${keyOf('https://site.test/b')}`]);
  });

  it("caches as seen the links it admits and another page's settled ones, never another page's held ones", async () => {
    // A held link waits for its own page's results: if that page's invocation was cut off, its
    // refetch in this container must not skip the link as seen, or its skipped result is never sent.
    const links = ['https://site.test/mine', 'https://site.test/settled', 'https://site.test/held'];
    const out = await admitLinks([page(links)], {
      frontier: frontier([links[0]!], [], [], [], [links[1]!]),
      hosts: hosts(),
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
    const asked: string[][] = [];
    const out = await admitLinks([page(['https://site.test/a'], true)], {
      frontier: frontier(['https://site.test/a'], asked),
      hosts: hosts(),
      seen,
      now: new Date(),
    });
    assert.deepEqual(asked, [['https://site.test/a']]);
    assert.equal(out.visits.length, 1);
  });

  it('wakes each host that got URLs once, and sends a visit only to a host that has none live or due', async () => {
    const woken: string[] = [];
    const wakeable = hosts(woken);
    const links = ['https://site.test/a', 'https://site.test/b', 'https://other.test/x'];
    const scoped = {
      ...page(links),
      config: parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/', 'https://other.test/'] }),
    };
    const first = await admitLinks([scoped], {
      frontier: frontier(links),
      hosts: wakeable,
      seen: new LruSet(10),
      now: new Date(),
    });
    assert.deepEqual(woken.toSorted(), ['other.test', 'site.test']);
    assert.deepEqual(first.visits.map((v) => v.visit.host).toSorted(), ['other.test', 'site.test']);
    const again = await admitLinks([page(['https://site.test/c'])], {
      frontier: frontier(['https://site.test/c']),
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
    const claims = new Map<string, string>();
    const flaky: HostVisits = {
      ...hosts(),
      wake: async (_crawlId, host) => {
        if (host === 'other.test') throw new Error('ProvisionedThroughputExceededException');
        if (claims.has(host)) return undefined; // claimed, within its grace: nobody sends again
        claims.set(host, `ticket-${host}`);
        return `ticket-${host}`;
      },
      unwake: async (_crawlId, host, ticket) => {
        if (claims.get(host) === ticket) claims.delete(host);
      },
    };
    const deps = { frontier: frontier(links), hosts: flaky, seen: new LruSet(10), now: new Date() };
    await assert.rejects(admitLinks([scoped], deps), /ProvisionedThroughput/);
    assert.deepEqual([...claims.keys()], [], "site.test's claim was given back: no visit was sent for it");
  });

  it('admits what will not be fetched as held, with its skipped result; the budget promotes only what it grants', async () => {
    const admittedAs: FrontierUrl[] = [];
    const promoted: string[] = [];
    const budgeted = parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/'], maxPages: 1 });
    const links = ['https://site.test/a', 'https://site.test/b', 'https://elsewhere.test/'];
    const out = await admitLinks([{ ...page(links), config: budgeted }], {
      frontier: frontier(links, [], admittedAs, promoted),
      hosts: hosts(),
      seen: new LruSet(10),
      now: new Date(),
    });
    assert.ok(
      admittedAs.every((url) => url.held === true),
      'a budgeted crawl admits everything held',
    );
    assert.deepEqual(promoted, ['https://site.test/a']);
    assert.deepEqual(out.results.map((r) => [r.url, r.code]).toSorted(), [
      ['https://elsewhere.test/', 'scope'],
      ['https://site.test/b', 'limit'],
    ]);
  });
});
