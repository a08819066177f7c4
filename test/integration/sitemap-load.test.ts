/**
 * loadSitemaps and sitemapsFromRobots against a real site on 127.0.0.1 through the real HttpFetcher:
 * indexes, gzip files, Content-Encoding, redirects, broken and missing files, caps and pacing.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { HttpFetcher } from '../../lambdas/adapters/http-fetcher.ts';
import { type CrawlConfig, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import {
  DEFAULT_SITEMAP_CAPS,
  loadSitemaps,
  SitemapError,
  sitemapsFromRobots,
} from '../../lambdas/core/frontier/index.ts';
import { type CountingServer, startHttpServer } from '../fixtures/http-test-server.ts';

const fetcher = new HttpFetcher();
let server: CountingServer;
let base = '';
const requestTimes: Array<{ path: string; at: number }> = [];

const urlset = (paths: string[]): string =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${paths
    .map((path) => `<url><loc>${base}${path}</loc></url>`)
    .join('\n')}\n</urlset>\n`;

const index = (paths: string[]): string =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${paths
    .map((path) => `<sitemap><loc>${path.startsWith('http') ? path : `${base}${path}`}</loc></sitemap>`)
    .join('\n')}\n</sitemapindex>\n`;

type Route = (response: http.ServerResponse) => void;

function xml(body: string | Buffer, headers: Record<string, string> = {}): Route {
  return (response) => {
    response.writeHead(200, { 'content-type': 'application/xml', ...headers });
    response.end(body);
  };
}

function routes(): Record<string, Route> {
  return {
    '/robots.txt': (response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(
        `User-agent: *\nDisallow: /private\nSitemap: ${base}/sitemap_index.xml\nsitemap: /relative-sitemap.xml\nSitemap: ${base}/sitemap_index.xml\n`,
      );
    },
    '/sitemap_index.xml': xml(
      index([
        '/s1.xml',
        '/s2.xml.gz',
        '/s3.xml',
        '/s1.xml', // listed twice: fetched once
        '/moved.xml',
        '/nested-index.xml',
        '/missing.xml',
        '/broken.xml',
        '/page.html',
      ]),
    ),
    '/s1.xml': xml(urlset(['/', '/a', '/b', '/a'])),
    // A .xml.gz file served as plain bytes: recognised by its magic bytes.
    '/s2.xml.gz': xml(gzipSync(urlset(['/b', '/c', '/d'])), { 'content-type': 'application/x-gzip' }),
    // HTTP-level compression.
    '/s3.xml': xml(gzipSync(urlset(['/e', '/f'])), { 'content-encoding': 'gzip' }),
    '/moved.xml': (response) => {
      response.writeHead(301, { location: '/really-moved.xml' });
      response.end();
    },
    '/really-moved.xml': xml(urlset(['/moved-page'])),
    '/nested-index.xml': xml(index(['/deep-index.xml'])),
    '/deep-index.xml': xml(index(['/too-deep.xml'])),
    '/too-deep.xml': xml(urlset(['/never'])),
    '/broken.xml': xml(`<urlset><url><loc>${base}/broken-1</loc></url>`),
    '/page.html': xml('<!DOCTYPE html><html><body>Not found</body></html>', { 'content-type': 'text/html' }),
    '/bomb.xml.gz': xml(gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20))),
    '/big.xml': xml(urlset(Array.from({ length: 300 }, (_, i) => `/big/${i}`))),
    '/many-index.xml': xml(index(Array.from({ length: 10 }, (_, i) => `/small/${i}.xml`))),
  };
}

before(async () => {
  let table: Record<string, Route> = {};
  server = await startHttpServer((request, response) => {
    const path = request.url ?? '/';
    requestTimes.push({ path, at: performance.now() });
    const small = /^\/small\/(\d+)\.xml$/.exec(path);
    if (small) {
      xml(urlset([`/small-page/${small[1]}`]))(response);
      return;
    }
    const route = table[path];
    if (route) {
      route(response);
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' });
    response.end('not found');
  });
  base = `http://127.0.0.1:${server.port}`;
  table = routes();
});

after(async () => {
  await fetcher.close();
  await server.close();
});

function config(overrides: Partial<CrawlConfig> = {}): CrawlConfig {
  return {
    ...parseCrawlConfig({
      crawlId: 'sm',
      userAgent: 'SitemapBot/1.0',
      allowPrivate: true,
      delayMs: 0,
      limits: { connectTimeoutMs: 1000, headersTimeoutMs: 1000, totalTimeoutMs: 3000 },
    }),
    ...overrides,
  };
}

const pathsOf = (urls: string[]): string[] => urls.map((url) => url.slice(base.length));

describe('loadSitemaps over HTTP', () => {
  it('follows the index: plain, .gz, Content-Encoding, redirects; dedups; reports every failure', async () => {
    const before = server.requests.length;
    const result = await loadSitemaps(
      [`${base}/sitemap_index.xml`],
      { fetcher, config: config() },
      DEFAULT_SITEMAP_CAPS,
    );
    assert.deepEqual(pathsOf(result.urls), ['/', '/a', '/b', '/c', '/d', '/e', '/f', '/moved-page']);
    const errors = Object.fromEntries(
      result.errors.map((error) => [error.sitemap.slice(base.length), error.reason]),
    );
    assert.deepEqual(Object.keys(errors).sort(), [
      '/broken.xml',
      '/deep-index.xml',
      '/missing.xml',
      '/page.html',
    ]);
    assert.equal(errors['/missing.xml'], 'HTTP 404');
    assert.match(errors['/broken.xml'] ?? '', /^malformed: .*ends inside <urlset>/);
    assert.match(errors['/page.html'] ?? '', /^not-a-sitemap: root element <html>/);
    assert.match(
      errors['/deep-index.xml'] ?? '',
      /index at level 3 lists 1 sitemaps: nesting deeper than 3 levels/,
    );
    assert.equal(result.truncated, false);
    // index + s1 + s2 + s3 + moved + nested + missing + broken + page + deep = 10 files, /s1.xml once.
    assert.equal(result.files, 10);
    const fetched = server.requests.slice(before).map((head) => head.split(' ')[1]);
    assert.equal(fetched.filter((path) => path === '/s1.xml').length, 1);
    assert.ok(fetched.includes('/really-moved.xml'));
    assert.ok(!fetched.includes('/too-deep.xml'));
    assert.match(server.requests.at(-1) ?? '', /user-agent: SitemapBot\/1\.0/i);
  });

  it('reads nested indexes up to maxDepth', async () => {
    const result = await loadSitemaps(
      [`${base}/nested-index.xml`],
      { fetcher, config: config() },
      { maxDepth: 4, maxUrls: 100, maxFiles: 10 },
    );
    assert.deepEqual(pathsOf(result.urls), ['/never']);
    assert.deepEqual(result.errors, []);
  });

  it('stops at maxUrls and says so', async () => {
    const result = await loadSitemaps(
      [`${base}/big.xml`, `${base}/s1.xml`],
      { fetcher, config: config() },
      { maxDepth: 3, maxUrls: 120, maxFiles: 10 },
    );
    assert.equal(result.urls.length, 120);
    assert.equal(result.urls[119], `${base}/big/119`);
    assert.equal(result.truncated, true);
    assert.equal(result.files, 1);
  });

  it('stops at maxFiles and says so', async () => {
    const result = await loadSitemaps(
      [`${base}/many-index.xml`],
      { fetcher, config: config() },
      { maxDepth: 3, maxUrls: 1000, maxFiles: 4 },
    );
    assert.deepEqual(pathsOf(result.urls), ['/small-page/0', '/small-page/1', '/small-page/2']);
    assert.equal(result.files, 4);
    assert.equal(result.truncated, true);
    assert.match(result.errors[0]?.reason ?? '', /file cap 4 reached: this and 6 more sitemaps not fetched/);
  });

  it('refuses a gzip bomb at the decoded cap, without a crash', async () => {
    const result = await loadSitemaps(
      [`${base}/bomb.xml.gz`, `${base}/s1.xml`],
      { fetcher, config: config() },
      { maxDepth: 1, maxUrls: 100, maxFiles: 10, maxBytes: 1024 * 1024 },
    );
    assert.deepEqual(pathsOf(result.urls), ['/', '/a', '/b']);
    assert.match(result.errors[0]?.reason ?? '', /^too-large/);
  });

  it('records bad start URLs and fetch failures as errors', async () => {
    const result = await loadSitemaps(
      ['not a url', 'ftp://127.0.0.1/x.xml', `${base}/s1.xml`],
      { fetcher, config: config({ allowPrivate: false }) },
      DEFAULT_SITEMAP_CAPS,
    );
    assert.deepEqual(result.urls, []);
    assert.deepEqual(
      result.errors.map((error) => error.sitemap),
      ['not a url', 'ftp://127.0.0.1/x.xml', `${base}/s1.xml`],
    );
    assert.match(result.errors[2]?.reason ?? '', /^address-blocked: /);
  });

  it('keeps delayMs between two requests to the host', async () => {
    const from = requestTimes.length;
    await loadSitemaps(
      [`${base}/s1.xml`, `${base}/s3.xml`, `${base}/really-moved.xml`],
      { fetcher, config: config({ delayMs: 150 }) },
      DEFAULT_SITEMAP_CAPS,
    );
    const times = requestTimes.slice(from).map((entry) => entry.at);
    assert.equal(times.length, 3);
    for (let i = 1; i < times.length; i += 1) {
      assert.ok(
        (times[i] ?? 0) - (times[i - 1] ?? 0) >= 140,
        `gap ${(times[i] ?? 0) - (times[i - 1] ?? 0)} ms`,
      );
    }
  });
});

describe('sitemapsFromRobots over HTTP', () => {
  it('returns the Sitemap: lines, absolute and deduplicated', async () => {
    const found = await sitemapsFromRobots(base, { fetcher, config: config() });
    assert.deepEqual(found, [`${base}/sitemap_index.xml`, `${base}/relative-sitemap.xml`]);
    const loaded = await loadSitemaps(found, { fetcher, config: config() }, DEFAULT_SITEMAP_CAPS);
    assert.ok(loaded.urls.includes(`${base}/moved-page`));
    assert.equal(
      loaded.errors.find((error) => error.sitemap.endsWith('/relative-sitemap.xml'))?.reason,
      'HTTP 404',
    );
  });

  it('has none for a 4xx robots.txt and throws SitemapError for a 5xx one', async () => {
    const missing = await startHttpServer((_request, response) => {
      response.writeHead(404);
      response.end();
    });
    const failing = await startHttpServer((_request, response) => {
      response.writeHead(503);
      response.end();
    });
    try {
      assert.deepEqual(await sitemapsFromRobots(missing.url(), { fetcher, config: config() }), []);
      await assert.rejects(
        sitemapsFromRobots(new URL(failing.url()), { fetcher, config: config() }),
        (error) => {
          assert.ok(error instanceof SitemapError);
          assert.equal(error.code, 'unavailable');
          assert.match(error.message, /HTTP 503/);
          return true;
        },
      );
    } finally {
      await missing.close();
      await failing.close();
    }
  });
});
