/**
 * page-content.ts: content decoding under a byte cap and a ratio cap (decompression bombs), charset
 * decoding by the HTML Standard's sniffing so links on GBK / Shift_JIS / windows-1251 pages come out
 * as the right percent-encoded UTF-8 URLs, and the media type allow list of what is stored.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { MAX_CONTENT_CODINGS } from '../../lambdas/core/base/index.ts';
import { extractLinks } from '../../lambdas/core/content/index.ts';
import {
  DEFAULT_MAX_DECODE_RATIO,
  DEFAULT_STORE_TYPES,
  decodeContent,
  decodeHtml,
  decodeText,
  isStorableType,
  isTypePattern,
} from '../../lambdas/core/crawl/index.ts';
import { BOMB_PREFIX, bomb, encodeLegacy } from '../fixtures/hostile-server.ts';

const MiB = 1024 * 1024;
const html = Buffer.from(
  `<html><body>${'<p>hello crawler</p>'.repeat(500)}<a href="/next">n</a></body></html>`,
);

function assertDecoded(result: ReturnType<typeof decodeContent>, expected: Uint8Array): void {
  assert.ok(result.ok, result.ok ? '' : `${result.code}: ${result.reason}`);
  assert.deepEqual(Buffer.from(result.bytes), Buffer.from(expected));
}

describe('decodeContent: codings', () => {
  it('undoes gzip, x-gzip, deflate (zlib and raw), br and zstd, and stacks in reverse order', () => {
    assertDecoded(decodeContent(html, undefined, 10 * MiB), html);
    assertDecoded(decodeContent(html, 'identity', 10 * MiB), html);
    assertDecoded(decodeContent(gzipSync(html), 'gzip', 10 * MiB), html);
    assertDecoded(decodeContent(gzipSync(html), 'X-GZIP', 10 * MiB), html);
    assertDecoded(decodeContent(deflateSync(html), 'deflate', 10 * MiB), html);
    assertDecoded(decodeContent(deflateRawSync(html), 'deflate', 10 * MiB), html);
    assertDecoded(decodeContent(brotliCompressSync(html), 'br', 10 * MiB), html);
    assertDecoded(decodeContent(zstdCompressSync(html), 'zstd', 10 * MiB), html);
    assertDecoded(decodeContent(brotliCompressSync(gzipSync(html)), 'gzip, br', 10 * MiB), html);
    assertDecoded(decodeContent(gzipSync(html), 'identity, gzip', 10 * MiB), html);
  });

  it('decodes a stream cut short (a body truncated at the size cap) as far as it goes', () => {
    const long = Buffer.from(`${'<a href="/p">p</a>'.repeat(20_000)}<a href="/last">`);
    for (const [coding, encoded] of [
      ['gzip', gzipSync(long)],
      ['deflate', deflateSync(long)],
    ] as const) {
      const result = decodeContent(encoded.subarray(0, Math.floor(encoded.length / 2)), coding, 10 * MiB);
      assert.ok(result.ok, coding);
      assert.ok(
        result.bytes.length > 1000 && result.bytes.length < long.length,
        `${coding}: ${result.bytes.length}`,
      );
      assert.deepEqual(Buffer.from(result.bytes), long.subarray(0, result.bytes.length));
    }
  });

  it('reports unsupported, garbage and absurdly stacked codings as bad-encoding', () => {
    const unsupported = decodeContent(html, 'compress', MiB);
    assert.deepEqual(unsupported.ok ? undefined : unsupported.code, 'bad-encoding');
    assert.match(unsupported.ok ? '' : unsupported.reason, /unsupported content-encoding compress/);
    for (const coding of ['gzip', 'deflate', 'br']) {
      const garbage = decodeContent(Buffer.from('this is not compressed at all, no'), coding, MiB);
      assert.equal(garbage.ok ? 'ok' : garbage.code, 'bad-encoding', coding);
    }
    const stacked = decodeContent(
      html,
      Array(MAX_CONTENT_CODINGS + 1)
        .fill('gzip')
        .join(', '),
      MiB,
    );
    assert.equal(stacked.ok ? 'ok' : stacked.code, 'bad-encoding');
    assert.match(stacked.ok ? '' : stacked.reason, /stacked content-encodings/);
  });

  it('cuts an unencoded body longer than the cap to the cap', () => {
    const result = decodeContent(html, undefined, 100);
    assert.ok(result.ok);
    assert.equal(result.truncated, true);
    assert.deepEqual(Buffer.from(result.bytes), html.subarray(0, 100));
  });
});

describe('decodeContent: decompression bombs', () => {
  const bombs = new Map<string, Buffer>();
  before(async () => {
    for (const coding of ['gzip', 'deflate', 'br'] as const) bombs.set(coding, await bomb(coding, 64 * MiB));
    bombs.set('gzip-1g', await bomb('gzip', 1024 * MiB));
  });

  for (const coding of ['gzip', 'deflate', 'br'] as const) {
    it(`stops a ${coding} bomb at the ratio cap, allocating no more than that`, () => {
      const body = bombs.get(coding) ?? Buffer.alloc(0);
      assert.ok(body.length < 256 * 1024, `${coding} bomb is ${body.length} bytes`);
      const started = performance.now();
      const result = decodeContent(body, coding, 20 * MiB);
      assert.equal(result.ok ? 'ok' : result.code, 'decompression-bomb');
      const bound = Math.max(MiB, body.length * DEFAULT_MAX_DECODE_RATIO);
      assert.match(
        result.ok ? '' : result.reason,
        new RegExp(
          `^${coding} body of ${body.length} bytes decodes to more than ${bound} bytes \\(over 100:1\\)$`,
        ),
      );
      assert.ok(performance.now() - started < 2000);
    });

    it(`stops a ${coding} bomb at the decoded-bytes cap when that is lower`, () => {
      const result = decodeContent(bombs.get(coding) ?? Buffer.alloc(0), coding, 512 * 1024);
      assert.equal(result.ok ? 'ok' : result.code, 'decoded-too-large');
      assert.match(
        result.ok ? '' : result.reason,
        new RegExp(`^${coding} body decodes to more than 524288 bytes$`),
      );
    });
  }

  it('stops a 1 GiB multi-member gzip bomb at the decoded cap (ratio under the cap is not reached)', () => {
    const body = bombs.get('gzip-1g') ?? Buffer.alloc(0);
    assert.ok(body.length > 512 * 1024 && body.length < 2 * MiB, `${body.length}`);
    const before = process.memoryUsage().arrayBuffers;
    const result = decodeContent(body, 'gzip', 20 * MiB);
    assert.equal(result.ok ? 'ok' : result.code, 'decoded-too-large');
    assert.ok(process.memoryUsage().arrayBuffers - before < 200 * MiB, 'decoding held far more than the cap');
  });

  it('stops a bomb nested in two codings, measuring the ratio against the bytes received', async () => {
    const inner = await bomb('gzip', 64 * MiB);
    const outer = brotliCompressSync(inner);
    const result = decodeContent(outer, 'gzip, br', 20 * MiB);
    assert.equal(result.ok ? 'ok' : result.code, 'decompression-bomb');
  });

  it('lets small, very compressible pages through (the ratio counts only past the floor)', () => {
    const page = Buffer.concat([Buffer.from(BOMB_PREFIX), Buffer.alloc(900 * 1024, 0x20)]);
    const gz = gzipSync(page, { level: 9 });
    assert.ok(page.length / gz.length > DEFAULT_MAX_DECODE_RATIO);
    assertDecoded(decodeContent(gz, 'gzip', 20 * MiB), page);
  });

  it('takes the ratio and its floor as options', () => {
    const page = Buffer.alloc(200_000, 0x20);
    const gz = gzipSync(page);
    const tight = decodeContent(gz, 'gzip', 20 * MiB, { maxRatio: 10, ratioFloorBytes: 1000 });
    assert.equal(tight.ok ? 'ok' : tight.code, 'decompression-bomb');
    assertDecoded(decodeContent(gz, 'gzip', 20 * MiB, { maxRatio: 10_000, ratioFloorBytes: 1000 }), page);
  });

  it('a body that decodes to exactly the cap is complete', () => {
    const page = Buffer.alloc(300_000, 0x61);
    assertDecoded(decodeContent(gzipSync(page), 'gzip', 300_000, { ratioFloorBytes: 300_000 }), page);
  });
});

describe('decodeText / decodeHtml: links on legacy-encoded pages', () => {
  const pageUrl = 'http://example.test/dir/index.html';
  const urlOf = (path: string): string => new URL(encodeURI(path), pageUrl).href;
  const linksOf = (body: Uint8Array, contentType: string | undefined): string[] =>
    extractLinks(decodeText(body, contentType), pageUrl).links.map((link) => link.url);

  it('GBK, declared by the Content-Type header', () => {
    const body = encodeLegacy(
      '<html><head><title>中文页面</title></head><body><a href="/文档/页面.html">文档</a> <a href="新闻.html">新闻</a></body></html>',
      'gbk',
    );
    assert.deepEqual(linksOf(body, 'text/html; charset=GBK'), [
      'http://example.test/%E6%96%87%E6%A1%A3/%E9%A1%B5%E9%9D%A2.html',
      'http://example.test/dir/%E6%96%B0%E9%97%BB.html',
    ]);
  });

  it('GBK (as gb2312), declared by <meta charset>', () => {
    const body = encodeLegacy('<meta charset="gb2312"><a href="/文档/页面.html">文档</a>', 'gbk');
    assert.deepEqual(linksOf(body, 'text/html'), [urlOf('/文档/页面.html')]);
    assert.deepEqual(decodeHtml(body, 'text/html').encoding, 'gbk');
  });

  it('Shift_JIS, declared by <meta http-equiv=Content-Type>', () => {
    const body = encodeLegacy(
      '<html><head><meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"></head>' +
        '<body><a href="/日本語/ページ.html">ページ</a><a href="ソフト/表.html">表</a></body></html>',
      'shift_jis',
    );
    assert.deepEqual(linksOf(body, 'text/html'), [
      urlOf('/日本語/ページ.html'),
      urlOf('/dir/ソフト/表.html'),
    ]);
    assert.deepEqual(
      linksOf(body, 'text/html')[0],
      'http://example.test/%E6%97%A5%E6%9C%AC%E8%AA%9E/%E3%83%9A%E3%83%BC%E3%82%B8.html',
    );
    assert.deepEqual(decodeHtml(body, undefined), {
      text: decodeText(body, undefined),
      encoding: 'shift_jis',
      source: 'meta',
    });
  });

  it('windows-1251, declared by <meta charset>', () => {
    const body = encodeLegacy(
      '<!doctype html><html><head><meta charset="windows-1251"><title>Новости</title></head>' +
        '<body><a href="/новости/статья.html">статья</a></body></html>',
      'windows-1251',
    );
    assert.deepEqual(linksOf(body, 'text/html'), [
      'http://example.test/%D0%BD%D0%BE%D0%B2%D0%BE%D1%81%D1%82%D0%B8/%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F.html',
    ]);
  });

  it('the header wins over a contradicting meta', () => {
    const body = encodeLegacy('<meta charset="shift_jis"><a href="/文档/">x</a>', 'gbk');
    assert.deepEqual(linksOf(body, 'text/html; charset=gbk'), [urlOf('/文档/')]);
  });

  it('undeclared legacy bytes are read as windows-1252, never guessed into another script', () => {
    const body = encodeLegacy('<a href="/文档/">x</a>', 'gbk');
    assert.equal(decodeHtml(body, 'text/html').encoding, 'windows-1252');
    assert.notDeepEqual(linksOf(body, 'text/html'), [urlOf('/文档/')]);
  });

  it('undeclared UTF-8 is detected', () => {
    const body = Buffer.from('<a href="/文档/页面.html">x</a>');
    assert.deepEqual(linksOf(body, 'text/html'), [urlOf('/文档/页面.html')]);
  });

  it('a UTF-16 page with a BOM', () => {
    const body = Buffer.concat([
      Uint8Array.of(0xff, 0xfe),
      Buffer.from('<a href="/новости/">x</a>', 'utf16le'),
    ]);
    assert.deepEqual(linksOf(body, 'text/html'), [urlOf('/новости/')]);
  });

  it('a replacement-encoding page (ISO-2022-KR) yields no links', () => {
    assert.deepEqual(linksOf(Buffer.from('<a href="/x">x</a>'), 'text/html; charset=iso-2022-kr'), []);
  });
});

describe('isStorableType', () => {
  it('stores text, markup, data, PDF and images by default', () => {
    for (const type of [
      'text/html',
      'text/html; charset=gbk',
      'TEXT/HTML',
      'text/plain',
      'text/css',
      'text/csv',
      'application/xhtml+xml',
      'application/xml',
      'application/rss+xml',
      'application/atom+xml',
      'image/svg+xml',
      'application/json',
      'application/ld+json',
      'application/javascript',
      'application/pdf',
      'image/png',
      'image/jpeg',
      'image/webp',
    ]) {
      assert.equal(isStorableType(type, DEFAULT_STORE_TYPES), true, type);
    }
  });

  it('does not store audio, video, archives, fonts, binaries or untyped bytes by default', () => {
    for (const type of [
      'video/mp4',
      'audio/mpeg',
      'application/zip',
      'application/x-tar',
      'application/gzip',
      'font/woff2',
      'application/octet-stream',
      'application/x-msdownload',
      'application/vnd.ms-excel',
      undefined,
      '',
      'garbage',
      'text/',
      '/html',
      'text/html/x',
    ]) {
      assert.equal(isStorableType(type, DEFAULT_STORE_TYPES), false, String(type));
    }
  });

  it('matches patterns with wildcards in either part, * for everything', () => {
    assert.equal(isStorableType('video/mp4', ['video/*']), true);
    assert.equal(isStorableType('application/vnd.api+json', ['application/*+json']), true);
    assert.equal(isStorableType('application/json', ['application/*+json']), false);
    assert.equal(isStorableType('font/woff2', ['*/woff*']), true);
    assert.equal(isStorableType('application/zip', ['*']), true);
    assert.equal(isStorableType(undefined, ['*/*']), true);
    assert.equal(isStorableType(undefined, ['application/octet-stream']), true);
    assert.equal(isStorableType('text/html', []), false);
    assert.equal(isStorableType('text/html', ['Text/HTML']), true);
    assert.equal(isStorableType('text/htmlx', ['text/html']), false);
    assert.equal(isStorableType('text/html', ['text/htm.']), false, 'a dot is literal');
  });

  it('invalid patterns match nothing, and isTypePattern says which are valid', () => {
    for (const pattern of ['text/*', '*/*', '*', 'application/*+xml', 'image/svg+xml', 'Text/HTML']) {
      assert.equal(isTypePattern(pattern), true, pattern);
    }
    for (const pattern of ['', 'text', 'text/', '/html', 'text/html; charset=utf-8', 'a/b/c', '.*']) {
      assert.equal(isTypePattern(pattern), false, pattern);
      assert.equal(isStorableType('text/html', [pattern]), false, pattern);
    }
    for (const pattern of DEFAULT_STORE_TYPES) assert.equal(isTypePattern(pattern), true, pattern);
  });
});
