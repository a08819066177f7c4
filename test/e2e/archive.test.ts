// Archival output (issue 4), end to end: `crawler crawl` as a child process against a site serving
// pages in several charsets and content types (test/fixtures/content-site.ts), then `crawler get`,
// `status` and `results` as further child processes in the same working directory, reading the
// `.crawler/` state the crawl left there, exactly as a user would. Every observation is compared with
// the bytes the site really put on the wire; the WARC files are checked with warcio.js (independent
// of the project's own WARC code): digests, framing, record links, and warcio's own CDX indexer.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { CDXIndexer, WARCParser } from 'warcio';
import {
  type ContentPage,
  type ContentSite,
  DECOY_PREFIX,
  startContentSite,
} from '../fixtures/content-site.ts';
import {
  CRAWLER_BIN,
  type CrawlOutput,
  NODE_BIN,
  type ResultLine,
  readCrawlOutput,
  tempDir,
} from '../fixtures/run-cli.ts';
import { verifyWarc } from '../fixtures/warc-verify.ts';

const CRAWL_TIMEOUT_MS = 100_000;
const READ_TIMEOUT_MS = 30_000;

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** The field names of one results.jsonl line this file relies on (CDXJ-like index, lambdas/core/archive/cdxj.ts). */
interface IndexFields {
  urlkey?: unknown;
  timestamp?: unknown;
  mime?: unknown;
  digest?: unknown;
  filename?: unknown;
  offset?: unknown;
  length?: unknown;
  sha1?: unknown;
  outlinks?: unknown;
}

/** One WARC record as warcio.js reads it. */
interface WarcRecordInfo {
  file: string;
  offset: number;
  length: number;
  type: string;
  id: string | undefined;
  targetUri: string | undefined;
  concurrentTo: string[];
  warcinfoId: string | undefined;
}

/**
 * Runs `node bin/crawler.ts ...args` with `cwd` as the working directory and no CRAWLER_STATE_DIR,
 * so the embedded AWS keeps its state in `cwd/.crawler/` as it does for a user. stdout stays bytes.
 */
function crawler(args: string[], cwd: string, timeoutMs = READ_TIMEOUT_MS): Promise<Run> {
  const env = { ...process.env };
  delete env.CRAWLER_STATE_DIR;
  return new Promise((resolve, reject) => {
    const child = spawn(NODE_BIN, [CRAWLER_BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8') });
    });
  });
}

function describeRun(args: string[], run: Run): string {
  return `crawler ${args.join(' ')} exited ${run.code}\n--- stderr ---\n${run.stderr.slice(-3000)}\n--- stdout ---\n${run.stdout.toString('utf8').slice(-1500)}`;
}

/** RFC 4648 base32, as in WARC-Payload-Digest (written here, not taken from the project). */
function base32(bytes: Uint8Array): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const byte of bytes) bits += byte.toString(2).padStart(8, '0');
  let out = '';
  for (let i = 0; i < bits.length; i += 5)
    out += alphabet[Number.parseInt(bits.slice(i, i + 5).padEnd(5, '0'), 2)];
  return out.padEnd(Math.ceil(out.length / 8) * 8, '=');
}

function sha1(bytes: Uint8Array): Buffer {
  return createHash('sha1').update(bytes).digest();
}

/** A short, printable picture of where two byte strings first differ. */
function byteDiff(actual: Uint8Array, expected: Uint8Array): string {
  const a = Buffer.from(actual);
  const e = Buffer.from(expected);
  let i = 0;
  while (i < a.length && i < e.length && a[i] === e[i]) i++;
  const around = (b: Buffer) => b.subarray(Math.max(0, i - 8), i + 16).toString('hex');
  return `got ${a.length} bytes, expected ${e.length}; first difference at byte ${i}: got …${around(a)}…, expected …${around(e)}…`;
}

function assertBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  if (!Buffer.from(actual).equals(Buffer.from(expected)))
    assert.fail(`${what}: ${byteDiff(actual, expected)}`);
}

