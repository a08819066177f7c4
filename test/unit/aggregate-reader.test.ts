// The read side of the aggregate's output: the results index reader (order, dedup by key, outcome
// filter, damaged parts and lines skipped and reported), the incremental summary, CSV output
// (RFC 4180), and `crawler get`'s content decoding under the crawl's caps.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { SummaryAccumulator } from '../../cli/crawl-summary.ts';
import { contentCodings, decodeStoredBody } from '../../cli/get-command.ts';
import { CSV_COLUMNS, csvField, csvHeader, csvRow } from '../../cli/results-csv.ts';
import {
  type BlobReader,
  damageWarning,
  findIndexLine,
  type IndexDamage,
  IndexDamageError,
  indexLine,
  readCrawlResults,
  streamIndex,
} from '../../lambdas/core/archive/index.ts';
import { FetchLimitsSchema } from '../../lambdas/core/crawl/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';

class MemoryReader implements BlobReader {
  objects = new Map<string, Uint8Array>();
  gets: string[] = [];

  async get(key: string): Promise<Uint8Array> {
    this.gets.push(key);
    const body = this.objects.get(key);
    if (!body) throw new Error(`no ${key}`);
    return body;
  }

  async *list(prefix: string): AsyncGenerator<string> {
    // Deliberately unsorted: the reader must sort.
    for (const key of [...this.objects.keys()].reverse()) if (key.startsWith(prefix)) yield key;
  }

  part(key: string, lines: readonly CrawlResult[]): void {
    this.objects.set(key, gzipSync(lines.map((r) => `${JSON.stringify(indexLine(r))}\n`).join('')));
  }
}

function result(path: string, overrides: Partial<CrawlResult> = {}): CrawlResult {
  const url = `http://site.test${path}`;
  return {
    v: 1,
    crawlId: 'c1',
    key: createHash('sha256').update(url).digest('hex'),
    url,
    outcome: 'fetched',
    status: 200,
    bytes: 1,
    fetchedAt: '2024-05-01T12:00:00.000Z',
    ms: 1,
    depth: 0,
    outlinks: 0,
    ...overrides,
  };
}

