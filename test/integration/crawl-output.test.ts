// `crawler crawl --out DIR` (cli/crawl-output.ts) against the embedded S3 emulator: the WARC objects
// piped to files byte for byte, results.jsonl as `crawler results` prints it (stored lines, first per
// key) with the summary counted while streaming, damaged parts skipped and reported; and an index
// whose JSONL is larger than V8's longest string, which building results.jsonl as one string cannot
// write (RangeError: Invalid string length).
import assert from 'node:assert/strict';
import { constants } from 'node:buffer';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { createGzip, gzipSync } from 'node:zlib';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { writeCrawlOutput } from '../../cli/crawl-output.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { type IndexDamage, indexLine } from '../../lambdas/core/archive/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { crawlCostReport } from '../../lambdas/shared/aws-prices.ts';
import { contentPrefix, resultsPrefix } from '../../lambdas/shared/contracts.ts';
import { type AwsClients, createClients, destroyClients } from '../../local/aws-clients.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { frontierKey } from '../fixtures/synthetic-crawl.ts';

const BUCKET = 'pages';
let emulators: Emulators;
let clients: AwsClients;
let s3: S3Client;
let blobs: S3Blobs;
let tempDir: string;

before(async () => {
  emulators = await startEmulators();
  clients = createClients(emulators.endpoints);
  s3 = clients.s3;
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  blobs = new S3Blobs(s3, BUCKET);
  tempDir = await mkdtemp(join(tmpdir(), 'crawl-output-'));
});

after(async () => {
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
  if (clients) destroyClients(clients);
  await emulators?.stop();
});

function result(crawlId: string, i: number, overrides: Partial<CrawlResult> = {}): CrawlResult {
  const url = `http://out.test/p/${i}`;
  return {
    v: 1,
    crawlId,
    key: frontierKey(url),
    url,
    outcome: 'fetched',
    status: 200,
    bytes: i,
    fetchedAt: '2026-01-01T00:00:00.000Z',
    ms: 1,
    depth: 0,
    outlinks: 0,
    ...overrides,
  };
}

const info = (seeds: string[]) => ({
  seeds,
  startedAt: new Date('2026-01-01T00:00:00Z'),
  endedAt: new Date('2026-01-01T00:00:10Z'),
});

