/**
 * Re-crawl (issue 26): what an earlier capture becomes on a URL item, the conditional request it
 * makes, how a new capture compares, and the WARC revisit records that stand for unchanged captures,
 * read back with warcio.js (and checked the way `warcio test` checks records).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { WARCParser } from 'warcio';
import { MAX_DIFF_EDITS, markdownDiff } from '../../cli/markdown-diff.ts';
import { formatSha1, indexLine, storeWarcFiles, WarcFileBuilder } from '../../lambdas/core/archive/index.ts';
import { RECRAWL_LIMITS } from '../../lambdas/core/base/index.ts';
import {
  changeOf,
  conditionalHeaders,
  isDue,
  nextInterval,
  type PageResponse,
  type PriorCapture,
  priorOf,
  revisitProfileOf,
} from '../../lambdas/core/crawl/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { MemoryBlobs } from '../fakes/blobs.ts';
import { assertLinear } from '../fixtures/linear-time.ts';
import { verifyWarc } from '../fixtures/warc-verify.ts';

const AT = new Date('2026-12-04T10:00:00.000Z');
const EARLIER = '2026-11-04T09:00:00.000Z';
const BODY = Buffer.from('<html><body><p>The same page.</p></body></html>');
const SHA1 = createHash('sha1').update(BODY).digest('hex');
const URL_A = 'http://127.0.0.1:8080/a';

function line(extra: Partial<CrawlResult> = {}): CrawlResult {
  return {
    v: 1,
    crawlId: 'c-earlier',
    key: 'k',
    url: URL_A,
    outcome: 'fetched',
    status: 200,
    bytes: BODY.byteLength,
    sha1: SHA1,
    warc: { key: 'warc/c-earlier/2026-11-04/x.warc.gz', offset: 500, length: 900 },
    content: { key: 'content/c-earlier/2026-11-04/x.jsonl.gz', offset: 0, length: 300 },
    fetchedAt: EARLIER,
    ms: 3,
    depth: 2,
    outlinks: 4,
    etag: '"v1"',
    lastModified: 'Wed, 04 Nov 2026 09:00:00 GMT',
    ...extra,
  };
}

const PRIOR: PriorCapture = priorOf(line())!;

function response(status: number, body: Uint8Array, headers: Array<[string, string]> = []): PageResponse {
  return {
    url: URL_A,
    requestLine: 'GET /a HTTP/1.1',
    requestHeaders: [
      ['host', '127.0.0.1:8080'],
      ['if-none-match', '"v1"'],
    ],
    httpVersion: '1.1',
    status,
    statusText: status === 304 ? 'Not Modified' : 'OK',
    headers: [['Content-Type', 'text/html'], ...headers],
    body,
    truncated: undefined,
    remoteAddress: '127.0.0.1',
    startedAt: AT,
    elapsedMs: 2,
  };
}

function result(status: number, bytes: number): CrawlResult {
  return {
    ...line(),
    crawlId: 'c-now',
    status,
    bytes,
    fetchedAt: AT.toISOString(),
    warc: undefined,
    content: undefined,
    sha1: undefined,
    etag: undefined,
    lastModified: undefined,
  };
}

/** Every record of a WARC file as warcio.js reads it: its WARC headers, and its HTTP head if any. */
async function warcioRecords(bytes: Uint8Array) {
  const records: Array<{
    headers: { get(name: string): string | undefined };
    http: string | undefined;
    length: number;
  }> = [];
  for await (const record of new WARCParser([bytes])) {
    await record.readFully();
    const fields = record.warcHeaders.headers;
    records.push({
      // warcio.js keeps the names lower-cased.
      headers: { get: (name) => fields.get(name.toLowerCase()) ?? undefined },
      http: record.httpHeaders ? `${record.httpHeaders.statusline}` : undefined,
      length: Number(fields.get('content-length')),
    });
  }
  return records;
}

