/**
 * One URL of a visit (fetch-task.ts `fetchUrl`, the fetch function's per-URL step) against hostile
 * servers on 127.0.0.1, through the real HttpFetcher: what each hostile behaviour becomes as a crawl
 * decision — a stored page with `truncated`, a result with outcome/code/reason, or a bounded retry that
 * ends `failed` on the last attempt — plus links on legacy-encoded pages, redirect chains, and the
 * address guard on redirect targets. The URL is a stored URL item as admission writes it; the host
 * slots and robots store are the in-memory fakes of test/fakes (robots off, no politeness delay): what
 * is under test is the fetch and its classification.
 */
import assert from 'node:assert/strict';
import { isIP, type LookupFunction } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { HttpFetcher } from '../../lambdas/adapters/http-fetcher.ts';
import {
  type CrawlConfig,
  type CrawlConfigInput,
  type HostUrl,
  type PageFetcher,
  parseCrawlConfig,
} from '../../lambdas/core/crawl/index.ts';
import { fetchUrl, type UrlDecision } from '../../lambdas/core/fetch/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryHostSlots } from '../fakes/host-slots.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import {
  bomb,
  encoded,
  encodeLegacy,
  endlessBody,
  type HostileServer,
  html,
  lyingLength,
  raw,
  redirect,
  resetMidBody,
  respond,
  silent,
  startHostileServer,
  trickleBody,
} from '../fixtures/hostile-server.ts';

const MiB = 1024 * 1024;
const CRAWL = 'hostile';

function config(overrides: Partial<CrawlConfigInput> = {}): CrawlConfig {
  return parseCrawlConfig({
    crawlId: CRAWL,
    allowPrivate: true,
    respectRobots: false,
    delayMs: 0,
    maxAttempts: 4,
    ...overrides,
    limits: {
      connectTimeoutMs: 1000,
      headersTimeoutMs: 1000,
      totalTimeoutMs: 1500,
      maxBodyBytes: 200_000,
      maxDecodedBytes: 20 * MiB,
      maxRedirects: 3,
      ...overrides.limits,
    },
  });
}

/** Runs the per-URL step on `url` stored as admission stores it, with in-memory ports. */
async function decide(
  fetcher: PageFetcher,
  crawl: CrawlConfig,
  url: string,
  options: {
    /** Fetch attempts already made (the URL item's `att`): 3 makes this the last of maxAttempts 4. */
    attempts?: number;
    redirects?: number;
    /** The host slots (to look at their pauses afterwards). */
    slots?: MemoryHostSlots;
  } = {},
): Promise<UrlDecision> {
  const normalized = normalizeUrl(url, { maxUrlLength: crawl.limits.maxUrlLength });
  if (!normalized.ok) throw new Error(`${url}: ${normalized.reason}`);
  const item: HostUrl = {
    key: normalized.key,
    url: normalized.url,
    depth: 0,
    st: 'new',
    ...(options.attempts === undefined ? {} : { attempts: options.attempts }),
    ...(options.redirects === undefined ? {} : { redirects: options.redirects }),
  };
  return fetchUrl(CRAWL, item, crawl, {
    fetcher,
    pace: options.slots ?? new MemoryHostSlots(),
    robots: new MemoryRobotsStore(),
    robotsCache: createRobotsCache(),
    now: () => Date.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  });
}

/** The result record of a decision that has one (stored page or bare result). */
function resultOf(decision: UrlDecision): CrawlResult {
  if (decision.kind === 'captured') return decision.page.result;
  if (decision.kind === 'result') return decision.result;
  throw new Error(`expected a result, got ${JSON.stringify(decision)}`);
}

function linksOf(decision: UrlDecision): string[] {
  assert.equal(decision.kind, 'captured', JSON.stringify(decision).slice(0, 300));
  return decision.kind === 'captured' ? decision.links.map((link) => link.url) : [];
}

let server: HostileServer;
const fetcher = new HttpFetcher();
const crawl = config();
before(async () => {
  server = await startHostileServer({
    '/endless': endlessBody('chunked'),
    '/claims-more': lyingLength(50_000_000, 300_000),
    '/trickle': trickleBody(200),
    '/silent': silent(),
    '/reset': resetMidBody(100_000, 2000),
    '/bad-chunks': raw('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n', {
      end: false,
    }),
    '/two-lengths': raw('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nokabc', {
      end: false,
    }),
    '/503-for-decades': respond('503 Service Unavailable', [['Retry-After', '999999999']], 'later'),
    '/503-briefly': respond('503 Service Unavailable', [['Retry-After', '30']], 'later'),
    '/ok': html('<p>fine</p>'),
    '/huge-header': raw(`HTTP/1.1 200 OK\r\nX-Huge: ${'h'.repeat(70 * 1024)}\r\nContent-Length: 0\r\n\r\n`, {
      end: false,
    }),
  });
});
after(async () => {
  await fetcher.close();
  await server.close();
});

