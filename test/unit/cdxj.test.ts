// The results index line: its SURT key is the one pywb computes, and the CDXJ fields of a line agree
// with what warcio's own CDX indexer computes from the WARC record the line points at.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CDXIndexer, WARCParser } from 'warcio';
import { getSurt } from 'warcio/utils';
import {
  cdxTimestamp,
  indexLine,
  mimeType,
  sha1HexToDigest,
  WarcFileBuilder,
} from '../../lambdas/core/archive/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { surt } from '../../lambdas/core/urls/index.ts';

// The key pywb computes (the Python `surt` library, test/unit/surt.test.ts has its own cases): where
// warcio's simpler getSurt answers differently, its answer is in the third column.
const SURT_CASES: ReadonlyArray<readonly [url: string, pywb: string, warcio?: string]> = [
  ['http://example.com/', 'com,example)/'],
  ['https://example.com/', 'com,example)/'],
  ['http://www.example.com/a/b.html', 'com,example)/a/b.html'],
  ['http://www2.example.com/', 'com,example)/'],
  ['http://wwwexample.com/', 'com,wwwexample)/'],
  ['http://example.com:8080/path', 'com,example:8080)/path'],
  ['https://example.com:443/path', 'com,example)/path'],
  ['http://example.com/dir/', 'com,example)/dir', 'com,example)/dir/'],
  ['http://example.com/path?b=2&a=1', 'com,example)/path?a=1&b=2'],
  ['http://example.com/path?b=2&a=1&a=0&B=3', 'com,example)/path?a=0&a=1&b=2&b=3'],
  ['http://example.com/path?', 'com,example)/path'],
  ['http://example.com/path?a=1&&c=3&', 'com,example)/path?&&a=1&c=3'],
  ['http://example.com/path?q=%2F%7e+x', 'com,example)/path?q=/~+x', 'com,example)/path?q=%2f%7e+x'],
  [
    'http://example.com/s?jsessionid=0123456789abcdef0123456789ABCDEF&a=1',
    'com,example)/s?a=1',
    'com,example)/s?a=1&jsessionid=0123456789abcdef0123456789abcdef',
  ],
  ['http://example.com/Path/UPPER?Q=Mixed', 'com,example)/path/upper?q=mixed'],
  ['http://user:pass@example.com/private', 'com,example)/private'],
  ['http://example.com/page#fragment', 'com,example)/page'],
  ['http://example.com/page?x=1#fragment', 'com,example)/page?x=1'],
  ['http://sub.domain.example.co.uk/x', 'uk,co,example,domain,sub)/x'],
  ['http://127.0.0.1:4000/a?z&y', '1,0,0,127:4000)/a?y&z'],
  ['http://[::1]:8080/v6', '::1:8080)/v6', '[::1]:8080)/v6'],
  ['http://xn--bcher-kva.de/', 'de,xn--bcher-kva)/'],
  ['http://example.com/%E2%82%AC/%20space', 'com,example)/%e2%82%ac/%20space'],
  ['http://example.com', 'com,example)/'],
  ['http://www.Example.com:8080/A/b?z=1&a=2#f', 'com,example:8080)/a/b?a=2&z=1'],
  ['https://a.b.example.org/', 'org,example,b,a)/'],
  ['http://WWW.example.com/', 'com,example)/', 'com,example,www)/'],
  ['ftp://example.com/file', 'com,example)/file', 'ftp://example.com/file'],
  ['not a url', 'not%20a%20url)/', 'not a url'],
  ['http://', 'http:', 'http://'],
];

describe('urlkey (surt)', () => {
  for (const [url, pywb, warcio] of SURT_CASES) {
    it(`is the key pywb computes: ${url}`, () => {
      assert.equal(surt(url), pywb);
      assert.equal(getSurt(url), warcio ?? pywb, "warcio's getSurt answers as the third column says");
    });
  }

  it('is the key of the result URL on the index line', () => {
    assert.equal(
      indexLine(baseResult({ url: 'https://www.example.com/docs/?b=1&a=2' })).urlkey,
      'com,example)/docs?a=2&b=1',
    );
  });
});

describe('cdxTimestamp', () => {
  it('is 14 digits of UTC', () => {
    assert.equal(cdxTimestamp('2024-05-01T12:34:56.789Z'), '20240501123456');
    assert.equal(cdxTimestamp('2024-05-01T14:34:56+02:00'), '20240501123456');
  });
  it('keeps the digits of an unparsable time', () => {
    assert.equal(cdxTimestamp('at 2024.05.01 12h'), '20240501120000');
    assert.equal(cdxTimestamp('garbage'), '00000000000000');
  });
});

