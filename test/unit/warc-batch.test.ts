import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gunzipSync } from 'node:zlib';
import {
  type CapturedPage,
  iterateWarcFile,
  parseHttpMessage,
  readWarcRecord,
  storeWarcFiles,
  WarcBatchWriter,
} from '../../lambdas/core/archive/index.ts';
import type { PageResponse } from '../../lambdas/core/crawl/index.ts';
import {
  type ContentRecord,
  ContentRecordSchema,
  type CrawlResult,
} from '../../lambdas/core/results/index.ts';
import { contentKey, warcKey } from '../../lambdas/shared/contracts.ts';
import { MemoryBlobs } from '../fakes/blobs.ts';
import { verifyWarc } from '../fixtures/warc-verify.ts';

const AT = new Date('2026-11-29T12:00:00.000Z');
const KiB = 1024;

/** Incompressible bytes, different per seed. */
function noise(n: number, seed: number): Uint8Array {
  const bytes = Buffer.alloc(n);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    state = (state * 1664525 + 1013904223) >>> 0;
    bytes[i] = state >>> 24;
  }
  return bytes;
}

function page(crawlId: string, n: number, body: Uint8Array, extra: Partial<CrawlResult> = {}): CapturedPage {
  const url = `http://127.0.0.1:8080/p/${n}`;
  const response: PageResponse = {
    url,
    requestLine: `GET /p/${n} HTTP/1.1`,
    requestHeaders: [
      ['host', '127.0.0.1:8080'],
      ['user-agent', 'test'],
    ],
    httpVersion: '1.1',
    status: 200,
    statusText: 'OK',
    headers: [
      ['Content-Type', 'application/octet-stream'],
      ['Content-Length', String(body.byteLength)],
    ],
    body,
    truncated: undefined,
    remoteAddress: '127.0.0.1',
    startedAt: AT,
    elapsedMs: 12,
  };
  const result: CrawlResult = {
    v: 1,
    crawlId,
    key: `k${n}`,
    url,
    outcome: 'fetched',
    status: 200,
    bytes: body.byteLength,
    fetchedAt: AT.toISOString(),
    ms: 12,
    depth: 0,
    outlinks: 0,
    ...extra,
  };
  return { response, result };
}

/**
 * The page store fake, each write's content type checked: `fail` decides per call whether it throws
 * (nothing written), and writes wait for `gate`.
 */
class WarcBlobs extends MemoryBlobs {
  fail: (key: string, call: number) => boolean = () => false;
  gate: Promise<void> | undefined;
  /** Writes that have reached the gate and not yet passed it. */
  atGate = 0;

  constructor() {
    super();
    this.beforeWrite = async ({ key, call, contentType }) => {
      assert.equal(contentType, key.startsWith('content/') ? 'application/x-ndjson' : 'application/warc');
      this.atGate++;
      await this.gate;
      this.atGate--;
      if (this.fail(key, call)) throw Object.assign(new Error(`put ${key} refused`), { status: 413 });
    };
  }
}

/** Range-reads a pointer and checks it is that URL's response with that body. */
function assertPointsAt(blobs: MemoryBlobs, result: CrawlResult, body: Uint8Array): void {
  assert.ok(result.warc, `${result.url}: no pointer`);
  const object = blobs.objects.get(result.warc.key);
  assert.ok(object, `${result.warc.key} was not stored`);
  const member = object.subarray(result.warc.offset, result.warc.offset + result.warc.length);
  const record = readWarcRecord(member);
  assert.equal(record.header('WARC-Type'), 'response');
  assert.equal(record.header('WARC-Target-URI'), result.url);
  assert.deepEqual(Buffer.from(parseHttpMessage(record.block).body), Buffer.from(body));
  assert.equal(result.sha1, createHash('sha1').update(body).digest('hex'));
}

async function assertValidFile(blobs: MemoryBlobs, key: string): Promise<void> {
  const bytes = blobs.objects.get(key)!;
  const report = await verifyWarc(bytes);
  assert.deepEqual([...report.errors, ...report.problems], [], key);
  const records = [...iterateWarcFile(bytes)].map((entry) => entry.record);
  assert.equal(records[0]?.header('WARC-Type'), 'warcinfo', `${key}: first record`);
  assert.equal(records[0]?.header('WARC-Filename'), key.slice(key.lastIndexOf('/') + 1));
  const warcinfoId = records[0]?.header('WARC-Record-ID');
  for (const record of records.slice(1)) {
    assert.notEqual(record.header('WARC-Type'), 'warcinfo', `${key}: a second warcinfo`);
    assert.equal(record.header('WARC-Warcinfo-ID'), warcinfoId, `${key}: Warcinfo-ID`);
  }
}