describe('hostile bodies become stored pages marked truncated', () => {
  it('an endless body: stored up to maxBodyBytes, truncated "length"', async () => {
    const result = resultOf(await decide(fetcher, crawl, server.url('/endless')));
    assert.equal(result.outcome, 'fetched');
    assert.equal(result.truncated, 'length');
    assert.equal(result.bytes, 200_000);
  });

  it('a Content-Length claiming 50 MB: the same, without waiting for bytes that never come', async () => {
    const started = Date.now();
    const result = resultOf(await decide(fetcher, crawl, server.url('/claims-more')));
    assert.equal(result.truncated, 'length');
    assert.equal(result.bytes, 200_000);
    assert.ok(Date.now() - started < 1000);
  });

  it('a trickling body: stored as far as it came at the total deadline, truncated "time", not retried', async () => {
    const decision = await decide(fetcher, crawl, server.url('/trickle'));
    const result = resultOf(decision);
    assert.equal(decision.kind, 'captured');
    assert.equal(result.outcome, 'fetched');
    assert.equal(result.truncated, 'time');
    assert.ok(result.bytes >= 5 && result.bytes <= 8, `${result.bytes} bytes`);
    assert.ok(result.ms >= 1400 && result.ms < 2000, `${result.ms} ms`);
  });
});

describe('hostile servers that fail: bounded retries, then a recorded failure', () => {
  // undici's headers timer ticks at ~0.5 s and may fire up to ~1 s late: the total deadline is kept
  // well clear of it so the reason is deterministic.
  const slowCrawl = config({ limits: { headersTimeoutMs: 500, totalTimeoutMs: 4000 } });
  const cases = [
    { path: '/silent', code: 'timeout', reason: /no response headers within 500 ms/, maxMs: 2500 },
    {
      path: '/reset',
      code: 'connection-reset',
      reason: /connection lost mid-body after 2000 bytes/,
      maxMs: 1000,
    },
  ];
  for (const { path, code, reason, maxMs } of cases) {
    it(`${path}: retried with a backoff while attempts remain, then failed "${code}" with the reason`, async () => {
      const before = Date.now();
      const first = await decide(fetcher, slowCrawl, server.url(path));
      // The retry is postponed on the URL's item, with its attempt and a backoff.
      assert.equal(first.kind, 'retry');
      assert.ok(first.kind === 'retry' && first.attempts === 1);
      assert.equal(first.kind === 'retry' ? first.code : '', code);
      assert.ok(
        first.kind === 'retry' && first.retryAt >= before + 1000 && first.retryAt <= Date.now() + 2000,
      );

      // Each retry counts on from the attempts its item records, up to maxAttempts.
      let attempts = first.kind === 'retry' ? first.attempts : 0;
      for (const attempt of [2, 3]) {
        const next = await decide(fetcher, slowCrawl, server.url(path), { attempts });
        assert.ok(next.kind === 'retry' && next.attempts === attempt, `attempt ${attempt} retried`);
        attempts = next.kind === 'retry' ? next.attempts : 0;
      }
      // The fourth ends it, at once.
      const started = Date.now();
      const last = resultOf(await decide(fetcher, slowCrawl, server.url(path), { attempts }));
      assert.ok(Date.now() - started < maxMs);
      assert.equal(last.outcome, 'failed');
      assert.equal(last.code, code);
      assert.match(last.reason ?? '', reason);
      assert.match(last.reason ?? '', /\(gave up after 4 attempts\)$/);
      assert.equal(last.attempt, 4);
    });
  }

  for (const path of ['/bad-chunks', '/two-lengths', '/huge-header']) {
    it(`${path}: recorded failed "bad-response" at once, never retried`, async () => {
      const result = resultOf(await decide(fetcher, crawl, server.url(path)));
      assert.equal(result.outcome, 'failed');
      assert.equal(result.code, 'bad-response');
      assert.match(result.reason ?? '', /malformed HTTP response/);
      assert.equal(result.attempt, 1);
    });
  }
});

