import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { decodeContent, inflateCapped, isGzip } from '../../lambdas/core/base/index.ts';
import {
  parseSitemap,
  SITEMAP_MAX_BYTES,
  SITEMAP_MAX_URLS,
  SitemapError,
} from '../../lambdas/core/frontier/index.ts';

const urlset = (locs: string[], extra = ''): string =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${extra}\n${locs
    .map((loc) => `  <url><loc>${loc}</loc><lastmod>2024-01-01</lastmod><priority>0.5</priority></url>`)
    .join('\n')}\n</urlset>\n`;

function expectError(fn: () => unknown, code: string, reason?: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof SitemapError, `expected a SitemapError, got ${String(error)}`);
    assert.equal(error.code, code);
    if (reason) assert.match(error.message, reason);
    return true;
  });
}

describe('parseSitemap: urlset and index', () => {
  it('reads <loc> of each <url>, trimmed, in order', () => {
    const result = parseSitemap(
      urlset(['https://a.example/', '\n   https://a.example/b?x=1  \n', 'https://a.example/c']),
    );
    assert.deepEqual(result, {
      kind: 'urlset',
      urls: ['https://a.example/', 'https://a.example/b?x=1', 'https://a.example/c'],
      truncated: false,
      skipped: 0,
    });
  });

  it('decodes entities and CDATA, and serialises URLs the WHATWG way', () => {
    const result = parseSitemap(
      urlset([
        'https://a.example/?a=1&amp;b=2',
        'https://a.example/&#x41;&#66;&lt;&gt;&quot;&apos;',
        '<![CDATA[https://a.example/cdata?x=1&y=2]]>',
        'HTTPS://A.EXAMPLE',
        'https://a.example/caf\u00e9 menu',
      ]),
    );
    assert.equal(result.kind, 'urlset');
    assert.deepEqual(result.kind === 'urlset' ? result.urls : [], [
      'https://a.example/?a=1&b=2',
      "https://a.example/AB%3C%3E%22'",
      'https://a.example/cdata?x=1&y=2',
      'https://a.example/',
      'https://a.example/caf%C3%A9%20menu',
    ]);
  });

  it('reads a sitemap index', () => {
    const xml = `<?xml version="1.0"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://a.example/s1.xml</loc><lastmod>2024-01-01</lastmod></sitemap>
  <sitemap>
    <loc>https://a.example/s2.xml.gz</loc>
  </sitemap>
</sitemapindex>`;
    assert.deepEqual(parseSitemap(xml), {
      kind: 'index',
      sitemaps: ['https://a.example/s1.xml', 'https://a.example/s2.xml.gz'],
      truncated: false,
      skipped: 0,
    });
  });

  it('ignores namespace prefixes, a BOM, comments, extensions and <loc> outside an entry', () => {
    const xml = `\uFEFF<?xml version="1.0"?>
<!-- generated -->
<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <sm:loc>https://a.example/not-in-url</sm:loc>
  <sm:url>
    <sm:loc>https://a.example/page</sm:loc>
    <image:image><image:loc>https://a.example/img.png</image:loc></image:image>
  </sm:url>
  <sm:url/>
</sm:urlset>`;
    assert.deepEqual(parseSitemap(xml), {
      kind: 'urlset',
      urls: ['https://a.example/page'],
      truncated: false,
      skipped: 0,
    });
    assert.deepEqual(parseSitemap(new TextEncoder().encode(xml)), parseSitemap(xml));
  });

  it('skips and counts locs that are empty, not absolute http(s) URLs, or too long', () => {
    const long = `https://a.example/${'x'.repeat(100)}`;
    const result = parseSitemap(
      urlset([
        '',
        '/relative',
        'mailto:x@a.example',
        'javascript:alert(1)',
        'ftp://a.example/f',
        'http://[bad',
        long,
        'https://a.example/ok',
      ]),
      { maxUrlLength: 100 },
    );
    assert.deepEqual(result, {
      kind: 'urlset',
      urls: ['https://a.example/ok'],
      truncated: false,
      skipped: 7,
    });
  });

  it('keeps a custom DTD entity unexpanded (no entity expansion attacks)', () => {
    const xml = `<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>
<urlset><url><loc>https://a.example/&b;</loc></url></urlset>`;
    const result = parseSitemap(xml);
    assert.deepEqual(result.kind === 'urlset' ? result.urls : [], ['https://a.example/&b;']);
  });
});