describe('priorOf: an earlier result line as a re-crawl carries it', () => {
  it('keeps what the conditional request and the revisit record need', () => {
    assert.deepEqual(PRIOR, {
      sha1: SHA1,
      uri: URL_A,
      date: EARLIER,
      warc: line().warc,
      content: line().content,
      etag: '"v1"',
      lastModified: 'Wed, 04 Nov 2026 09:00:00 GMT',
    });
  });

  it('refers a revisit line to the capture that holds the payload, so chains of re-crawls stay one hop', () => {
    const original = { key: 'warc/c-first/x.warc.gz', offset: 10, length: 2000 };
    const prior = priorOf(
      line({
        revisit: {
          profile: 'server-not-modified',
          uri: `${URL_A}?old`,
          date: '2026-10-01T00:00:00.000Z',
          warc: original,
        },
      }),
    );
    assert.deepEqual(
      [prior?.uri, prior?.date, prior?.warc],
      [`${URL_A}?old`, '2026-10-01T00:00:00.000Z', original],
    );
  });

  it('a URL with no stored response is not due again as a capture (failed, skipped, no digest)', () => {
    assert.equal(priorOf(line({ outcome: 'failed', status: 404 })), undefined);
    assert.equal(priorOf(line({ outcome: 'skipped' })), undefined);
    assert.equal(priorOf(line({ sha1: undefined })), undefined);
    assert.equal(priorOf(line({ warc: undefined })), undefined);
  });

  it('drops a validator longer than RECRAWL_LIMITS.validatorChars, and an unreadable date ends the prior', () => {
    const long = 'x'.repeat(RECRAWL_LIMITS.validatorChars + 1);
    const prior = priorOf(line({ etag: long, lastModified: long }));
    assert.equal(prior?.etag, undefined);
    assert.equal(prior?.lastModified, undefined);
    assert.equal(priorOf(line({ fetchedAt: 'not a date' })), undefined);
  });
});

describe('conditionalHeaders', () => {
  it('sends ETag as If-None-Match and Last-Modified as If-Modified-Since', () => {
    assert.deepEqual(conditionalHeaders(PRIOR), {
      'if-none-match': '"v1"',
      'if-modified-since': 'Wed, 04 Nov 2026 09:00:00 GMT',
    });
    assert.deepEqual(conditionalHeaders({ ...PRIOR, etag: undefined, lastModified: undefined }), {});
  });

  it('never sends a validator that would break a request header (control characters)', () => {
    const hostile = { ...PRIOR, etag: '"a"\r\nX-Injected: 1', lastModified: 'Wed\u0000' };
    assert.deepEqual(conditionalHeaders(hostile), {});
  });
});

describe('changeOf and revisitProfileOf', () => {
  const other = 'f'.repeat(40);
  it('a 304 is same, a server-not-modified revisit', () => {
    assert.equal(changeOf(304, other, PRIOR), 'same');
    assert.equal(revisitProfileOf(304, other, PRIOR), 'server-not-modified');
  });
  it('the earlier payload again is same, an identical-payload-digest revisit', () => {
    assert.equal(changeOf(200, SHA1, PRIOR), 'same');
    assert.equal(revisitProfileOf(200, SHA1, PRIOR), 'identical-payload-digest');
  });
  it('another payload is changed, a full response', () => {
    assert.equal(changeOf(200, other, PRIOR), 'changed');
    assert.equal(revisitProfileOf(200, other, PRIOR), undefined);
  });
  it('404 and 410 are removed, never revisits; no earlier capture is new', () => {
    for (const status of [404, 410]) {
      assert.equal(changeOf(status, SHA1, PRIOR), 'removed');
      assert.equal(revisitProfileOf(status, SHA1, PRIOR), undefined);
    }
    assert.equal(changeOf(200, SHA1, undefined), 'new');
    assert.equal(revisitProfileOf(304, SHA1, undefined), undefined);
  });
});