describe('decompression bombs: the page is stored, no links are read from it', () => {
  for (const coding of ['gzip', 'deflate', 'br'] as const) {
    it(`${coding}: code "decompression-bomb", and the link inside it is not followed`, async () => {
      const path = `/bomb-${coding}`;
      server.route(path, encoded(await bomb(coding, 64 * MiB), coding));
      const decision = await decide(fetcher, crawl, server.url(path));
      const result = resultOf(decision);
      assert.equal(decision.kind, 'captured', 'the (small, encoded) body is stored');
      assert.equal(result.outcome, 'fetched');
      assert.equal(result.code, 'decompression-bomb');
      assert.match(
        result.reason ?? '',
        new RegExp(`^links not extracted: ${coding} body of \\d+ bytes decodes to more than`),
      );
      assert.deepEqual(linksOf(decision), []);
      assert.equal(result.outlinks, 0);
    });
  }

  it('a bomb under the ratio but over maxDecodedBytes: code "decoded-too-large"', async () => {
    server.route('/bomb-big', encoded(await bomb('gzip', 1024 * MiB), 'gzip'));
    const result = resultOf(
      await decide(fetcher, config({ limits: { maxBodyBytes: 5 * MiB } }), server.url('/bomb-big')),
    );
    assert.equal(result.code, 'decoded-too-large');
    assert.equal(result.outlinks, 0);
  });
});

describe('legacy-encoded pages: links come out as percent-encoded UTF-8', () => {
  const expected = (path: string): string => new URL(encodeURI(path), server.origin).href;

  it('GBK (Content-Type), Shift_JIS (meta http-equiv) and windows-1251 (meta charset)', async () => {
    server.route(
      '/gbk',
      html(
        encodeLegacy('<title>中文</title><a href="/文档/页面.html">文档</a>', 'gbk'),
        'text/html; charset=gbk',
      ),
    );
    server.route(
      '/sjis',
      html(
        encodeLegacy(
          '<meta http-equiv="content-type" content="text/html; charset=shift_jis"><a href="/日本語/ページ.html">x</a>',
          'shift_jis',
        ),
        'text/html',
      ),
    );
    server.route(
      '/cp1251',
      html(
        encodeLegacy('<meta charset="windows-1251"><a href="/новости/статья.html">x</a>', 'windows-1251'),
        'text/html',
      ),
    );
    assert.deepEqual(linksOf(await decide(fetcher, crawl, server.url('/gbk'))), [
      expected('/文档/页面.html'),
    ]);
    assert.deepEqual(linksOf(await decide(fetcher, crawl, server.url('/sjis'))), [
      expected('/日本語/ページ.html'),
    ]);
    assert.deepEqual(linksOf(await decide(fetcher, crawl, server.url('/cp1251'))), [
      expected('/новости/статья.html'),
    ]);
    assert.equal(expected('/文档/页面.html'), `${server.origin}/%E6%96%87%E6%A1%A3/%E9%A1%B5%E9%9D%A2.html`);
  });

  it('a gzip-encoded GBK page body cut at maxBodyBytes still yields the links before the cut', async () => {
    const { gzipSync } = await import('node:zlib');
    const links = Array.from({ length: 4000 }, (_, i) => `<a href="/文档/${i}.html">${i}</a>`).join('\n');
    const page = gzipSync(encodeLegacy(`<meta charset="gbk">${links}`, 'gbk'), { level: 1 });
    server.route('/gbk-big', encoded(page, 'gzip'));
    const small = config({ limits: { maxBodyBytes: Math.floor(page.length / 2) } });
    const decision = await decide(fetcher, small, server.url('/gbk-big'));
    assert.equal(resultOf(decision).truncated, 'length');
    const found = linksOf(decision);
    assert.ok(found.length > 100 && found.length < 4000, `${found.length} links`);
    assert.equal(found[0], expected('/文档/0.html'));
  });
});

describe('redirect chains', () => {
  it('each hop is its own URL; past maxRedirects the hop ends "too-many-redirects" with its Location', async () => {
    for (let i = 0; i < 6; i++) server.route(`/chain/${i}`, redirect(`/chain/${i + 1}`));
    for (let i = 0; i <= 3; i++) {
      const decision = await decide(fetcher, crawl, server.url(`/chain/${i}`), { redirects: i });
      const result = resultOf(decision);
      assert.equal(result.outcome, 'redirected');
      assert.equal(result.location, server.url(`/chain/${i + 1}`));
      if (i < 3) {
        assert.equal(result.code, undefined);
        assert.deepEqual(decision.kind === 'captured' ? decision.links : [], [
          { url: server.url(`/chain/${i + 1}`), nofollow: false, redirects: i + 1 },
        ]);
      } else {
        assert.equal(result.code, 'too-many-redirects');
        assert.match(
          result.reason ?? '',
          /redirect chain longer than 3 hops \(next: http:\/\/127\.0\.0\.1:\d+\/chain\/4\)/,
        );
        assert.deepEqual(decision.kind === 'captured' ? decision.links : undefined, []);
      }
    }
    assert.equal(server.stats('/chain/4').hits, 0, 'the hop past the limit is never requested');
  });
});