describe('warcKey', () => {
  it('names part 0 after the invocation and numbers later parts so that keys sort in order', () => {
    const keys = [0, 1, 2, 10, 999].map((part) => warcKey('c1', AT, 'inv-1', part));
    assert.equal(keys[0], 'warc/c1/2026-11-29/inv-1.warc.gz');
    assert.equal(keys[1], 'warc/c1/2026-11-29/inv-1_0001.warc.gz');
    assert.deepEqual([...keys].sort(), keys);
    assert.equal(new Set(keys).size, keys.length);
  });
});

describe('WarcBatchWriter', () => {
  it('writes one file per crawl for small pages, results in add order, pointers to the responses', async () => {
    const blobs = new WarcBlobs();
    const writer = new WarcBatchWriter(blobs, 'inv-1', AT);
    const pages = [
      page('a', 1, noise(3000, 1)),
      page('b', 2, noise(100, 2)),
      page('a', 3, Buffer.from('<html>hello</html>'), { location: 'http://127.0.0.1:8080/x' }),
    ];
    for (const p of pages) writer.add(p);
    assert.deepEqual(blobs.calls, [], 'nothing uploaded before a file is full or finish()');
    const { results, keys } = await writer.finish();
    assert.deepEqual(keys, ['warc/a/2026-11-29/inv-1.warc.gz', 'warc/b/2026-11-29/inv-1.warc.gz']);
    assert.deepEqual(
      results.map((r) => r.url),
      pages.map((p) => p.result.url),
    );
    for (const [i, result] of results.entries()) {
      assert.equal(result.warc?.key, warcKey(pages[i]!.result.crawlId, AT, 'inv-1'));
      assertPointsAt(blobs, result, pages[i]!.response.body);
    }
    for (const key of keys) await assertValidFile(blobs, key);
    const metadata = [...iterateWarcFile(blobs.objects.get(keys[0]!)!)]
      .map((entry) => entry.record)
      .filter((record) => record.header('WARC-Type') === 'metadata');
    assert.match(Buffer.from(metadata[1]!.block).toString(), /redirectTo: http:\/\/127\.0\.0\.1:8080\/x/);
  });

  it('splits a crawl’s pages over files of at most maxFileBytes, each with its own warcinfo', async () => {
    const blobs = new WarcBlobs();
    const max = 64 * KiB;
    const writer = new WarcBatchWriter(blobs, 'inv-2', AT, { maxFileBytes: max });
    const pages = Array.from({ length: 20 }, (_, i) => page('c', i, noise(5 * KiB + i * 700, i + 10)));
    for (const p of pages) writer.add(p);
    assert.ok(blobs.calls.length > 0, 'full files are uploaded while pages are still being added');
    const { results, keys } = await writer.finish();
    assert.ok(keys.length >= 3, `${keys.length} files`);
    assert.deepEqual([...keys].sort(), keys, 'keys sort in the order the files were written');
    assert.equal(new Set(keys).size, keys.length);
    assert.deepEqual([...blobs.objects.keys()].sort(), keys);
    for (const key of keys) {
      assert.ok(
        blobs.objects.get(key)!.byteLength <= max,
        `${key}: ${blobs.objects.get(key)!.byteLength} bytes`,
      );
      await assertValidFile(blobs, key);
    }
    for (const [i, result] of results.entries()) assertPointsAt(blobs, result, pages[i]!.response.body);
    // Files are filled: each but the last would have overflowed with its successor's first page.
    const pagesPerFile = keys.map((key) => results.filter((r) => r.warc?.key === key).length);
    assert.ok(
      pagesPerFile.every((n) => n >= 1),
      `pages per file: ${pagesPerFile.join(', ')}`,
    );
  });

  it('gives a page larger than maxFileBytes a file of its own', async () => {
    const blobs = new WarcBlobs();
    const max = 16 * KiB;
    const writer = new WarcBatchWriter(blobs, 'inv-3', AT, { maxFileBytes: max });
    const pages = [
      page('c', 1, noise(2 * KiB, 1)),
      page('c', 2, noise(40 * KiB, 2)),
      page('c', 3, noise(2 * KiB, 3)),
    ];
    for (const p of pages) writer.add(p);
    const { results, keys } = await writer.finish();
    assert.equal(keys.length, 3);
    assert.deepEqual(
      results.map((r) => r.warc?.key),
      keys,
    );
    assert.ok(blobs.objects.get(keys[1]!)!.byteLength > max);
    for (const [i, result] of results.entries()) assertPointsAt(blobs, result, pages[i]!.response.body);
    for (const key of keys) await assertValidFile(blobs, key);
  });

  it('keeps no reference to a body once add() returns', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const blobs = new WarcBlobs();
    const writer = new WarcBatchWriter(blobs, 'inv-4', AT);
    let captured: CapturedPage | undefined = page('c', 1, noise(256 * KiB, 4));
    const body = new WeakRef(captured.response.body);
    writer.add(captured);
    captured = undefined;
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    assert.equal(body.deref(), undefined, 'the body is still reachable');
    const { results } = await writer.finish();
    assert.equal(results.length, 1);
  });

  it('rejects finish() when an upload failed, and uploads the failed files again on the next finish()', async () => {
    const blobs = new WarcBlobs();
    blobs.fail = (key, call) => key.endsWith('_0001.warc.gz') && call <= 3;
    const writer = new WarcBatchWriter(blobs, 'inv-5', AT, { maxFileBytes: 16 * KiB });
    const pages = Array.from({ length: 6 }, (_, i) => page('c', i, noise(6 * KiB, i + 50)));
    for (const p of pages) writer.add(p);
    await assert.rejects(writer.finish(), /put warc\/c\/2026-11-29\/inv-5_0001\.warc\.gz refused/);
    assert.throws(() => writer.add(page('c', 9, noise(10, 9))), /after finish/);
    const { results, keys } = await writer.finish();
    assert.deepEqual([...blobs.objects.keys()].sort(), keys);
    for (const [i, result] of results.entries()) assertPointsAt(blobs, result, pages[i]!.response.body);
    assert.equal(blobs.calls.filter((key) => key.endsWith('_0001.warc.gz')).length, 2);
  });

  it('ready() waits while closed files are still uploading beyond maxPendingBytes', async () => {
    const blobs = new WarcBlobs();
    let open!: () => void;
    blobs.gate = new Promise((resolve) => {
      open = resolve;
    });
    const writer = new WarcBatchWriter(blobs, 'inv-6', AT, {
      maxFileBytes: 8 * KiB,
      maxPendingBytes: 16 * KiB,
    });
    await writer.ready();
    for (let i = 0; i < 4; i++) writer.add(page('c', i, noise(9 * KiB, i)));
    assert.ok(writer.pendingBytes > 16 * KiB);
    let ready = false;
    const waiting = writer.ready().then(() => {
      ready = true;
    });
    // Once the closed files' uploads wait at the gate, and a few turns of the loop later, ready() still waits.
    while (blobs.atGate === 0) await new Promise((resolve) => setImmediate(resolve));
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ready, false);
    open();
    await waiting;
    assert.ok(writer.pendingBytes <= 16 * KiB);
    await writer.finish();
    assert.equal(writer.pendingBytes, 0);
  });

  it('storeWarcFiles writes a whole batch through the writer', async () => {
    const blobs = new WarcBlobs();
    const pages = [page('a', 1, noise(100, 1)), page('a', 2, noise(200, 2))];
    const { results, keys } = await storeWarcFiles(pages, blobs, 'inv-7', AT);
    assert.deepEqual(keys, ['warc/a/2026-11-29/inv-7.warc.gz']);
    for (const [i, result] of results.entries()) assertPointsAt(blobs, result, pages[i]!.response.body);
  });
});