describe("adaptive revisits: StormCrawler's arithmetic", () => {
  const bounds = { minMinutes: 60, maxMinutes: 20_160 };
  it('a new page starts at a day; a changed one moves halfway to the minimum; an unchanged one grows ×1.5 to the maximum', () => {
    assert.equal(nextInterval(undefined, undefined, bounds), 1440);
    assert.equal(nextInterval(undefined, 'new', bounds), 1440);
    assert.equal(nextInterval(1440, 'changed', bounds), 0.5 * 1440 + 0.5 * 60);
    assert.equal(nextInterval(1440, 'same', bounds), 2160);
    assert.equal(nextInterval(20_000, 'same', bounds), 20_160, 'capped at the maximum');
    assert.equal(nextInterval(61, 'changed', bounds), 60.5);
    assert.equal(nextInterval(500, 'removed', bounds), 500);
  });

  it('the start is clamped into the bounds; repeated changes converge on the minimum, never below it', () => {
    assert.equal(nextInterval(undefined, 'new', { minMinutes: 1, maxMinutes: 10 }), 10);
    let interval = 1440;
    for (let i = 0; i < 40; i++) interval = nextInterval(interval, 'changed', bounds);
    assert.ok(interval >= 60 && interval < 60.001);
  });

  it('a URL is due when its due time has come, or when it has none', () => {
    const now = new Date('2026-12-04T10:00:00.000Z');
    assert.equal(isDue({ ...PRIOR, dueAt: '2026-12-04T09:59:59.000Z' }, now), true);
    assert.equal(isDue({ ...PRIOR, dueAt: '2026-12-04T10:00:01.000Z' }, now), false);
    assert.equal(isDue({ ...PRIOR, dueAt: undefined }, now), true);
  });
});