describe('the address guard on redirect targets', () => {
  /**
   * The first hop must reach a "public" site, and a test may only reach 127.0.0.0/8: so the first hop
   * goes through a fetcher with the guard off whose stub resolver maps www.public-site.test to
   * 127.0.0.1 (standing in for a public server), and every other request through the crawl's own,
   * guarded fetcher. The redirect targets spell 127.0.0.1 in other ways: had the guard let one pass,
   * the connection would land on this server, which counts it.
   */
  const stub = (answers: Record<string, string>): LookupFunction => {
    return (hostname, options, callback) => {
      const address = answers[hostname];
      queueMicrotask(() => {
        if (address === undefined) {
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
        } else if (options.all) callback(null, [{ address, family: isIP(address) }]);
        else callback(null, address, isIP(address));
      });
    };
  };
  const publicSide = new HttpFetcher({ lookup: stub({ 'www.public-site.test': '127.0.0.1' }) });
  const guarded = new HttpFetcher({ lookup: stub({ 'intranet.test': '127.0.0.1' }) });
  const fetcher: PageFetcher = {
    fetch: (request) =>
      request.url.hostname === 'www.public-site.test'
        ? publicSide.fetch({ ...request, allowPrivate: true })
        : guarded.fetch(request),
  };
  const guardedCrawl = config({ allowPrivate: false });
  let target: HostileServer;
  before(async () => {
    target = await startHostileServer({ '/secret': html('<p>internal admin page</p>') });
  });
  after(async () => {
    await Promise.all([publicSide.close(), guarded.close(), target.close()]);
  });

  const spellings = (port: number): string[] => [
    `http://[::ffff:127.0.0.1]:${port}/secret`,
    `http://[::ffff:7f00:1]:${port}/secret`,
    `http://2130706433:${port}/secret`,
    `http://0x7f000001:${port}/secret`,
    `http://0x7f.0.0.1:${port}/secret`,
    `http://0177.0.0.1:${port}/secret`,
    `http://127.1:${port}/secret`,
    `http://017700000001:${port}/secret`,
    `http://0x7f.0x0.0x0.0x1:${port}/secret`,
    `http://127.0.0.1.:${port}/secret`,
    `http://[0:0:0:0:0:ffff:127.0.0.1]:${port}/secret`,
    `http://intranet.test:${port}/secret`,
  ];

  it('a public page redirecting to loopback in any spelling: the next hop is blocked, no connection made', async () => {
    for (const [index, location] of spellings(target.port).entries()) {
      target.route(`/start-${index}`, redirect(location));
      const hop1 = await decide(
        fetcher,
        guardedCrawl,
        `http://www.public-site.test:${target.port}/start-${index}`,
      );
      const first = resultOf(hop1);
      assert.equal(first.outcome, 'redirected', location);
      assert.equal(hop1.kind === 'captured' ? hop1.links.length : 0, 1, location);
      const next = hop1.kind === 'captured' ? (hop1.links[0]?.url ?? '') : '';

      const connections = target.connections;
      const hop2 = resultOf(await decide(fetcher, guardedCrawl, next, { redirects: 1 }));
      assert.equal(hop2.outcome, 'blocked', `${location}: ${JSON.stringify(hop2)}`);
      assert.equal(hop2.code, 'address-blocked');
      assert.match(hop2.reason ?? '', /address not allowed: .*loopback \(127\.0\.0\.0\/8\).*--allow-private/);
      assert.equal(target.connections, connections, `${location}: a connection was opened`);
    }
    assert.equal(target.stats('/secret').hits, 0);
  });
});

describe('a server cannot park a URL, a host or a crawl for years', () => {
  it('Retry-After beyond the crawl\'s cap: the host rests only the cap, the URL ends failed "retry-after-too-long" at once', async () => {
    const slots = new MemoryHostSlots();
    const before = Date.now();
    const decision = await decide(fetcher, crawl, server.url('/503-for-decades'), { slots });
    const pauses = slots.pushedBack.map((pause) => pause.notBefore);
    const result = resultOf(decision);
    assert.equal(result.outcome, 'failed');
    assert.equal(result.code, 'retry-after-too-long');
    assert.match(result.reason ?? '', /retry in 999999999 s .*at most 900 s/);
    assert.equal(result.status, 503);
    assert.equal(pauses.length, 1);
    assert.ok(pauses[0]! <= Date.now() + crawl.maxRetryAfterMs, 'paused at most maxRetryAfterMs');
    assert.ok(pauses[0]! >= before + crawl.maxRetryAfterMs, 'but paused the whole cap');
  });

  it('Retry-After within the cap is honoured: the URL is retried after it', async () => {
    const before = Date.now();
    const decision = await decide(fetcher, crawl, server.url('/503-briefly'));
    assert.equal(decision.kind, 'retry');
    const retryAt = decision.kind === 'retry' ? decision.retryAt : 0;
    assert.ok(retryAt >= before + 30_000 && retryAt <= Date.now() + 30_000, `${retryAt - before} ms`);
  });
});