describe('parseSitemap: gzip and caps', () => {
  it('recognises gzip by its magic bytes', () => {
    const xml = urlset(['https://a.example/gz']);
    const gz = gzipSync(Buffer.from(xml));
    assert.ok(isGzip(gz));
    assert.ok(!isGzip(Buffer.from(xml)));
    assert.deepEqual(parseSitemap(gz), parseSitemap(xml));
  });

  it('stops inflating at the decoded cap (gzip bomb) with too-large', () => {
    const bomb = gzipSync(Buffer.alloc(16 * 1024 * 1024, 0x20));
    assert.ok(bomb.length < 100 * 1024);
    expectError(() => parseSitemap(bomb, { maxBytes: 1024 * 1024 }), 'too-large', /1048576 bytes/);
  });

  it('caps a gzip bomb at 50 MiB by default', () => {
    assert.equal(SITEMAP_MAX_BYTES, 50 * 1024 * 1024);
    const bomb = gzipSync(Buffer.alloc(SITEMAP_MAX_BYTES + 1, 0x20));
    expectError(() => parseSitemap(bomb), 'too-large');
  });

  it('rejects plain input over the cap', () => {
    const xml = urlset(['https://a.example/'], ' '.repeat(2000));
    expectError(() => parseSitemap(xml, { maxBytes: 1000 }), 'too-large');
    expectError(() => parseSitemap(Buffer.from(xml), { maxBytes: 1000 }), 'too-large');
    expectError(() => parseSitemap('\u00e9'.repeat(600), { maxBytes: 1000 }), 'too-large');
  });

  it('reports corrupt gzip as bad-encoding and keeps what a cut stream held', () => {
    const gz = gzipSync(Buffer.from(urlset(['https://a.example/1', 'https://a.example/2'])));
    const corrupt = Buffer.from(gz);
    corrupt[3] = 0xff; // reserved flag bits set: not a valid gzip header
    expectError(() => parseSitemap(corrupt), 'bad-encoding');
    // A cut stream: the document is then truncated, which is malformed.
    expectError(() => parseSitemap(gz.subarray(0, gz.length - 30)), 'malformed', /ends inside/);
  });

  it('keeps at most 50,000 entries per file and says it truncated', () => {
    assert.equal(SITEMAP_MAX_URLS, 50_000);
    const locs = Array.from({ length: SITEMAP_MAX_URLS + 5 }, (_, i) => `https://a.example/${i}`);
    const result = parseSitemap(urlset(locs));
    assert.equal(result.kind, 'urlset');
    if (result.kind !== 'urlset') return;
    assert.equal(result.urls.length, SITEMAP_MAX_URLS);
    assert.equal(result.urls.at(-1), `https://a.example/${SITEMAP_MAX_URLS - 1}`);
    assert.equal(result.truncated, true);
    const small = parseSitemap(urlset(locs.slice(0, 10)), { maxUrls: 3 });
    assert.deepEqual(small.kind === 'urlset' ? [small.urls.length, small.truncated] : [], [3, true]);
  });
});

describe('parseSitemap: malformed input is an error with a reason', () => {
  it('a document that ends inside an element (truncated)', () => {
    expectError(
      () => parseSitemap('<urlset><url><loc>https://a.example/</loc></url>'),
      'malformed',
      /ends inside <urlset>/,
    );
  });

  it('an element closed out of order', () => {
    expectError(
      () => parseSitemap('<urlset><url><loc>https://a.example/</url></loc></urlset>'),
      'malformed',
      /<loc> closed out of order/,
    );
  });

  it('a root that is not urlset or sitemapindex (HTML, RSS)', () => {
    expectError(
      () => parseSitemap('<!DOCTYPE html><html><body><a href="/x">x</a></body></html>'),
      'not-a-sitemap',
      /<html>/,
    );
    expectError(() => parseSitemap('<rss version="2.0"><channel></channel></rss>'), 'not-a-sitemap', /<rss>/);
  });

  it('no XML at all', () => {
    expectError(() => parseSitemap(''), 'not-a-sitemap', /no XML root/);
    expectError(() => parseSitemap('https://a.example/1\nhttps://a.example/2'), 'not-a-sitemap');
    expectError(() => parseSitemap(new Uint8Array([0xff, 0xfe, 0x00, 0x01, 0x02])), 'not-a-sitemap');
  });

  it('never throws anything but a SitemapError on random bytes', () => {
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = '<>/!?[]&;#"\'= urlsetlocxmindx:CDATA-\n';
    for (let round = 0; round < 300; round += 1) {
      const text = Array.from({ length: 80 }, () => alphabet[Math.floor(random() * alphabet.length)]).join(
        '',
      );
      try {
        parseSitemap(`<urlset>${text}`);
      } catch (error) {
        assert.ok(error instanceof SitemapError, String(error));
      }
    }
  });
});

describe('decodeContent', () => {
  const text = 'User-agent: *\nDisallow: /private\n'.repeat(50);
  const bytes = Buffer.from(text);

  it('undoes gzip, x-gzip, deflate (zlib and raw), br and identity', async () => {
    const cases: Array<[string | undefined, Uint8Array]> = [
      [undefined, bytes],
      ['identity', bytes],
      ['gzip', gzipSync(bytes)],
      ['X-Gzip', gzipSync(bytes)],
      ['deflate', deflateSync(bytes)],
      ['deflate', deflateRawSync(bytes)],
      ['br', brotliCompressSync(bytes)],
      ['deflate, gzip', gzipSync(deflateSync(bytes))],
    ];
    for (const [encoding, body] of cases) {
      const decoded = await decodeContent(body, encoding, 1024 * 1024);
      assert.equal(Buffer.from(decoded.bytes).toString(), text, String(encoding));
      assert.equal(decoded.truncated, false);
      assert.equal(decoded.error, undefined);
    }
  });

  it('stops at the cap and says so', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const started = performance.now();
    const decoded = await decodeContent(bomb, 'gzip', 100_000);
    assert.equal(decoded.bytes.length, 100_000);
    assert.equal(decoded.truncated, true);
    assert.ok(performance.now() - started < 2000);
    const plain = await decodeContent(bytes, undefined, 10);
    assert.deepEqual([plain.bytes.length, plain.truncated], [10, true]);
    const exact = await inflateCapped(gzipSync(bytes), 'gzip', bytes.length);
    assert.deepEqual([exact.bytes.length, exact.truncated], [bytes.length, false]);
  });

  it('reports an unknown coding or corrupt data, keeping what decoded', async () => {
    const unknown = await decodeContent(bytes, 'compress', 1000);
    assert.match(unknown.error ?? '', /unsupported content-encoding compress/);
    const gz = gzipSync(bytes);
    const cut = await decodeContent(gz.subarray(0, gz.length - 8), 'gzip', 1_000_000);
    assert.equal(Buffer.from(cut.bytes).toString(), text);
    const garbage = await decodeContent(Buffer.from('not gzip at all'), 'gzip', 1000);
    assert.match(garbage.error ?? '', /gzip data cannot be decoded/);
    assert.equal(garbage.bytes.length, 0);
  });
});