describe('results index reader', () => {
  it('reads parts in key order and keeps the first line per key', async () => {
    const blobs = new MemoryReader();
    blobs.part('results/c1/2024-05-01T12-00-02-000Z-b.jsonl.gz', [
      result('/a', { outcome: 'failed', status: 500 }), // rewritten after a crash: not the first
      result('/c'),
    ]);
    blobs.part('results/c1/2024-05-01T12-00-01-000Z-a.jsonl.gz', [result('/a'), result('/b')]);
    blobs.part('results/c2/2024-05-01T12-00-00-000Z-a.jsonl.gz', [result('/other', { crawlId: 'c2' })]);
    const lines = await readCrawlResults(blobs, 'c1');
    assert.deepEqual(
      lines.map((l) => [l.url, l.outcome]),
      [
        ['http://site.test/a', 'fetched'],
        ['http://site.test/b', 'fetched'],
        ['http://site.test/c', 'fetched'],
      ],
    );
    assert.equal(lines[0]!.urlkey, 'test,site)/a');
  });

  it('filters by outcome after deduplicating', async () => {
    const blobs = new MemoryReader();
    blobs.part('results/c1/1-a.jsonl.gz', [
      result('/a'),
      result('/s', { outcome: 'skipped', status: undefined }),
    ]);
    blobs.part('results/c1/2-a.jsonl.gz', [result('/a', { outcome: 'skipped' })]);
    const skipped = await readCrawlResults(blobs, 'c1', { outcome: 'skipped' });
    assert.deepEqual(
      skipped.map((l) => l.url),
      ['http://site.test/s'],
    );
  });

  it('repeats stored lines byte for byte, and finds one by key', async () => {
    const blobs = new MemoryReader();
    blobs.part('results/c1/1-a.jsonl.gz', [result('/a'), result('/b')]);
    const texts: string[] = [];
    for await (const { text } of streamIndex(blobs, 'c1')) texts.push(text);
    assert.deepEqual(texts, [
      JSON.stringify(indexLine(result('/a'))),
      JSON.stringify(indexLine(result('/b'))),
    ]);
    const found = await findIndexLine(blobs, 'c1', result('/b').key);
    assert.equal(found?.url, 'http://site.test/b');
    assert.equal(await findIndexLine(blobs, 'c1', 'f'.repeat(64)), undefined);
  });

  it('reads many parts in order while fetching ahead', async () => {
    const blobs = new MemoryReader();
    for (let i = 0; i < 30; i++)
      blobs.part(`results/c1/${String(i).padStart(3, '0')}-x.jsonl.gz`, [result(`/p${i}`)]);
    const lines = await readCrawlResults(blobs, 'c1', { prefetch: 4 });
    assert.deepEqual(
      lines.map((l) => l.url),
      Array.from({ length: 30 }, (_, i) => `http://site.test/p${i}`),
    );
  });

  it('without onDamage, a damaged line is an IndexDamageError naming the part and line', async () => {
    const blobs = new MemoryReader();
    blobs.objects.set('results/c1/1-a.jsonl.gz', gzipSync('{"v":1}\n'));
    await assert.rejects(readCrawlResults(blobs, 'c1'), (error: unknown) => {
      assert.ok(error instanceof IndexDamageError);
      assert.equal(error.damage.key, 'results/c1/1-a.jsonl.gz');
      assert.equal(error.damage.line, 1);
      assert.match(error.message, /^results\/c1\/1-a\.jsonl\.gz line 1: not an index line \(/);
      return true;
    });
  });

  it('skips a part that is not gzip and bad lines, reports each, and reads everything else', async () => {
    const blobs = new MemoryReader();
    blobs.part('results/c1/1-a.jsonl.gz', [result('/a')]);
    blobs.objects.set('results/c1/2-b.jsonl.gz', Buffer.from('this is not gzip'));
    blobs.objects.set(
      'results/c1/3-c.jsonl.gz',
      gzipSync(
        [
          JSON.stringify(indexLine(result('/b'))),
          '{"truncated json',
          JSON.stringify({ hello: 'world' }),
          JSON.stringify(indexLine(result('/c'))),
          '',
        ].join('\n'),
      ),
    );
    blobs.objects.set('results/c1/4-d.jsonl.gz', gzipSync('x').subarray(0, 12)); // cut short
    blobs.part('results/c1/5-e.jsonl.gz', [result('/d')]);
    const damages: IndexDamage[] = [];
    const lines = await readCrawlResults(blobs, 'c1', { onDamage: (damage) => damages.push(damage) });
    assert.deepEqual(
      lines.map((l) => l.url),
      ['/a', '/b', '/c', '/d'].map((p) => `http://site.test${p}`),
    );
    assert.deepEqual(
      damages.map((d) => [d.key, d.line]),
      [
        ['results/c1/2-b.jsonl.gz', undefined],
        ['results/c1/3-c.jsonl.gz', 2],
        ['results/c1/3-c.jsonl.gz', 3],
        ['results/c1/4-d.jsonl.gz', undefined],
      ],
    );
    assert.equal(
      damageWarning(damages[0]!),
      'warning: skipped results/c1/2-b.jsonl.gz: not gzip (incorrect header check)',
    );
    assert.match(
      damageWarning(damages[1]!),
      /^warning: skipped results\/c1\/3-c\.jsonl\.gz line 2: not JSON \(/,
    );
    assert.match(damages[2]!.reason, /^not an index line \(.*crawlId/);
    assert.match(damages[3]!.reason, /^bad gzip \(unexpected end of file\)$/);
    // A lookup by key finds lines after the damage too.
    const found = await findIndexLine(blobs, 'c1', result('/d').key, { onDamage: () => {} });
    assert.equal(found?.url, 'http://site.test/d');
  });
});

describe('summary', () => {
  it('counts results one at a time', () => {
    const accumulator = new SummaryAccumulator(new Date('2024-05-01T12:00:00Z'));
    for (const r of [
      result('/a', { bytes: 10 }),
      result('/b', { bytes: 5 }),
      result('/c', { outcome: 'skipped' }),
    ])
      accumulator.add(r);
    const summary = accumulator.summary({
      crawlId: 'c1',
      seeds: ['http://site.test/'],
      startedAt: new Date('2024-05-01T12:00:00Z'),
      endedAt: new Date('2024-05-01T12:00:02Z'),
      warcFiles: 3,
    });
    assert.deepEqual(
      { urls: summary.urls, byOutcome: summary.byOutcome, bytes: summary.bytes },
      { urls: 3, byOutcome: { fetched: 2, skipped: 1 }, bytes: 16 },
    );
    assert.equal(summary.seconds, 2);
    assert.equal(summary.pagesPerSecond, 1);
    assert.equal(summary.warcFiles, 3);
  });

  it('counts in pages per second only the pages this run fetched (a resumed crawl fetched others before)', () => {
    const runStartedAt = new Date('2024-05-01T12:00:00Z');
    const accumulator = new SummaryAccumulator(runStartedAt);
    accumulator.add(result('/earlier', { fetchedAt: '2024-05-01T11:00:00.000Z' }));
    accumulator.add(result('/earlier-too', { fetchedAt: '2024-05-01T11:59:59.999Z' }));
    accumulator.add(result('/now', { fetchedAt: '2024-05-01T12:00:01.000Z' }));
    accumulator.add(result('/skipped-now', { outcome: 'skipped', fetchedAt: '2024-05-01T12:00:01.000Z' }));
    const summary = accumulator.summary({
      crawlId: 'c1',
      seeds: [],
      startedAt: runStartedAt,
      endedAt: new Date('2024-05-01T12:00:02Z'),
      warcFiles: 1,
    });
    assert.equal(summary.byOutcome.fetched, 3, 'every fetched page is counted by outcome');
    assert.equal(accumulator.fetchedThisRun, 1);
    assert.equal(summary.pagesPerSecond, 0.5, 'one page this run, in 2 s');
  });
});

describe('CSV', () => {
  it('quotes per RFC 4180', () => {
    assert.equal(csvField('plain'), 'plain');
    assert.equal(csvField('a,b'), '"a,b"');
    assert.equal(csvField('say "hi"'), '"say ""hi"""');
    assert.equal(csvField('two\nlines'), '"two\nlines"');
    assert.equal(csvField('cr\r'), '"cr\r"');
    assert.equal(csvField(undefined), '');
    assert.equal(csvField(0), '0');
  });

  it('has a header and one CRLF record per line with the fixed columns', () => {
    assert.equal(csvHeader(), `${CSV_COLUMNS.join(',')}\r\n`);
    const line = indexLine(
      result('/a?x=1,2', {
        outcome: 'failed',
        code: 'http-500',
        reason: 'server said "no", twice',
        contentType: 'text/html; charset=utf-8',
        sha1: 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d',
        warc: { key: 'warc/c1/f.warc.gz', offset: 5, length: 9 },
      }),
    );
    const row = csvRow(line);
    assert.ok(row.endsWith('\r\n'));
    const expected = [
      '"http://site.test/a?x=1,2"',
      '200',
      'failed',
      'http-500',
      '"server said ""no"", twice"',
      'text/html',
      '1',
      'sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N',
      '20240501120000',
      '2024-05-01T12:00:00.000Z',
      '1',
      '0',
      '0',
      '',
      '',
      '',
      '',
      'warc/c1/f.warc.gz',
      '5',
      '9',
      '"test,site)/a?x=1,2"',
      line.key,
    ];
    assert.equal(row, `${expected.join(',')}\r\n`);
  });
});

describe('get: content decoding', () => {
  const text = Buffer.from('<html>hello, world</html>'.repeat(50));
  const limits = FetchLimitsSchema.parse({});
  const decode = (body: Uint8Array, encoding: string) => {
    const decoded = decodeStoredBody(body, encoding, limits);
    assert.ok(decoded.ok, decoded.ok ? '' : decoded.reason);
    return Buffer.from(decoded.bytes);
  };

  it('lists codings in applied order, dropping identity', () => {
    assert.deepEqual(contentCodings(undefined), []);
    assert.deepEqual(contentCodings('identity'), []);
    assert.deepEqual(contentCodings('GZIP'), ['gzip']);
    assert.deepEqual(contentCodings('deflate, br'), ['deflate', 'br']);
  });

  it('decodes gzip, x-gzip, br, zlib and raw deflate, and stacked codings', () => {
    assert.deepEqual(decode(gzipSync(text), 'gzip'), text);
    assert.deepEqual(decode(gzipSync(text), 'x-gzip'), text);
    assert.deepEqual(decode(brotliCompressSync(text), 'br'), text);
    assert.deepEqual(decode(deflateSync(text), 'deflate'), text);
    assert.deepEqual(decode(deflateRawSync(text), 'deflate'), text);
    assert.deepEqual(decode(brotliCompressSync(gzipSync(text)), 'gzip, br'), text);
  });

  it('decodes a truncated gzip body as far as it goes', () => {
    const big = Buffer.from(Array.from({ length: 5000 }, (_, i) => `line ${i}\n`).join(''));
    const encoded = gzipSync(big);
    const partial = decode(encoded.subarray(0, Math.floor(encoded.length / 2)), 'gzip');
    assert.ok(partial.length > 0 && partial.length < big.length);
    assert.deepEqual(partial, big.subarray(0, partial.length));
  });

  it('refuses an unknown coding', () => {
    const decoded = decodeStoredBody(text, 'compress', limits);
    assert.deepEqual(decoded.ok ? undefined : [decoded.code, decoded.reason], [
      'bad-encoding',
      'unsupported content-encoding compress',
    ]);
  });

  it("stops a decompression bomb at the crawl's caps: the ratio, then the absolute size", () => {
    const zeros = gzipSync(Buffer.alloc(16 * 1024 * 1024)); // ~16 KB decoding to 16 MiB: over 100:1
    const ratio = decodeStoredBody(zeros, 'gzip', limits);
    assert.equal(ratio.ok ? 'ok' : ratio.code, 'decompression-bomb');
    const loose = { maxDecodedBytes: 8 * 1024 * 1024, maxDecodeRatio: 10_000 };
    const size = decodeStoredBody(zeros, 'gzip', loose);
    assert.equal(size.ok ? 'ok' : size.code, 'decoded-too-large');
    assert.match(size.ok ? '' : size.reason, /decodes to more than 8388608 bytes/);
  });
});