describe('WARC revisit records, read back with warcio', () => {
  it('server-not-modified: WARC 1.1 profile, refers-to fields, no block; identical-payload-digest: the response head, truncated', async () => {
    const builder = new WarcFileBuilder({ filename: 'r.warc.gz' });
    builder.addWarcinfo({ software: 'test' }, AT);
    const common = {
      targetUri: URL_A,
      date: AT,
      refersToTargetUri: URL_A,
      refersToDate: new Date(EARLIER),
      payloadDigest: formatSha1(Buffer.from(SHA1, 'hex')),
      ip: '127.0.0.1',
    };
    builder.addRevisit({ ...common, profile: 'server-not-modified' });
    builder.addRevisit({
      ...common,
      profile: 'identical-payload-digest',
      response: {
        httpVersion: '1.1',
        status: 200,
        statusText: 'OK',
        headers: [
          ['Content-Type', 'text/html'],
          ['ETag', '"v1"'],
        ],
      },
    });
    const bytes = builder.toBytes();
    const report = await verifyWarc(bytes);
    assert.deepEqual([...report.errors, ...report.problems], []);
    const [, notModified, identical] = await warcioRecords(bytes);
    for (const [record, profile] of [
      [notModified, 'server-not-modified'],
      [identical, 'identical-payload-digest'],
    ] as const) {
      assert.equal(record?.headers.get('WARC-Type'), 'revisit');
      assert.equal(record?.headers.get('WARC-Profile'), `http://netpreserve.org/warc/1.1/revisit/${profile}`);
      assert.equal(record?.headers.get('WARC-Refers-To-Target-URI'), URL_A);
      assert.equal(record?.headers.get('WARC-Refers-To-Date'), EARLIER);
      assert.equal(record?.headers.get('WARC-Payload-Digest'), formatSha1(Buffer.from(SHA1, 'hex')));
    }
    assert.equal(notModified?.length, 0);
    assert.equal(notModified?.http, undefined);
    assert.equal(identical?.headers.get('WARC-Truncated'), 'length');
    assert.equal(identical?.http, 'HTTP/1.1 200 OK');
  });

  it('a re-crawl batch writes a 304 and a repeated payload as revisits pointing at the earlier capture, and a changed page in full', async () => {
    const blobs = new MemoryBlobs();
    const changed = Buffer.from('<html><body><p>A new text.</p></body></html>');
    const content = {
      v: 1 as const,
      crawlId: 'c-now',
      key: 'k',
      url: URL_A,
      fetchedAt: AT.toISOString(),
      mime: 'text/html',
      kind: 'html' as const,
      wordCount: 3,
      markdown: 'A new text.',
    };
    const { results, keys } = await storeWarcFiles(
      [
        {
          response: response(304, Buffer.alloc(0), [['ETag', '"v1"']]),
          result: result(304, 0),
          recrawl: { prior: PRIOR },
        },
        {
          response: response(200, BODY),
          result: result(200, BODY.byteLength),
          recrawl: { prior: PRIOR },
          content,
        },
        {
          response: response(200, changed),
          result: result(200, changed.byteLength),
          recrawl: { prior: PRIOR },
          content,
        },
        { response: response(200, BODY), result: result(200, BODY.byteLength), recrawl: {}, content },
      ],
      blobs,
      'inv',
      AT,
    );
    const [notModified, identical, fresh, brandNew] = results;
    assert.deepEqual(
      results.map((r) => [r.change, r.revisit?.profile]),
      [
        ['same', 'server-not-modified'],
        ['same', 'identical-payload-digest'],
        ['changed', undefined],
        ['new', undefined],
      ],
    );
    // Indexed as pywb indexes revisits; the digest stays the payload's.
    assert.equal(indexLine(notModified!).mime, 'warc/revisit');
    assert.equal(indexLine(notModified!).digest, formatSha1(Buffer.from(SHA1, 'hex')));
    // Same pages keep the earlier content record and payload digest; no second copy is stored.
    assert.deepEqual(notModified?.content, PRIOR.content);
    assert.deepEqual(identical?.content, PRIOR.content);
    assert.equal(notModified?.sha1, SHA1);
    assert.deepEqual(notModified?.revisit?.warc, PRIOR.warc);
    assert.notDeepEqual(fresh?.content, PRIOR.content);
    assert.ok(brandNew?.content);
    assert.equal(notModified?.etag, '"v1"');
    assert.equal(
      notModified?.lastModified,
      PRIOR.lastModified,
      'a 304 without Last-Modified keeps the earlier one',
    );
    const file = blobs.objects.get(keys[0]!)!;
    const report = await verifyWarc(file);
    assert.deepEqual([...report.errors, ...report.problems], []);
    const types = (await warcioRecords(file)).map((record) => record.headers.get('WARC-Type'));
    assert.equal(types.filter((type) => type === 'revisit').length, 2);
    assert.equal(types.filter((type) => type === 'response').length, 2);
    // The content file holds the changed and the new page only.
    const contentFiles = [...blobs.objects.keys()].filter((key) => key.startsWith('content/'));
    const lines = contentFiles.flatMap((key) =>
      gunzipSync(blobs.objects.get(key)!).toString().trim().split('\n'),
    );
    assert.equal(lines.length, 2);
  });
});

describe('markdownDiff', () => {
  it('shows a changed line with its context as a unified diff', () => {
    const { patch, replacedWhole } = markdownDiff(
      { label: 'a', text: '# T\n\none\n\ntwo\n' },
      { label: 'b', text: '# T\n\none\n\nthree\n' },
    );
    assert.equal(replacedWhole, false);
    assert.match(patch, /^--- a/m);
    assert.match(patch, /^-two$/m);
    assert.match(patch, /^\+three$/m);
  });

  it('two pages that share nothing cost time linear in their size: past the edit bound they are shown replaced whole', () => {
    const page = (n: number, tag: string) =>
      Array.from({ length: n }, (_, i) => `${tag} line ${i}`).join('\n');
    // 4× the lines: linear is 4×; quadratic would be 16×.
    assertLinear({
      what: 'lines of two pages that share nothing',
      n: 5_000,
      time: (n) => {
        const [a, b] = [page(n, 'a'), page(n, 'b')];
        const started = performance.now();
        const diff = markdownDiff({ label: 'a', text: a }, { label: 'b', text: b });
        const ms = performance.now() - started;
        assert.equal(diff.replacedWhole, true);
        assert.equal(diff.patch.split('\n').filter((l) => l.startsWith('-a line')).length, n);
        return ms;
      },
    });
    assert.ok(MAX_DIFF_EDITS > 0);
  });
});