describe('mimeType and digest', () => {
  it('strips parameters and lower-cases', () => {
    assert.equal(mimeType('Text/HTML; charset=UTF-8'), 'text/html');
    assert.equal(mimeType('application/json'), 'application/json');
    assert.equal(mimeType(''), undefined);
    assert.equal(mimeType(' ; x=1'), undefined);
    assert.equal(mimeType(undefined), undefined);
  });
  it('converts a hex SHA-1 to sha1:BASE32', () => {
    // sha1("hello")
    assert.equal(
      sha1HexToDigest('aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d'),
      'sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N',
    );
    assert.equal(
      sha1HexToDigest('AAF4C61DDCC5E8A2DABEDE0F3B482CD9AEA9434D'),
      'sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N',
    );
    assert.equal(sha1HexToDigest('not-hex'), undefined);
    assert.equal(sha1HexToDigest(undefined), undefined);
  });
});

function baseResult(overrides: Partial<CrawlResult>): CrawlResult {
  return {
    v: 1,
    crawlId: 'c1',
    key: 'k'.repeat(64),
    url: 'http://example.com/',
    outcome: 'fetched',
    bytes: 0,
    fetchedAt: '2024-05-01T12:00:00.123Z',
    ms: 5,
    depth: 0,
    outlinks: 0,
    ...overrides,
  };
}

describe('indexLine', () => {
  it('is the result record plus the CDXJ fields, urlkey and timestamp first', () => {
    const result = baseResult({
      url: 'http://www.example.com/a?b=1&a=2',
      status: 200,
      contentType: 'text/html; charset=utf-8',
      bytes: 5,
      sha1: 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d',
      warc: { key: 'warc/c1/2024-05-01/inv.warc.gz', offset: 316, length: 388 },
    });
    const line = indexLine(result);
    assert.deepEqual(Object.keys(line).slice(0, 2), ['urlkey', 'timestamp']);
    assert.deepEqual(line, {
      ...result,
      urlkey: 'com,example)/a?a=2&b=1',
      timestamp: '20240501120000',
      mime: 'text/html',
      digest: 'sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N',
      filename: 'warc/c1/2024-05-01/inv.warc.gz',
      offset: 316,
      length: 388,
    });
  });

  it('has no WARC fields for a URL without a stored response', () => {
    const line = indexLine(baseResult({ outcome: 'skipped', code: 'out-of-scope', reason: 'x' }));
    for (const field of ['mime', 'digest', 'filename', 'offset', 'length', 'status'])
      assert.equal(field in line, false, field);
    assert.equal(line.urlkey, 'com,example)/');
  });

  it("agrees with warcio's CDX indexer on the record it points at", async () => {
    const filename = 'warc/c1/2024-05-01/inv.warc.gz';
    const builder = new WarcFileBuilder({ filename: 'inv.warc.gz' });
    builder.addWarcinfo({ software: 'test' }, new Date('2024-05-01T12:00:00Z'));
    // URLs whose key warcio's getSurt gets right too (see SURT_CASES for where it does not).
    const pages = [
      { url: 'http://www.Example.com:8080/A/b?z=1&a=2', type: 'text/html; charset=utf-8', status: 200 },
      { url: 'https://example.org/data.json', type: 'application/json', status: 200 },
      { url: 'http://example.net/missing?q=x', type: 'text/plain', status: 404 },
    ];
    const results: CrawlResult[] = [];
    for (const [i, page] of pages.entries()) {
      const date = new Date(Date.UTC(2024, 4, 1, 12, 0, i, 250));
      const body = new TextEncoder().encode(`body ${i} of ${page.url}`);
      const written = builder.addResponse({
        targetUri: page.url,
        date,
        httpVersion: '1.1',
        status: page.status,
        statusText: page.status === 200 ? 'OK' : 'Not Found',
        headers: [
          ['Content-Type', page.type],
          ['Content-Length', String(body.byteLength)],
        ],
        body,
      });
      builder.addRequest({
        targetUri: page.url,
        date,
        requestLine: `GET ${new URL(page.url).pathname}${new URL(page.url).search} HTTP/1.1`,
        headers: [['Host', new URL(page.url).host]],
        concurrentTo: written.recordId,
      });
      results.push(
        baseResult({
          url: page.url,
          status: page.status,
          outcome: page.status === 200 ? 'fetched' : 'failed',
          contentType: page.type,
          bytes: body.byteLength,
          sha1: written.payloadSha1Hex,
          fetchedAt: date.toISOString(),
          warc: { key: filename, offset: written.offset, length: written.length },
        }),
      );
    }
    const indexer = new CDXIndexer({ format: 'cdxj' });
    const theirs: Array<Record<string, unknown>> = [];
    for await (const entry of indexer.iterRecords(new WARCParser([builder.toBytes()]), filename))
      theirs.push(entry);
    assert.equal(theirs.length, pages.length);
    for (const [i, result] of results.entries()) {
      const ours = indexLine(result);
      const their = theirs[i]!;
      assert.equal(ours.urlkey, their.urlkey);
      assert.equal(ours.timestamp, their.timestamp);
      assert.equal(ours.mime, String(their.mime).toLowerCase());
      assert.equal(ours.status, Number(their.status));
      assert.equal(ours.digest, `sha1:${String(their.digest)}`);
      assert.equal(ours.filename, their.filename);
      assert.equal(ours.offset, Number(their.offset));
      assert.equal(ours.length, Number(their.length));
    }
  });
});