/** Minimal RFC 4180 reader: quoted fields (with "" escapes, commas, CR, LF), CRLF or LF records. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      row.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += char;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** Reads every record of a .warc.gz with warcio.js: type, ids, links, and each gzip member's place. */
async function readRecords(file: string, bytes: Uint8Array): Promise<WarcRecordInfo[]> {
  const records: WarcRecordInfo[] = [];
  const parser = new WARCParser([bytes], { parseHttp: false });
  for await (const record of parser) {
    await record.readFully();
    records.push({
      file,
      offset: parser.offset,
      length: parser.recordLength,
      type: record.warcType,
      id: record.warcHeader('WARC-Record-ID') ?? undefined,
      targetUri: record.warcTargetURI ?? undefined,
      concurrentTo: (record.warcConcurrentTo ?? []).map((value) => value.trim()),
      warcinfoId: record.warcHeader('WARC-Warcinfo-ID') ?? undefined,
    });
  }
  return records;
}

/** The one record in a gzip member, read alone (as after a ranged GET), with its HTTP message split. */
async function readMember(member: Uint8Array): Promise<{
  type: string;
  id: string | undefined;
  targetUri: string | undefined;
  status: string | number | undefined;
  headers: Headers;
  payload: Uint8Array;
  content: Uint8Array;
  more: boolean;
}> {
  const parser = new WARCParser([member], { parseHttp: true });
  const record = await parser.parse();
  assert.ok(record, 'no WARC record in the gzip member');
  const payload = await record.readFully(false);
  // warcio decodes Content-Encoding for the content view of the payload it already read.
  const content = await record.readFully(true);
  const info = record.getResponseInfo();
  const headers = new Headers();
  if (info) for (const [name, value] of info.headers) headers.append(name, value);
  const more = (await parser.parse()) !== null;
  return {
    type: record.warcType,
    id: record.warcHeader('WARC-Record-ID') ?? undefined,
    targetUri: record.warcTargetURI ?? undefined,
    status: info?.status,
    headers,
    payload,
    content,
    more,
  };
}

