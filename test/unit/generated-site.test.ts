// The e2e test site (test/fixtures/generated-site.ts): its plan must be right before crawls are judged by
// it. The model's links are checked against the crawler's own link extractor and normalizer, and the
// plan against a hand-written reading of the site's shape.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { extractLinks } from '../../lambdas/core/content/index.ts';
import { isAllowed, parseRobots } from '../../lambdas/core/robots/index.ts';
import { normalizeHref, resolveUrl } from '../../lambdas/core/urls/index.ts';
import {
  createSiteModel,
  diffAgainstPlan,
  type JudgedResult,
  type SiteModel,
  startGeneratedSite,
  TRAP_PREFIX,
} from '../fixtures/generated-site.ts';

const ORIGIN = 'http://127.0.0.1:8080';
const EXTERNAL = 'http://127.0.0.2:9090';

function bigModel(): SiteModel {
  return createSiteModel(ORIGIN, { pages: 2000, externalOrigin: EXTERNAL });
}

function contentPaths(pages: number): string[] {
  return ['/', ...Array.from({ length: pages - 1 }, (_, i) => `/p/${i + 1}`)];
}

function get(
  url: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('generated site model', () => {
  const model = bigModel();
  const plan = model.plan({ maxDepth: 8 });

  it('is deterministic for the same options and seed, and differs for another seed', () => {
    const again = bigModel().plan({ maxDepth: 8 });
    assert.deepEqual([...again.outcomes], [...plan.outcomes]);
    assert.equal(bigModel().page('/p/37').body, model.page('/p/37').body);
    const other = createSiteModel(ORIGIN, { pages: 2000, externalOrigin: EXTERNAL, seed: 2 });
    assert.notEqual(other.page('/p/37').body, model.page('/p/37').body);
  });

  it('reaches every content page from / and fetches each at its layer', () => {
    for (const path of contentPaths(2000)) {
      assert.ok(plan.fetchedPaths.has(path), `${path} is not planned as fetched`);
      const outcome = plan.outcomes.get(`${ORIGIN}${path}`);
      const index = path === '/' ? 0 : Number(path.slice(3));
      assert.equal(outcome?.depth, model.layerOf(index), path);
    }
    assert.ok(plan.fetchedPaths.size >= 2000);
  });

  it('writes 10-20 distinct links on content pages, including the nav links', () => {
    for (const path of contentPaths(2000).slice(1)) {
      const links = model.page(path).links;
      assert.ok(links.length >= 10 && links.length <= 20, `${path} has ${links.length} links`);
      for (const nav of ['/', '/about', '/contact', '/help']) {
        assert.ok(
          links.some((l) => l.url === `${ORIGIN}${nav}`),
          `${path} lacks nav link ${nav}`,
        );
      }
    }
  });

  it("agrees with the crawler's link extractor on every page it plans to fetch", () => {
    for (const target of plan.fetchedPaths) {
      const page = model.page(target);
      const extracted = extractLinks(page.body, `${ORIGIN}${target}`);
      const byExtractor = extracted.links.map((l) => `${l.url} ${l.nofollow}`).sort();
      const byModel = page.links.map((l) => `${l.url} ${l.nofollow}`).sort();
      assert.deepEqual(byExtractor, byModel, target);
    }
  });

  it('maps every duplicate variant to its canonical URL, as the normalizer does', () => {
    assert.ok(plan.duplicateVariants.size >= 50, `only ${plan.duplicateVariants.size} variants`);
    const kinds = new Set<string>();
    for (const [variant, canonical] of plan.duplicateVariants) {
      assert.notEqual(variant, canonical);
      const resolved = resolveUrl(variant, `${ORIGIN}/p/3`);
      assert.ok(resolved, variant);
      const normalized = normalizeHref(resolved);
      assert.deepEqual(normalized, { ok: true, url: canonical }, variant);
      kinds.add(variant.replace(/\d+/g, 'N'));
    }
    for (const kind of [
      '/p/N?utm_source=feed&utm_medium=rss',
      '/p/./N',
      '/P/../p/N#frag',
      'HTTP://N.N.N.N:N/p/N',
      '/p/N%N',
      '//N.N.N.N:N/p/N',
    ]) {
      assert.ok(kinds.has(kind), `no variant of the form ${kind}`);
    }
  });

  it('links some pages only through variants, never by their canonical URL', () => {
    assert.ok(plan.variantOnlyPaths.size >= 100, `only ${plan.variantOnlyPaths.size} variant-only pages`);
    const canonicalHrefs = new Set<string>();
    for (const target of plan.fetchedPaths) {
      for (const link of model.page(target).links) {
        if (!plan.variantOnlyPaths.has(new URL(link.url).pathname)) continue;
        canonicalHrefs.add(link.href);
        assert.ok(plan.duplicateVariants.has(link.href), `${target} links ${link.url} as ${link.href}`);
      }
    }
    for (const path of plan.variantOnlyPaths) {
      assert.ok(plan.fetchedPaths.has(path), `${path} unreachable`);
      assert.ok(!canonicalHrefs.has(path) && !canonicalHrefs.has(`${ORIGIN}${path}`));
    }
  });

  it('plans robots.txt by construction: /private/ and ?print=1 disallowed, /private/open/ allowed', () => {
    assert.deepEqual(
      [...plan.disallowedPaths].sort(),
      [
        '/p/1?print=1',
        '/private/1',
        '/private/2',
        '/private/3',
        '/private/4',
        '/private/5',
        '/private/6',
        '/private/moved',
      ].sort(),
    );
    assert.ok(plan.fetchedPaths.has('/private/open/info'));
    const policy = parseRobots(model.robotsTxt ?? '');
    assert.equal(isAllowed(policy, 'otherbot', `${ORIGIN}/`), false, 'the otherbot group is not ours');
    for (const path of plan.allowedPaths)
      assert.ok(!path.startsWith('/private/') || path.startsWith('/private/open/'));
  });

  it('plans 404s, 500s, redirects, nofollow and off-site links with their outcomes', () => {
    assert.deepEqual([...plan.notFoundPaths].sort(), [1, 2, 3, 4, 5, 6].map((k) => `/missing/${k}`).sort());
    assert.deepEqual([...plan.errorPaths].sort(), ['/broken/1', '/broken/2']);
    assert.deepEqual(
      [...plan.redirectPaths],
      [
        ['/r/1', `${ORIGIN}/moved/1`],
        ['/r/2', `${ORIGIN}/about`],
        ['/r/3', `${EXTERNAL}/landing`],
        ['/r/4', `${ORIGIN}/private/moved`],
      ],
    );
    assert.deepEqual(plan.outcomes.get(`${ORIGIN}/moved/1`)?.outcome, 'fetched');
    assert.deepEqual(plan.outcomes.get(`${EXTERNAL}/landing`), { outcome: 'skipped', code: 'scope' });
    assert.deepEqual(
      [...plan.nofollowSkipped].sort(),
      ['/nf/m1', '/nf/m2', '/nf/r1', '/nf/r2'].map((p) => `${ORIGIN}${p}`),
    );
    assert.deepEqual(
      [...plan.externalLinks].sort(),
      [
        ...[1, 2, 3].map((k) => `${EXTERNAL}/ext/${k}`),
        `${EXTERNAL}/landing`,
        ...[1, 2, 3].map((k) => `http://external.invalid/x/${k}`),
      ].sort(),
    );
    for (const url of plan.externalLinks)
      assert.deepEqual(plan.outcomes.get(url), { outcome: 'skipped', code: 'scope' });
    for (const url of plan.outcomes.keys()) assert.ok(/^https?:\/\//.test(url), `${url} is not an http URL`);
  });

  it('cuts the trap at maxDepth: levels 1..maxDepth fetched, the next one skipped, nothing deeper', () => {
    const trap = [...plan.fetchedPaths].filter((p) => p.startsWith(TRAP_PREFIX));
    assert.equal(trap.length, 8);
    assert.ok(plan.fetchedPaths.has('/trap/1/2/3/4/5/6/7/8'));
    assert.deepEqual([...plan.depthSkipped], [`${ORIGIN}/trap/1/2/3/4/5/6/7/8/9`]);
    assert.deepEqual(plan.outcomes.get(`${ORIGIN}/trap/1/2/3/4/5/6/7/8/9`), {
      outcome: 'skipped',
      code: 'depth',
      depth: 9,
    });
  });

  it('with maxDepth 2 fetches exactly the pages of layers 0-2 and skips the links into layer 3', () => {
    const shallow = model.plan({ maxDepth: 2 });
    const layer = (path: string) => model.layerOf(path === '/' ? 0 : Number(path.slice(3)));
    const content = contentPaths(2000);
    assert.deepEqual(
      [...shallow.fetchedPaths].filter((p) => p === '/' || /^\/p\/\d+$/.test(p)).sort(),
      content.filter((p) => layer(p) <= 2).sort(),
    );
    assert.deepEqual(
      [...shallow.depthSkipped].sort(),
      [...content.filter((p) => layer(p) === 3), '/trap/1/2/3'].map((p) => `${ORIGIN}${p}`).sort(),
    );
    assert.throws(() => model.plan({ maxDepth: 1 }), /maxDepth >= 2/);
  });

  it('counts one expected request per allowed path, retried paths aside', () => {
    assert.equal(plan.expectedHits.get('/robots.txt'), 1);
    for (const path of plan.allowedPaths) {
      if (plan.errorPaths.has(path)) assert.equal(plan.expectedHits.has(path), false);
      else assert.equal(plan.expectedHits.get(path), 1, path);
    }
    assert.equal(plan.outcomes.size, new Set(plan.outcomes.keys()).size);
  });

  it('accounts for every discovered URL exactly once', () => {
    const discovered = new Set<string>([`${ORIGIN}/`]);
    for (const target of plan.fetchedPaths)
      for (const link of model.page(target).links) discovered.add(link.url);
    for (const to of plan.redirectPaths.values()) discovered.add(to);
    assert.deepEqual([...plan.outcomes.keys()].sort(), [...discovered].sort());
  });
});

describe('diffAgainstPlan', () => {
  const model = createSiteModel(ORIGIN, { pages: 300, externalOrigin: EXTERNAL });
  const plan = model.plan({ maxDepth: 6 });
  const perfect = (): { results: JudgedResult[]; hits: Map<string, number> } => ({
    results: [...plan.outcomes].map(([url, want]) => ({
      url,
      outcome: want.outcome,
      ...(want.code === undefined ? {} : { code: want.code }),
      ...(want.status === undefined ? {} : { status: want.status }),
      depth: want.depth ?? 1,
    })),
    hits: new Map([...plan.expectedHits, ...[...plan.errorPaths].map((p): [string, number] => [p, 4])]),
  });

  it('finds nothing wrong with a crawl that did exactly what was planned', () => {
    const { results, hits } = perfect();
    assert.deepEqual(diffAgainstPlan({ hits }, plan, results), { results: [], requests: [] });
  });

  it('reports missing, duplicated, unplanned and wrong results', () => {
    const { results, hits } = perfect();
    const [first, second, third] = results;
    assert.ok(first && second && third);
    const broken = [
      ...results.filter((r) => r !== first),
      { ...second },
      { ...third, outcome: 'skipped', code: 'limit' },
      { url: `${ORIGIN}/p/1?utm_source=feed`, outcome: 'fetched', depth: 2 },
    ];
    const diff = diffAgainstPlan({ hits }, plan, broken);
    assert.equal(diff.requests.length, 0);
    assert.ok(diff.results.some((p) => p.startsWith(`no result for ${first.url}`)));
    assert.ok(diff.results.includes(`two results for ${second.url}`));
    assert.ok(diff.results.includes(`two results for ${third.url}`));
    assert.ok(diff.results.some((p) => p.startsWith(`unplanned result ${ORIGIN}/p/1?utm_source=feed`)));
    const fetchedDepth = results.find((r) => r.outcome === 'fetched' && r.depth === 2);
    assert.ok(fetchedDepth);
    const deeper = results.map((r) => (r === fetchedDepth ? { ...r, depth: 3 } : r));
    assert.equal(diffAgainstPlan({ hits }, plan, deeper).results.length, 1, 'a wrong depth is reported');
  });

  it('reports disallowed, unplanned, repeated and unretried requests', () => {
    const { results, hits } = perfect();
    hits.set('/private/1', 1);
    hits.set('/p/5?utm_source=feed', 1);
    hits.set('/p/7', 2);
    hits.set('/broken/1', 1);
    hits.delete('/robots.txt');
    const diff = diffAgainstPlan({ hits }, plan, results);
    assert.equal(diff.results.length, 0);
    assert.deepEqual(
      diff.requests.sort(),
      [
        '/p/7 requested 2×, planned 1×',
        '/robots.txt requested 0×, planned 1×',
        'always-500 /broken/1 requested 1×, planned 2..4 (retried, then failed)',
        'disallowed /private/1 requested 1×',
        'unplanned request /p/5?utm_source=feed (1×)',
      ].sort(),
    );
  });
});

describe('generated site server', () => {
  it('serves the model on 127.0.0.1, counts requests per target, and answers unavailable paths first', async (t) => {
    const site = await startGeneratedSite({
      pages: 20,
      crawlDelay: 1,
      unavailable: [{ path: '/p/3', times: 1, retryAfterSeconds: 2 }],
    });
    t.after(() => site.close());
    assert.match(site.origin, /^http:\/\/127\.0\.0\.1:\d+$/);

    const robots = await get(`${site.origin}/robots.txt`);
    assert.equal(robots.status, 200);
    assert.match(robots.body, /Disallow: \/private\//);
    assert.match(robots.body, /Crawl-delay: 1/);

    const home = await get(`${site.origin}/`);
    assert.equal(home.status, 200);
    assert.equal(home.body, site.page('/').body);
    const variant = await get(`${site.origin}/p/2?utm_source=x`);
    assert.equal(variant.body, site.page('/p/2').body, 'a tracking parameter does not change the page');
    assert.equal((await get(`${site.origin}/missing/1`)).status, 404);
    assert.equal((await get(`${site.origin}/broken/1`)).status, 500);
    const redirect = await get(`${site.origin}/r/1`);
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.location, '/moved/1');
    assert.equal((await get(`${site.origin}/no/such/page`)).status, 404);

    const first = await get(`${site.origin}/p/3`);
    assert.equal(first.status, 503);
    assert.equal(first.headers['retry-after'], '2');
    assert.equal((await get(`${site.origin}/p/3`)).status, 200);

    assert.equal(site.hits.get('/p/3'), 2);
    assert.equal(site.hits.get('/p/2?utm_source=x'), 1);
    assert.equal(site.hits.get('/'), 1);
    assert.equal(site.requestTimes.length, site.requests.length);
    for (let i = 1; i < site.requestTimes.length; i++) {
      assert.ok(site.requestTimes[i]! >= site.requestTimes[i - 1]!);
    }
    assert.equal(site.expected.expectedHits.get('/p/3'), 2);

    site.reset();
    assert.equal(site.hits.size, 0);
    assert.equal(
      (await get(`${site.origin}/p/3`)).status,
      503,
      'reset also restarts the unavailable counters',
    );
  });

  it('listens on another loopback address, for an off-site host', async (t) => {
    const other = await startGeneratedSite({ pages: 3, host: '127.0.0.2', robots: null });
    t.after(() => other.close());
    assert.match(other.origin, /^http:\/\/127\.0\.0\.2:\d+$/);
    assert.equal((await get(`${other.origin}/robots.txt`)).status, 404);
    assert.equal((await get(`${other.origin}/p/2`)).status, 200);
    assert.equal(other.hits.get('/p/2'), 1);
    assert.equal(other.expected.expectedHits.has('/robots.txt'), false);
  });
});
