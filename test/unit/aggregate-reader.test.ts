// The read side of the aggregate's output: the results index reader (order, dedup by key, outcome
// filter), CSV output (RFC 4180), and `crawler get`'s content decoding.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { contentCodings, decodeContent } from '../../cli/get-command.ts';
import {
  type BlobReader,
  CSV_COLUMNS,
  csvField,
  csvHeader,
  csvRow,
  findIndexLine,
  readCrawlResults,
  streamIndex,
} from '../../cli/results-reader.ts';
import { indexLine } from '../../lambdas/core/cdxj.ts';
import type { CrawlResult } from '../../lambdas/core/result.ts';

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

  it('names the part and line of a corrupt line', async () => {
    const blobs = new MemoryReader();
    blobs.objects.set('results/c1/1-a.jsonl.gz', gzipSync('{"v":1}\n'));
    await assert.rejects(
      readCrawlResults(blobs, 'c1'),
      /results\/c1\/1-a\.jsonl\.gz line 1: not an index line/,
    );
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

  it('lists codings in applied order, dropping identity', () => {
    assert.deepEqual(contentCodings(undefined), []);
    assert.deepEqual(contentCodings('identity'), []);
    assert.deepEqual(contentCodings('GZIP'), ['gzip']);
    assert.deepEqual(contentCodings('deflate, br'), ['deflate', 'br']);
  });

  it('decodes gzip, x-gzip, br, zlib and raw deflate, and stacked codings', () => {
    assert.deepEqual(Buffer.from(decodeContent(gzipSync(text), ['gzip'])), text);
    assert.deepEqual(Buffer.from(decodeContent(gzipSync(text), ['x-gzip'])), text);
    assert.deepEqual(Buffer.from(decodeContent(brotliCompressSync(text), ['br'])), text);
    assert.deepEqual(Buffer.from(decodeContent(deflateSync(text), ['deflate'])), text);
    assert.deepEqual(Buffer.from(decodeContent(deflateRawSync(text), ['deflate'])), text);
    assert.deepEqual(Buffer.from(decodeContent(brotliCompressSync(gzipSync(text)), ['gzip', 'br'])), text);
  });

  it('decodes a truncated gzip body as far as it goes', () => {
    const big = Buffer.from(Array.from({ length: 5000 }, (_, i) => `line ${i}\n`).join(''));
    const encoded = gzipSync(big);
    const partial = Buffer.from(decodeContent(encoded.subarray(0, Math.floor(encoded.length / 2)), ['gzip']));
    assert.ok(partial.length > 0 && partial.length < big.length);
    assert.deepEqual(partial, big.subarray(0, partial.length));
  });

  it('refuses an unknown coding', () => {
    assert.throws(() => decodeContent(text, ['compress']), /unknown content coding "compress"/);
  });
});