/** One chunk as an async iterable (warcio's indexer takes a stream). */
async function* chunks(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** The representation as a client would decode it (content-coding undone). */
function expectedBody(page: ContentPage, raw: boolean): Buffer {
  return raw ? page.body : page.decoded;
}

describe('archival output: WARC files, results index and crawler get for pages of every kind', () => {
  let site: ContentSite;
  let work: { path: string; remove(): Promise<void> };
  let out: CrawlOutput;
  let crawlId: string;
  let started = 0;
  let ended = 0;
  /** Result line per path of the site. */
  const byPath = new Map<string, ResultLine>();
  const urlOf = (path: string) => `${site.origin}${path}`;
  const pageOf = (path: string): ContentPage => {
    const page = site.pages.get(path);
    assert.ok(page, `no page ${path} in the fixture`);
    return page;
  };
  /** The one body the site served for a path (it must have served exactly one). */
  const servedOf = (path: string): Buffer => {
    const served = site.served.get(path) ?? [];
    assert.equal(served.length, 1, `${path} was served ${served.length} times`);
    return served[0]!;
  };

  before(
    async () => {
      site = await startContentSite();
      work = await tempDir('crawler-archive-');
      const outDir = join(work.path, 'out');
      const args = [
        'crawl',
        `${site.origin}/`,
        '--allow-private',
        '--delay',
        '0',
        '--quiet',
        '--out',
        outDir,
      ];
      started = Date.now();
      const run = await crawler(args, work.path, CRAWL_TIMEOUT_MS);
      ended = Date.now();
      if (run.code !== 0) throw new Error(describeRun(args, run));
      out = await readCrawlOutput(outDir);
      const ids = new Set(out.results.map((result) => result.crawlId));
      assert.equal(ids.size, 1, `results of several crawls: ${[...ids].join(', ')}`);
      crawlId = [...ids][0]!;
      for (const result of out.results) {
        const url = new URL(result.url);
        if (url.origin === site.origin) byPath.set(url.pathname + url.search, result);
      }
    },
    { timeout: CRAWL_TIMEOUT_MS + 20_000 },
  );
  after(async () => {
    await site?.close();
    await work?.remove();
  });

  it('fetches every page once, follows links in windows-1251, Shift_JIS and gzip HTML, and none in PDF, text or JSON bodies', () => {
    const expected = [...site.expectedPaths].sort();
    for (const path of expected)
      assert.equal(site.hits.get(path), 1, `${path} was requested ${site.hits.get(path) ?? 0} times`);
    // The pages linked only from the non-UTF-8 and gzip pages prove their links were extracted.
    for (const path of ['/cp1251/linked', '/sjis/linked', '/gzip/linked']) {
      assert.ok(
        site.hits.has(path),
        `${path} (linked only from ${path.slice(0, path.lastIndexOf('/'))}) was never fetched`,
      );
    }
    const decoyRequests = site.requests.filter((target) => target.startsWith(DECOY_PREFIX));
    assert.deepEqual(decoyRequests, [], 'a link written in a non-HTML body was followed');
    const unexpected = site.requests.filter(
      (target) => !site.expectedPaths.has(target) && target !== '/robots.txt',
    );
    assert.deepEqual(unexpected, [], 'requests for paths the site does not link');
    const decoyResults = out.results.filter((result) => result.url.includes(DECOY_PREFIX));
    assert.deepEqual(
      decoyResults.map((result) => result.url),
      [],
      'a URL written in a non-HTML body was admitted to the crawl',
    );

    for (const path of expected) {
      const page = pageOf(path);
      const result = byPath.get(path);
      assert.ok(result, `no result for ${path}`);
      assert.equal(
        result.outcome,
        'fetched',
        `${path}: ${result.outcome} ${result.code ?? ''} ${result.reason ?? ''}`,
      );
      assert.equal(result.status, 200, path);
      const outlinks = (result as IndexFields).outlinks;
      assert.equal(outlinks, page.links.length, `${path}: outlinks (links extracted from the page)`);
    }
    const depthOf = (path: string) => (path === '/' ? 0 : path.endsWith('/linked') ? 2 : 1);
    for (const path of expected) assert.equal(byPath.get(path)?.depth, depthOf(path), `${path}: depth`);
  });

  it('results.jsonl has exactly one line per URL, with the CDXJ fields, and the digest of the bytes as served', () => {
    const urls = out.results.map((result) => result.url);
    assert.equal(
      new Set(urls).size,
      urls.length,
      `duplicate lines: ${urls.filter((u, i) => urls.indexOf(u) !== i).join(', ')}`,
    );
    assert.deepEqual(
      [...urls].sort(),
      [...site.expectedPaths].map(urlOf).sort(),
      'results.jsonl URLs differ from the pages of the site',
    );
    const port = site.port;
    for (const path of site.expectedPaths) {
      const page = pageOf(path);
      const served = servedOf(path);
      const result = byPath.get(path)!;
      const line = result as ResultLine & IndexFields;
      const where = `results.jsonl line of ${path}`;
      // SURT of the IP host, labels reversed as pywb does.
      assert.equal(line.urlkey, `1,0,0,127:${port})${path}`, `${where}: urlkey`);
      assert.ok(
        typeof line.timestamp === 'string' && /^\d{14}$/.test(line.timestamp),
        `${where}: timestamp ${String(line.timestamp)}`,
      );
      const stamp = (ms: number) => new Date(ms).toISOString().replace(/\D/g, '').slice(0, 14);
      assert.ok(
        line.timestamp >= stamp(started) && line.timestamp <= stamp(ended),
        `${where}: timestamp ${line.timestamp} outside the crawl (${stamp(started)}..${stamp(ended)})`,
      );
      assert.equal(line.mime, page.mime, `${where}: mime`);
      assert.equal(line.status, 200, `${where}: status`);
      const digest = sha1(served);
      assert.equal(
        line.digest,
        `sha1:${base32(digest)}`,
        `${where}: digest must be the SHA-1 of the payload as served`,
      );
      assert.equal(line.sha1, digest.toString('hex'), `${where}: sha1`);
      assert.ok(result.warc, `${where}: no warc pointer`);
      // In --out, filename names the copy under --out; warc.key keeps the S3 key.
      assert.equal(line.filename, `warc/${basename(result.warc.key)}`, `${where}: filename`);
      assert.equal(line.offset, result.warc.offset, `${where}: offset`);
      assert.equal(line.length, result.warc.length, `${where}: length`);
      assert.ok(
        Number.isInteger(line.offset) && (line.offset as number) >= 0,
        `${where}: offset ${String(line.offset)}`,
      );
      assert.ok(
        Number.isInteger(line.length) && (line.length as number) > 0,
        `${where}: length ${String(line.length)}`,
      );
      assert.ok(
        out.warcFiles.includes(basename(result.warc.key)),
        `${where}: ${result.warc.key} is not in ${out.outDir}/warc (${out.warcFiles.join(', ')})`,
      );
    }
    assert.equal(out.summary.urls, out.results.length, 'summary.json urls');
    assert.equal(out.summary.byOutcome.fetched, site.expectedPaths.size, 'summary.json fetched count');
  });

  it('every WARC file verifies with warcio.js: framing, block and payload digests, one warcinfo first', async () => {
    assert.ok(out.warcFiles.length >= 1, 'no WARC files written');
    const problems: string[] = [];
    for (const name of out.warcFiles) {
      assert.match(name, /\.warc\.gz$/, `${name}: not a .warc.gz`);
      const bytes = new Uint8Array(await readFile(join(out.outDir, 'warc', name)));
      const report = await verifyWarc(bytes);
      for (const error of report.errors) problems.push(`${name}: ${error}`);
      for (const problem of report.problems) problems.push(`${name}: ${problem}`);
      for (const warning of report.warnings) problems.push(`${name}: warning: ${warning}`);
      assert.ok(report.records.length >= 2, `${name}: ${report.records.length} records`);
      for (const [index, record] of report.records.entries()) {
        if (record.blockDigestOk !== true) {
          problems.push(
            `${name} #${index} ${record.type}: block digest ${record.blockDigestOk === null ? 'missing' : 'wrong'}`,
          );
        }
        if (record.type === 'response' && record.payloadDigestOk !== true) {
          problems.push(
            `${name} #${index} response: payload digest ${record.payloadDigestOk === undefined ? 'missing' : 'wrong'}`,
          );
        }
      }
      const types = report.records.map((record) => record.type);
      assert.equal(types[0], 'warcinfo', `${name}: the first record is ${types[0]}, not warcinfo`);
      assert.equal(
        types.filter((type) => type === 'warcinfo').length,
        1,
        `${name}: warcinfo records: ${types.join(' ')}`,
      );
      const records = await readRecords(name, bytes);
      const warcinfoId = records[0]?.id;
      for (const record of records.slice(1)) {
        if (record.warcinfoId !== warcinfoId) {
          problems.push(
            `${name} ${record.type} ${record.id}: WARC-Warcinfo-ID ${record.warcinfoId} is not the file's warcinfo ${warcinfoId}`,
          );
        }
      }
    }
    assert.deepEqual(problems, [], `WARC problems:\n  ${problems.join('\n  ')}`);
  });

  it("each result's {key, offset, length} is its response record, stored as served, with request and metadata linked by WARC-Concurrent-To", async () => {
    const files = new Map<string, Uint8Array>();
    const records = new Map<string, WarcRecordInfo[]>();
    for (const name of out.warcFiles) {
      const bytes = new Uint8Array(await readFile(join(out.outDir, 'warc', name)));
      files.set(name, bytes);
      records.set(name, await readRecords(name, bytes));
    }
    const responses = [...records.values()].flat().filter((record) => record.type === 'response');
    assert.deepEqual(
      responses.map((record) => record.targetUri).sort(),
      [...site.expectedPaths].map(urlOf).sort(),
      'response records in the WARC files: one per fetched URL, no more',
    );

    for (const path of site.expectedPaths) {
      const page = pageOf(path);
      const result = byPath.get(path)!;
      assert.ok(result.warc, `${path}: no warc pointer`);
      const { key, offset, length } = result.warc;
      const name = basename(key);
      const file = files.get(name);
      assert.ok(file, `${path}: WARC file ${name} is not in ${out.outDir}/warc`);
      const where = `${name} @${offset}+${length} (${path})`;
      const member = file.subarray(offset, offset + length);
      assert.equal(member.length, length, `${where}: beyond the end of the file (${file.length} bytes)`);
      assert.deepEqual([member[0], member[1]], [0x1f, 0x8b], `${where}: not the start of a gzip member`);
      assert.doesNotThrow(() => gunzipSync(member), `${where}: the range does not gunzip on its own`);

      const record = await readMember(member);
      assert.equal(record.more, false, `${where}: the range holds more than one record`);
      assert.equal(record.type, 'response', `${where}: a ${record.type} record, not the response`);
      assert.equal(record.targetUri, result.finalUrl ?? result.url, `${where}: WARC-Target-URI`);
      assert.equal(record.targetUri, urlOf(path), `${where}: WARC-Target-URI`);
      assert.equal(Number(record.status), 200, `${where}: HTTP status`);
      assert.equal(record.headers.get('content-type'), page.contentType, `${where}: stored Content-Type`);
      assert.equal(
        record.headers.get('content-encoding'),
        page.contentEncoding ?? null,
        `${where}: stored Content-Encoding`,
      );
      assertBytes(record.payload, servedOf(path), `${where}: the stored payload is not the bytes served`);
      if (page.contentEncoding) {
        assertBytes(
          record.content,
          page.decoded,
          `${where}: warcio's decoding of the stored ${page.contentEncoding} payload`,
        );
      }
      if (page.charset && page.text !== undefined) {
        assert.equal(
          new TextDecoder(page.charset).decode(record.content),
          page.text,
          `${where}: text in ${page.charset}`,
        );
      }

      // Its request and metadata records, by WARC-Concurrent-To, in the same file.
      const inFile = records.get(name)!;
      const located = inFile.find((r) => r.offset === offset);
      assert.ok(located, `${where}: warcio finds no record starting at ${offset}`);
      assert.equal(located.length, length, `${where}: warcio says the member is ${located.length} bytes`);
      assert.ok(located.id, `${where}: no WARC-Record-ID`);
      const linked = inFile.filter((r) => r.concurrentTo.includes(located.id!));
      const requests = linked.filter((r) => r.type === 'request');
      const metadata = linked.filter((r) => r.type === 'metadata');
      assert.equal(
        requests.length,
        1,
        `${where}: request records concurrent to ${located.id}: ${requests.length}`,
      );
      assert.equal(
        metadata.length,
        1,
        `${where}: metadata records concurrent to ${located.id}: ${metadata.length}`,
      );
      assert.equal(requests[0]!.targetUri, record.targetUri, `${where}: the request's WARC-Target-URI`);
      assert.equal(metadata[0]!.targetUri, record.targetUri, `${where}: the metadata's WARC-Target-URI`);
    }
  });

  it("warcio's own CDX indexer finds the same urlkey, mime, status, digest and place as results.jsonl", async () => {
    const indexer = new CDXIndexer({ format: 'json' });
    const entries: Array<Record<string, unknown>> = [];
    for (const name of out.warcFiles) {
      const bytes = new Uint8Array(await readFile(join(out.outDir, 'warc', name)));
      for await (const entry of indexer.iterIndex([{ filename: name, reader: chunks(bytes) }])) {
        entries.push(entry as Record<string, unknown>);
      }
    }
    for (const path of site.expectedPaths) {
      const result = byPath.get(path)!;
      const line = result as ResultLine & IndexFields;
      const matches = entries.filter((entry) => entry.url === urlOf(path));
      assert.equal(matches.length, 1, `warcio CDX entries for ${path}: ${JSON.stringify(matches)}`);
      const entry = matches[0]!;
      const where = `${path}: warcio CDX vs results.jsonl`;
      // The site's paths are ones where warcio's simpler key agrees with pywb's (no trailing `/`,
      // session id or encoded reserved character): test/unit/cdxj.test.ts lists where it does not.
      assert.equal(entry.urlkey, line.urlkey, `${where}: urlkey`);
      assert.equal(entry.mime, line.mime, `${where}: mime`);
      assert.equal(Number(entry.status), line.status, `${where}: status`);
      assert.equal(`sha1:${String(entry.digest)}`, line.digest, `${where}: digest`);
      assert.equal(entry.filename, basename(String(line.filename)), `${where}: filename`);
      assert.equal(entry.offset, line.offset, `${where}: offset`);
      assert.equal(entry.length, line.length, `${where}: length`);
    }
  });

  it('crawler get --body gives exactly the bytes served (gzip decoded), --raw the served gzip bytes', async () => {
    const failures: string[] = [];
    const check = async (path: string, raw: boolean) => {
      const page = pageOf(path);
      const args = ['get', urlOf(path), '--crawl', crawlId, '--body', ...(raw ? ['--raw'] : [])];
      const run = await crawler(args, work.path);
      if (run.code !== 0) {
        failures.push(describeRun(args, run));
        return;
      }
      const expected = expectedBody(page, raw);
      if (!run.stdout.equals(expected))
        failures.push(`crawler ${args.join(' ')}: ${byteDiff(run.stdout, expected)}`);
      if (!raw && page.contentEncoding === undefined && !run.stdout.equals(servedOf(path))) {
        failures.push(`crawler ${args.join(' ')}: not the bytes served`);
      }
    };
    for (const path of site.expectedPaths) await check(path, false);
    await check('/gzip', true);
    assert.ok(
      pageOf('/gzip').contentEncoding === 'gzip' && !pageOf('/gzip').body.equals(pageOf('/gzip').decoded),
    );
    assertBytes(pageOf('/gzip').body, servedOf('/gzip'), 'the fixture served its gzip body');
    assert.deepEqual(failures, [], failures.join('\n\n'));
  });

  it('crawler status (text and --json) says complete, with the counts of results.jsonl', async () => {
    const total = out.results.length;
    const byOutcome: Record<string, number> = {};
    for (const result of out.results) byOutcome[result.outcome] = (byOutcome[result.outcome] ?? 0) + 1;

    const jsonArgs = ['status', crawlId, '--json'];
    const json = await crawler(jsonArgs, work.path);
    assert.equal(json.code, 0, describeRun(jsonArgs, json));
    const status = JSON.parse(json.stdout.toString('utf8')) as {
      crawlId: string;
      state: string;
      queued: number;
      done: number;
      pending: number;
      byOutcome: Record<string, number>;
    };
    assert.equal(status.crawlId, crawlId);
    assert.equal(status.state, 'complete');
    assert.equal(status.done, total, 'done');
    assert.equal(status.queued, total, 'queued');
    assert.equal(status.pending, 0, 'pending');
    const nonZero = Object.fromEntries(Object.entries(status.byOutcome).filter(([, count]) => count !== 0));
    assert.deepEqual(nonZero, byOutcome, 'status byOutcome vs results.jsonl');

    const textArgs = ['status', crawlId];
    const text = await crawler(textArgs, work.path);
    assert.equal(text.code, 0, describeRun(textArgs, text));
    const output = text.stdout.toString('utf8');
    assert.match(output, new RegExp(`^crawl ${crawlId}: complete$`, 'm'), output);
    assert.match(output, new RegExp(`\\b${total} done of ${total} queued \\(0 pending\\)`), output);
    for (const [outcome, count] of Object.entries(byOutcome)) {
      assert.match(output, new RegExp(`\\b${outcome} ${count}\\b`), `${outcome} ${count} in:\n${output}`);
    }
  });

  it('crawler results --format csv has a header and one row per URL', async () => {
    const args = ['results', crawlId, '--format', 'csv'];
    const run = await crawler(args, work.path);
    assert.equal(run.code, 0, describeRun(args, run));
    const rows = parseCsv(run.stdout.toString('utf8'));
    const [header, ...body] = rows;
    assert.ok(header, 'no CSV output');
    for (const column of [
      'url',
      'status',
      'outcome',
      'mime',
      'digest',
      'timestamp',
      'filename',
      'offset',
      'length',
      'urlkey',
    ]) {
      assert.ok(header.includes(column), `CSV header lacks ${column}: ${header.join(',')}`);
    }
    assert.equal(
      body.length,
      out.results.length,
      `CSV rows: ${body.length}, results.jsonl lines: ${out.results.length}`,
    );
    for (const [index, row] of body.entries()) {
      assert.equal(
        row.length,
        header.length,
        `CSV row ${index + 1} has ${row.length} fields, the header ${header.length}`,
      );
    }
    const column = (name: string) => header.indexOf(name);
    const rowsByUrl = new Map(body.map((row) => [row[column('url')]!, row]));
    assert.equal(rowsByUrl.size, body.length, 'a URL has several CSV rows');
    for (const result of out.results) {
      const line = result as ResultLine & IndexFields;
      const row = rowsByUrl.get(result.url);
      assert.ok(row, `no CSV row for ${result.url}`);
      assert.equal(row[column('outcome')], result.outcome, `${result.url}: outcome`);
      assert.equal(row[column('status')], String(result.status), `${result.url}: status`);
      assert.equal(row[column('mime')], line.mime, `${result.url}: mime`);
      assert.equal(row[column('digest')], line.digest, `${result.url}: digest`);
      assert.equal(row[column('offset')], String(line.offset), `${result.url}: offset`);
      assert.equal(row[column('length')], String(line.length), `${result.url}: length`);
    }
  });
});
