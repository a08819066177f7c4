/**
 * `--sitemap`: pages reachable only through a sitemap are crawled, and sitemap URLs go through the
 * same scope, dedup and robots rules as links.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { runCrawl, tempDir } from '../fixtures/run-cli.ts';
import { html, type Route, startSite, type TestSite } from '../fixtures/site.ts';

function xml(body: string | Uint8Array, type = 'application/xml'): Route {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': type });
    response.end(body);
  };
}

describe('crawler crawl --sitemap', () => {
  let site: TestSite;
  let outside: TestSite;
  const dirs: Array<{ remove(): Promise<void> }> = [];

  before(async () => {
    outside = await startSite({});
    // The site looks routes up per request, so they can be filled in once its origin is known.
    const routes: Record<string, Route> = {};
    site = await startSite(routes);
    const { origin } = site;
    const urlset = (urls: string[]) =>
      `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls
        .map((url) => `<url><loc>${url}</loc></url>`)
        .join('')}</urlset>`;
    Object.assign(routes, {
      '/robots.txt': xml(
        `User-agent: *\nDisallow: /private/\nSitemap: ${origin}/sitemap-index.xml\n`,
        'text/plain',
      ),
      '/': html('<a href="/linked">linked</a>'),
      '/linked': html('linked page'),
      '/orphan': html('<a href="/linked">only in the sitemap</a>'),
      '/orphan-gz': html('only in the gzip sitemap'),
      '/private/secret': html('never fetched'),
      '/sitemap-index.xml': xml(
        `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${origin}/sitemap-a.xml</loc></sitemap><sitemap><loc>${origin}/sitemap-b.xml.gz</loc></sitemap></sitemapindex>`,
      ),
      '/sitemap-a.xml': xml(
        urlset([
          `${origin}/orphan`,
          `${origin}/linked`,
          `${origin}/private/secret`,
          `${outside.origin}/elsewhere`,
        ]),
      ),
      '/sitemap-b.xml.gz': xml(
        gzipSync(urlset([`${origin}/orphan-gz`, `${origin}/orphan?utm_source=sitemap`])),
        'application/gzip',
      ),
    });
  });
  after(async () => {
    await site.close();
    await outside.close();
    for (const dir of dirs) await dir.remove();
  });

  it('--sitemap auto follows robots.txt Sitemap: lines and sitemap indexes (plain and gzip)', async () => {
    const out = await tempDir();
    dirs.push(out);
    const run = await runCrawl(
      [`${site.origin}/`],
      ['--allow-private', '--delay', '0', '--sitemap', 'auto', '--quiet'],
      {
        outDir: out.path,
      },
    );
    const byUrl = new Map(run.results.map((result) => [result.url, result]));
    assert.equal(byUrl.get(`${site.origin}/orphan`)?.outcome, 'fetched');
    assert.equal(byUrl.get(`${site.origin}/orphan-gz`)?.outcome, 'fetched');
    assert.equal(byUrl.get(`${site.origin}/linked`)?.outcome, 'fetched');
    assert.equal(byUrl.get(`${site.origin}/private/secret`)?.outcome, 'disallowed');
    assert.equal(byUrl.get(`${outside.origin}/elsewhere`)?.outcome, 'skipped');
    assert.equal(byUrl.get(`${outside.origin}/elsewhere`)?.code, 'scope');
    assert.equal(
      run.results.length,
      new Set(run.results.map((result) => result.url)).size,
      'one result per URL',
    );
    for (const path of ['/orphan', '/orphan-gz', '/linked', '/'])
      assert.equal(site.hits.get(path), 1, `${path} fetched once`);
    assert.equal(site.hits.get('/private/secret'), undefined);
    assert.equal(site.hits.get('/orphan?utm_source=sitemap'), undefined, 'deduplicated by normalization');
    assert.equal(outside.requests.length, 0, 'the out-of-scope host was never contacted');
  });

  it('--sitemap URL reads that sitemap only', async () => {
    const out = await tempDir();
    dirs.push(out);
    const before = site.hits.get('/orphan-gz') ?? 0;
    const run = await runCrawl(
      [`${site.origin}/linked`],
      ['--allow-private', '--delay', '0', '--sitemap', `${site.origin}/sitemap-b.xml.gz`, '--quiet'],
      { outDir: out.path },
    );
    const urls = run.results.map((result) => result.url).sort();
    // sitemap-b lists /orphan-gz and /orphan?utm_source=sitemap, which normalizes to /orphan.
    assert.deepEqual(urls, [`${site.origin}/linked`, `${site.origin}/orphan`, `${site.origin}/orphan-gz`]);
    assert.equal(site.hits.get('/orphan-gz'), before + 1);
  });
});