describe('writeCrawlOutput', () => {
  it('copies WARC objects byte for byte, writes the stored lines once per key, counts, and reports damage', async () => {
    const crawlId = 'small';
    const warcs = new Map([
      [`warc/${crawlId}/2026-01-01/a.warc.gz`, randomBytes(3 * 1024 * 1024)],
      [`warc/${crawlId}/2026-01-02/b_0001.warc.gz`, randomBytes(1000)],
    ]);
    for (const [key, body] of warcs) await blobs.put(key, body, 'application/warc');
    const first = [result(crawlId, 1), result(crawlId, 2, { outcome: 'skipped', status: undefined })];
    const second = [result(crawlId, 1, { outcome: 'failed' }), result(crawlId, 3)]; // /1 again: the first wins
    const text = (lines: CrawlResult[]) => lines.map((r) => `${JSON.stringify(indexLine(r))}\n`).join('');
    await blobs.put(`${resultsPrefix(crawlId)}1-a.jsonl.gz`, gzipSync(text(first)), 'application/x-ndjson');
    await blobs.put(`${resultsPrefix(crawlId)}2-b.jsonl.gz`, Buffer.from('not gzip'), 'application/x-ndjson');
    await blobs.put(`${resultsPrefix(crawlId)}3-c.jsonl.gz`, gzipSync(text(second)), 'application/x-ndjson');

    const outDir = join(tempDir, crawlId);
    const told: IndexDamage[] = [];
    const report = await writeCrawlOutput(blobs, crawlId, outDir, {
      ...info(['http://out.test/']),
      costReport: (fetched) => crawlCostReport({ operations: {} }, {}, fetched),
      onDamage: (damage) => told.push(damage),
    });

    assert.deepEqual((await readdir(join(outDir, 'warc'))).sort(), ['a.warc.gz', 'b_0001.warc.gz']);
    for (const [key, body] of warcs) {
      const name = key.split('/').at(-1)!;
      assert.ok((await readFile(join(outDir, 'warc', name))).equals(body), name);
    }
    assert.equal(
      await readFile(join(outDir, 'results.jsonl'), 'utf8'),
      text([first[0]!, first[1]!, second[1]!]),
    );
    assert.deepEqual(told, [
      { key: `${resultsPrefix(crawlId)}2-b.jsonl.gz`, reason: 'not gzip (incorrect header check)' },
    ]);
    assert.deepEqual(report.damages, told);
    const summary = JSON.parse(await readFile(join(outDir, 'summary.json'), 'utf8'));
    assert.deepEqual(summary, report.summary);
    assert.deepEqual(
      {
        urls: summary.urls,
        byOutcome: summary.byOutcome,
        bytes: summary.bytes,
        warcFiles: summary.warcFiles,
      },
      { urls: 3, byOutcome: { fetched: 2, skipped: 1 }, bytes: 6, warcFiles: 2 },
    );
    assert.equal(report.summary.aws?.pages, 2);
    assert.equal(summary.pagesPerSecond, 0.2);
  });

  it('writes each page to a Markdown file of its own, and reports one that cannot be written without losing the rest', async () => {
    const crawlId = 'names';
    const site = 'http://out.test';
    const suffix = createHash('sha256').update(`${site}/b.html`).digest('hex').slice(0, 8);
    const urls = [
      // A page and a directory of one name, in both orders (EEXIST, EISDIR).
      `${site}/a`,
      `${site}/a.md/x`,
      `${site}/c.md/x`,
      `${site}/c`,
      // A name of 100 three-byte characters: 300 bytes (ENAMETOOLONG).
      `${site}/${encodeURIComponent('€'.repeat(100))}`,
      // A page whose name is the collision suffix another page gets.
      `${site}/b_${suffix}`,
      `${site}/b`,
      `${site}/b.html`,
      // In the way: the directory made below stands where this page's file goes.
      `${site}/blocked`,
      `${site}/last`,
    ];
    const records = urls.map((url) => ({
      v: 1,
      crawlId,
      key: frontierKey(url),
      url,
      fetchedAt: '2026-01-01T00:00:00.000Z',
      mime: 'text/html',
      kind: 'html',
      wordCount: 2,
      markdown: `page ${url}`,
    }));
    const lines = records.map((record) => `${JSON.stringify(record)}\n`).join('');
    await blobs.put(
      `${contentPrefix(crawlId)}2026-01-01/a.jsonl.gz`,
      gzipSync(lines),
      'application/x-ndjson',
    );
    const results = urls.map((url, i) => indexLine(result(crawlId, i, { url, key: frontierKey(url) })));
    const resultsText = results.map((line) => `${JSON.stringify(line)}\n`).join('');
    await blobs.put(`${resultsPrefix(crawlId)}1.jsonl.gz`, gzipSync(resultsText), 'application/x-ndjson');

    const outDir = join(tempDir, crawlId);
    const markdownDir = join(tempDir, `${crawlId}-md`);
    await mkdir(join(markdownDir, 'out.test', 'blocked.md'), { recursive: true });
    const told: IndexDamage[] = [];
    const report = await writeCrawlOutput(blobs, crawlId, outDir, {
      ...info([`${site}/`]),
      markdownDir,
      onDamage: (damage) => told.push(damage),
    });

    // The page that could not be written is named with why; nothing else is missing.
    assert.equal(told.length, 1, JSON.stringify(told));
    assert.equal(told[0]?.key, `${site}/blocked`);
    assert.match(told[0]?.reason ?? '', /^Markdown file not written \(EISDIR: .*blocked\.md'\)$/);
    assert.deepEqual(report.damages, told);
    assert.equal(await readFile(join(outDir, 'pages.jsonl'), 'utf8'), lines);
    assert.equal(await readFile(join(outDir, 'results.jsonl'), 'utf8'), resultsText);
    const summary = JSON.parse(await readFile(join(outDir, 'summary.json'), 'utf8'));
    assert.equal(summary.contentRecords, urls.length);
    assert.equal(summary.markdownFiles, urls.length - 1);
    // Every other page is in a file of its own, none overwritten by another.
    const pages: string[] = [];
    for (const entry of await readdir(markdownDir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const text = await readFile(join(entry.parentPath, entry.name), 'utf8');
      pages.push(/\npage (.*)\n$/.exec(text)?.[1] ?? `(no page in ${entry.name})`);
    }
    assert.deepEqual(pages.sort(), urls.filter((url) => !url.endsWith('/blocked')).sort());
  });

  // V8's longest string (2^29 - 24 UTF-16 code units in Node 24): the old `lines.join('')` threw here.
  const MAX = constants.MAX_STRING_LENGTH;
  // Long `reason`s make each line big, so few lines (and little JSON work) pass the limit.
  const REASON = 'r'.repeat(60 * 1024);
  const LINES_PER_PART = 64;
  const crawlId = 'big';
  const lineText = (i: number) =>
    JSON.stringify(
      indexLine(result(crawlId, i, { outcome: 'failed', code: 'http-500', reason: `${i} ${REASON}` })),
    );
  // Line 0 is the shortest (fewest digits), so this many lines pass the limit with room to spare.
  const lines = Math.ceil((MAX + 4 * 1024 * 1024) / (Buffer.byteLength(lineText(0)) + 1));
  let totalBytes = 0;
  for (let i = 0; i < lines; i++) totalBytes += Buffer.byteLength(lineText(i)) + 1;
  // The limit follows the work: a floor for set-up plus a slow machine's 2 MB/s for every byte written.
  const timeout = 60_000 + Math.ceil(totalBytes / 2e6) * 1000;

  it(`writes results.jsonl larger than the longest string (${lines} lines, ${(totalBytes / 2 ** 20).toFixed(0)} MiB)`, {
    timeout,
  }, async (t) => {
    for (let start = 0; start < lines; start += LINES_PER_PART) {
      // Parts made with a streaming gzip: no part's text is ever one string.
      const gzip = createGzip({ level: 1 });
      const chunks: Buffer[] = [];
      gzip.on('data', (chunk: Buffer) => chunks.push(chunk));
      for (let i = start; i < Math.min(lines, start + LINES_PER_PART); i++) {
        if (!gzip.write(`${lineText(i)}\n`)) await once(gzip, 'drain');
      }
      gzip.end();
      await once(gzip, 'end');
      const part = `${resultsPrefix(crawlId)}${String(start / LINES_PER_PART).padStart(6, '0')}.jsonl.gz`;
      await blobs.put(part, Buffer.concat(chunks), 'application/x-ndjson');
    }

    const outDir = join(tempDir, crawlId);
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    }, 20);
    let report: Awaited<ReturnType<typeof writeCrawlOutput>>;
    try {
      report = await writeCrawlOutput(blobs, crawlId, outDir, info([]));
    } finally {
      clearInterval(sampler);
    }
    const size = (await stat(join(outDir, 'results.jsonl'))).size;
    assert.ok(size > MAX, `results.jsonl is ${size} bytes, not above ${MAX}`);
    assert.equal(size, totalBytes);
    assert.deepEqual(report.damages, []);
    assert.equal(report.summary.urls, lines);
    assert.deepEqual(report.summary.byOutcome, { failed: lines });
    assert.equal(report.summary.bytes, (lines * (lines - 1)) / 2);
    // Streamed: memory grew by far less than the output (the old code held every line, then the join).
    const grown = rssPeak - rssBefore;
    t.diagnostic(`${size} bytes written; RSS grew by ${(grown / 2 ** 20).toFixed(0)} MiB at most`);
    assert.ok(grown < 300 * 2 ** 20, `RSS grew by ${(grown / 2 ** 20).toFixed(0)} MiB while writing`);

    // Every line, in order, exactly as stored.
    let n = 0;
    for await (const line of createInterface({
      input: createReadStream(join(outDir, 'results.jsonl')),
      crlfDelay: Infinity,
    })) {
      if (line !== lineText(n)) assert.fail(`results.jsonl line ${n + 1} differs from the stored line`);
      n++;
    }
    assert.equal(n, lines);
    await rm(outDir, { recursive: true, force: true });
  });
});
