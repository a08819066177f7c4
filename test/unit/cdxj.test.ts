// The results index line: SURT keys agree with warcio's getSurt, and the CDXJ fields of a line agree
// with what warcio's own CDX indexer computes from the WARC record the line points at.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CDXIndexer, WARCParser } from 'warcio';
import { getSurt } from 'warcio/utils';
import { cdxTimestamp, indexLine, mimeType, sha1HexToDigest, surt } from '../../lambdas/core/cdxj.ts';
import type { CrawlResult } from '../../lambdas/core/result.ts';
import { WarcFileBuilder } from '../../lambdas/core/warc.ts';

const SURT_CASES = [
  'http://example.com/',
  'https://example.com/',
  'http://www.example.com/a/b.html',
  'http://www2.example.com/',
  'http://wwwexample.com/',
  'http://example.com:8080/path',
  'https://example.com:443/path',
  'http://example.com/path?b=2&a=1',
  'http://example.com/path?b=2&a=1&a=0&B=3',
  'http://example.com/path?',
  'http://example.com/path?a=1&&c=3&',
  'http://example.com/path?q=%2F%7e+x',
  'http://example.com/Path/UPPER?Q=Mixed',
  'http://user:pass@example.com/private',
  'http://example.com/page#fragment',
  'http://example.com/page?x=1#fragment',
  'http://sub.domain.example.co.uk/x',
  'http://127.0.0.1:4000/a?z&y',
  'http://[::1]:8080/v6',
  'http://xn--bcher-kva.de/',
  'http://example.com/%E2%82%AC/%20space',
  'http://example.com',
  'ftp://example.com/file',
  'not a url',
  'http://',
];

describe('surt', () => {
  for (const url of SURT_CASES) {
    it(`agrees with warcio getSurt: ${url}`, () => {
      assert.equal(surt(url), getSurt(url));
    });
  }

  it('drops scheme, www. and userinfo, reverses the host, keeps the port, sorts the query', () => {
    assert.equal(surt('http://www.Example.com:8080/A/b?z=1&a=2#f'), 'com,example:8080)/a/b?a=2&z=1');
    assert.equal(surt('https://a.b.example.org/'), 'org,example,b,a)/');
  });

  it('drops an upper-case WWW. too (warcio strips it only before lower-casing)', () => {
    assert.equal(surt('http://WWW.example.com/'), 'com,example)/');
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