function contentOf(p: CapturedPage, markdown: string): ContentRecord {
  return {
    v: 1,
    crawlId: p.result.crawlId,
    key: p.result.key,
    url: p.result.url,
    fetchedAt: p.result.fetchedAt,
    mime: 'text/html',
    kind: 'html',
    title: `page ${p.result.key}`,
    wordCount: markdown.split(/\s+/).length,
    markdown,
    text: markdown.replace(/^# /, ''),
  };
}

describe('WarcBatchWriter: content records', () => {
  it("writes each crawl's records to its gzip JSONL file; each result points at its own line", async () => {
    const blobs = new WarcBlobs();
    const writer = new WarcBatchWriter(blobs, 'inv-1', AT);
    const pages = [
      page('a', 1, noise(500, 1)),
      page('b', 2, noise(500, 2)),
      page('a', 3, noise(500, 3)),
      page('a', 4, noise(10, 4)),
    ];
    pages.forEach((p, i) => {
      if (i < 3) p.content = contentOf(p, `# Title ${i}\n\nBody ${'é'.repeat(i)}`);
    });
    for (const p of pages) writer.add(p);
    const { results, keys } = await writer.finish();
    assert.deepEqual(keys, [warcKey('a', AT, 'inv-1'), warcKey('b', AT, 'inv-1')], 'WARC keys only');
    assert.equal(contentKey('a', AT, 'inv-1'), 'content/a/2026-11-29/inv-1.jsonl.gz');
    const whole = gunzipSync(blobs.objects.get(contentKey('a', AT, 'inv-1'))!).toString('utf8');
    assert.deepEqual(
      whole
        .trim()
        .split('\n')
        .map((line) => ContentRecordSchema.parse(JSON.parse(line)).url),
      [pages[0]!.result.url, pages[2]!.result.url],
      'the file is one zcat: every record of crawl a, in add order',
    );
    for (const [i, result] of results.entries()) {
      const expected = pages[i]!.content;
      if (expected === undefined) {
        assert.equal(result.content, undefined, 'no record, no pointer');
        continue;
      }
      assert.ok(result.content, result.url);
      const object = blobs.objects.get(result.content.key)!;
      const member = object.subarray(result.content.offset, result.content.offset + result.content.length);
      assert.deepEqual(JSON.parse(gunzipSync(member).toString('utf8')), expected);
    }
    // No conversion records unless asked.
    for (const key of keys) {
      const types = [...iterateWarcFile(blobs.objects.get(key)!)].map(({ record }) =>
        record.header('WARC-Type'),
      );
      assert.ok(!types.includes('conversion'), key);
    }
  });

  it('starts another content file when one would pass maxFileBytes', async () => {
    const blobs = new WarcBlobs();
    const writer = new WarcBatchWriter(blobs, 'inv-1', AT, { maxFileBytes: 64 * KiB });
    const pages = Array.from({ length: 6 }, (_, n) => page('a', n, noise(100, n)));
    // Incompressible Markdown, ~20 KiB per record: three records do not fit one 64 KiB file.
    for (const p of pages)
      p.content = contentOf(p, Buffer.from(noise(15 * KiB, p.result.key.length + 7)).toString('base64'));
    for (const p of pages) writer.add(p);
    const { results } = await writer.finish();
    const files = new Set(results.map((result) => result.content?.key));
    assert.ok(files.size >= 2, [...files].join());
    for (const key of files) assert.ok(blobs.objects.get(key!)!.byteLength <= 64 * KiB, key);
    for (const [i, result] of results.entries()) {
      const object = blobs.objects.get(result.content!.key)!;
      const member = object.subarray(result.content!.offset, result.content!.offset + result.content!.length);
      assert.equal(JSON.parse(gunzipSync(member).toString('utf8')).url, pages[i]!.result.url);
    }
  });

  it('adds a conversion record referring to the response with warcConversion', async () => {
    const blobs = new WarcBlobs();
    const writer = new WarcBatchWriter(blobs, 'inv-1', AT);
    const p = page('a', 1, Buffer.from('<html><h1>Hi</h1></html>'));
    p.content = contentOf(p, '# Hi\n\nThere');
    p.warcConversion = true;
    writer.add(p);
    const { keys } = await writer.finish();
    await assertValidFile(blobs, keys[0]!);
    const records = [...iterateWarcFile(blobs.objects.get(keys[0]!)!)].map(({ record }) => record);
    const response = records.find((record) => record.header('WARC-Type') === 'response');
    const conversion = records.find((record) => record.header('WARC-Type') === 'conversion');
    assert.ok(response && conversion);
    assert.equal(conversion.header('WARC-Refers-To'), response.header('WARC-Record-ID'));
    assert.equal(conversion.header('WARC-Target-URI'), p.result.url);
    assert.equal(conversion.header('Content-Type'), 'text/markdown; charset=utf-8');
    assert.equal(Buffer.from(conversion.block).toString('utf8'), '# Hi\n\nThere');
  });
});
