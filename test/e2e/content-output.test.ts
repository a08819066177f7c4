/**
 * Content for AI pipelines, as a user reads it: `crawler crawl --out DIR --markdown-dir MD` as a
 * child process against a site on 127.0.0.1, then the same Markdown read back four ways: the content
 * files in S3 (the embedded state, through the S3 API), DIR/pages.jsonl, the .md files, and
 * `crawler get --markdown|--text|--meta`; and `crawler llms-txt`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { iterateWarcFile } from '../../lambdas/core/archive/index.ts';
import { type ContentRecord, ContentRecordSchema } from '../../lambdas/core/results/index.ts';
import { locateStack } from '../../local/stack-locator.ts';
import { html, type Route, startSite, type TestSite } from '../fixtures/site.ts';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../..', import.meta.url));

const HOME = `<!doctype html><html lang="en"><head><title>Field Notes</title>
<meta name="description" content="Notes from the field.">
<meta property="og:site_name" content="Field Notes"></head><body>
<nav class="menu"><a href="/">Home</a> <a href="/posts/tides">Tides</a> NAVIGATION-TEXT</nav>
<main><h1>Field Notes</h1><p>Short notes written while walking the coast, about birds, tides and weather, collected here.</p>
<p><a href="/posts/tides">Read about tides</a>, or the <a href="/data.json">raw data</a>, or the <a href="/logo.png">logo</a>.</p></main>
<footer>FOOTER-TEXT cookie settings</footer></body></html>`;

const TIDES = `<html><head><title>Tides | Field Notes</title><meta name="author" content="Ann Example">
<meta property="article:published_time" content="2026-03-01T10:00:00Z"></head><body>
<div class="sidebar">SIDEBAR-TEXT <a href="/">home</a></div>
<article><h1>How tides work</h1>
<p>The moon pulls the ocean toward it, and the earth turns beneath that bulge, which is why most coasts see two high tides a day.</p>
<h2>Spring and neap</h2>
<ul><li>Spring tides: sun and moon aligned.</li><li>Neap tides: at right angles.</li></ul>
<pre><code>high = mean + amplitude</code></pre>
<p>See the <a href="/">index</a> for more notes.</p></article></body></html>`;

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4480000000049454e44ae426082',
  'hex',
);

function bytes(type: string, body: Uint8Array | string): Route {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': type });
    response.end(body);
  };
}

let site: TestSite;
let workDir: string;
let out: string;
let markdownDir: string;
let stateDir: string;
let crawlId: string;

async function crawler(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, [join(repo, 'bin/crawler.ts'), ...args], { cwd: workDir, timeout: 180_000 });
}

before(async () => {
  site = await startSite({
    '/': html(HOME),
    '/posts/tides': html(TIDES),
    '/data.json': bytes('application/json', '{"tide":"high","height_m":4.2}'),
    '/logo.png': bytes('image/png', PNG),
  });
  workDir = await mkdtemp(join(tmpdir(), 'content-output-'));
  out = join(workDir, 'out');
  markdownDir = join(workDir, 'md');
  stateDir = join(workDir, 'state');
  await crawler(
    'crawl',
    `${site.origin}/`,
    '--allow-private',
    '--delay',
    '0',
    '--quiet',
    '--warc-conversion',
    '--out',
    out,
    '--markdown-dir',
    markdownDir,
    '--state-dir',
    stateDir,
  );
  crawlId = (JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as { crawlId: string }).crawlId;
});
after(async () => {
  await site?.close();
  await rm(workDir, { recursive: true, force: true });
});

function assertTidesMarkdown(markdown: string | undefined): void {
  assert.ok(markdown !== undefined);
  assert.match(markdown, /^# How tides work$/m);
  assert.match(markdown, /^## Spring and neap$/m);
  assert.match(markdown, /^- Spring tides: sun and moon aligned\.$/m);
  assert.match(markdown, /```\nhigh = mean \+ amplitude\n```/);
  // Links are absolute against the page's URL; the sidebar is not content.
  assert.ok(markdown.includes(`[index](${site.origin}/)`), markdown);
  assert.ok(!markdown.includes('SIDEBAR-TEXT'), markdown);
}

describe('content records of a crawl', () => {
  it('are stored in S3 as gzip JSONL, each found from its results index line', async () => {
    const stack = await locateStack({ stateDir });
    try {
      const blobs = new S3Blobs(stack.clients.s3, stack.outputs.PageBucketName!);
      const keys: string[] = [];
      for await (const key of blobs.list(`content/${crawlId}/`)) keys.push(key);
      assert.ok(keys.length >= 1 && keys.every((key) => key.endsWith('.jsonl.gz')), keys.join());
      const records: ContentRecord[] = [];
      for (const key of keys) {
        const lines = gunzipSync(await blobs.get(key))
          .toString('utf8')
          .trim()
          .split('\n');
        for (const line of lines) records.push(ContentRecordSchema.parse(JSON.parse(line)));
      }
      assert.deepEqual(records.map((record) => new URL(record.url).pathname).sort(), [
        '/',
        '/data.json',
        '/posts/tides',
      ]);
      const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map(
          (line) =>
            JSON.parse(line) as { url: string; content?: { key: string; offset: number; length: number } },
        );
      const tides = results.find((result) => result.url === `${site.origin}/posts/tides`);
      assert.ok(tides?.content, 'the index line points at the content record');
      const member = await blobs.get(tides.content.key, tides.content);
      assertTidesMarkdown(
        ContentRecordSchema.parse(JSON.parse(gunzipSync(member).toString('utf8'))).markdown,
      );
      const png = results.find((result) => result.url === `${site.origin}/logo.png`);
      assert.equal(png?.content, undefined, 'an image has no content record');
    } finally {
      await stack.close();
    }
  });

  it('are in --out pages.jsonl with their metadata', async () => {
    const records = (await readFile(join(out, 'pages.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => ContentRecordSchema.parse(JSON.parse(line)));
    assert.equal(records.length, 3);
    const byPath = new Map(records.map((record) => [new URL(record.url).pathname, record]));
    const home = byPath.get('/');
    assert.equal(home?.title, 'Field Notes');
    assert.equal(home?.description, 'Notes from the field.');
    assert.equal(home?.language, 'en');
    assert.equal(home?.siteName, 'Field Notes');
    assert.ok(home?.markdown?.includes('Short notes written while walking the coast'));
    for (const noise of ['NAVIGATION-TEXT', 'FOOTER-TEXT'])
      assert.ok(!home?.markdown?.includes(noise), noise);
    const tides = byPath.get('/posts/tides');
    assertTidesMarkdown(tides?.markdown);
    assert.equal(tides?.author, 'Ann Example');
    assert.equal(tides?.publishedTime, '2026-03-01T10:00:00Z');
    assert.equal(tides?.text, undefined, 'one form per record: Markdown by default');
    const data = byPath.get('/data.json');
    assert.equal(data?.kind, 'text');
    assert.equal(data?.markdown, undefined, 'JSON is never run through the HTML path');
    assert.equal(data?.text?.trim(), '{"tide":"high","height_m":4.2}');
  });

  it('are .md files under --markdown-dir, named from the URL, with YAML front matter', async () => {
    const host = `127.0.0.1_${site.port}`;
    const tides = await readFile(join(markdownDir, host, 'posts', 'tides.md'), 'utf8');
    const [, front, body] = tides.split(/^---$/m);
    assert.match(front ?? '', /^url: "http:\/\/127\.0\.0\.1:\d+\/posts\/tides"$/m);
    assert.match(front ?? '', /^title: "Tides \| Field Notes"$/m);
    assert.match(front ?? '', /^author: "Ann Example"$/m);
    assertTidesMarkdown(body);
    const home = await readFile(join(markdownDir, host, 'index.md'), 'utf8');
    assert.match(home, /^description: "Notes from the field\."$/m);
  });

  it('are all exported by crawler export but one that cannot be written, which it names, exiting 1', async () => {
    const host = `127.0.0.1_${site.port}`;
    const exportOut = join(workDir, 'export-out');
    const exportMd = join(workDir, 'export-md');
    // Something in the way of one page's file: a directory where /posts/tides.md goes.
    const blocked = join(exportMd, host, 'posts', 'tides.md');
    await mkdir(blocked, { recursive: true });
    const failed = await crawler(
      'export',
      crawlId,
      '--state-dir',
      stateDir,
      '--out',
      exportOut,
      '--markdown-dir',
      exportMd,
    ).then(
      () => undefined,
      (error: { code?: number; stdout?: string; stderr?: string }) => error,
    );
    assert.equal(failed?.code, 1, failed?.stderr);
    assert.deepEqual(failed.stderr?.trim().split('\n'), [
      `warning: skipped ${site.origin}/posts/tides: Markdown file not written (EISDIR: illegal operation on a directory, open '${blocked}')`,
    ]);
    // Every other output is written, as the crawl wrote it.
    for (const file of ['pages.jsonl', 'results.jsonl']) {
      assert.equal(
        await readFile(join(exportOut, file), 'utf8'),
        await readFile(join(out, file), 'utf8'),
        file,
      );
    }
    const summary = JSON.parse(await readFile(join(exportOut, 'summary.json'), 'utf8')) as {
      markdownFiles: number;
    };
    const crawled = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as {
      markdownFiles: number;
    };
    assert.equal(summary.markdownFiles, crawled.markdownFiles - 1);
    assert.match(
      await readFile(join(exportMd, host, 'index.md'), 'utf8'),
      /^description: "Notes from the field\."$/m,
    );
  });

  it('are what crawler get --markdown, --text and --meta print', async () => {
    const url = `${site.origin}/posts/tides`;
    const markdown = await crawler('get', url, '--crawl', crawlId, '--state-dir', stateDir, '--markdown');
    assertTidesMarkdown(markdown.stdout);
    // The record holds Markdown; the text form is extracted from the stored page.
    const text = await crawler('get', url, '--crawl', crawlId, '--state-dir', stateDir, '--text');
    assert.match(text.stdout, /^How tides work$/m);
    assert.match(text.stdout, /two high tides a day/);
    assert.ok(!text.stdout.includes('```'), 'the text form has no Markdown syntax');
    assert.match(text.stderr, /text extracted from the stored page/);
    const meta = await crawler('get', url, '--crawl', crawlId, '--state-dir', stateDir, '--meta');
    const parsed = JSON.parse(meta.stdout) as Record<string, unknown>;
    assert.equal(parsed.title, 'Tides | Field Notes');
    assert.equal(parsed.markdown, undefined);
    await assert.rejects(
      crawler('get', `${site.origin}/logo.png`, '--crawl', crawlId, '--state-dir', stateDir, '--markdown'),
      (error: { code?: number; stderr?: string }) =>
        error.code === 1 && /logo\.png in crawl \S+ has no content record/.test(error.stderr ?? ''),
    );
  });

  it('go into the WARC files as conversion records with --warc-conversion', async () => {
    const names = (await readFile(join(out, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { filename?: string }).filename)
      .filter((name): name is string => name !== undefined);
    const conversions: Array<{ uri: string; type: string; refersTo: string; block: string }> = [];
    const responses = new Set<string>();
    for (const name of new Set(names)) {
      for (const { record } of iterateWarcFile(new Uint8Array(await readFile(join(out, name))))) {
        if (record.header('WARC-Type') === 'response') responses.add(record.header('WARC-Record-ID') ?? '');
        if (record.header('WARC-Type') === 'conversion')
          conversions.push({
            uri: record.header('WARC-Target-URI') ?? '',
            type: record.header('Content-Type') ?? '',
            refersTo: record.header('WARC-Refers-To') ?? '',
            block: Buffer.from(record.block).toString('utf8'),
          });
      }
    }
    assert.equal(conversions.length, 3);
    for (const conversion of conversions) assert.ok(responses.has(conversion.refersTo), conversion.uri);
    const tides = conversions.find((conversion) => conversion.uri.endsWith('/posts/tides'));
    assert.equal(tides?.type, 'text/markdown; charset=utf-8');
    assertTidesMarkdown(tides?.block);
    assert.equal(conversions.find((c) => c.uri.endsWith('/data.json'))?.type, 'text/plain; charset=utf-8');
  });

  it('make llms.txt and llms-full.txt with crawler llms-txt', async () => {
    const dir = join(workDir, 'llms');
    await crawler('llms-txt', crawlId, '--state-dir', stateDir, '--out', dir);
    const llms = await readFile(join(dir, 'llms.txt'), 'utf8');
    assert.match(llms, /^# Field Notes\n\n> Notes from the field\.\n\n## Pages\n/);
    assert.ok(llms.includes(`- [Field Notes](${site.origin}/): Notes from the field.`), llms);
    // page text is escaped in llms.txt as in the Markdown: `|` would start a table cell
    assert.ok(llms.includes(`- [Tides \\| Field Notes](${site.origin}/posts/tides)`), llms);
    const full = await readFile(join(dir, 'llms-full.txt'), 'utf8');
    assert.match(full, /^# Tides \\\| Field Notes\n\nSource: http:\/\/127\.0\.0\.1:\d+\/posts\/tides\n/m);
    assertTidesMarkdown(full);
  });
});

describe('--content text', () => {
  it('stores plain text instead of Markdown; crawler get --markdown extracts it from the stored page', async () => {
    const textOut = join(workDir, 'out-text');
    const state = join(workDir, 'state-text');
    await crawler(
      'crawl',
      `${site.origin}/posts/tides`,
      ...['--allow-private', '--delay', '0', '--quiet', '--max-depth', '0', '--content', 'text'],
      ...['--out', textOut, '--state-dir', state],
    );
    const records = (await readFile(join(textOut, 'pages.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => ContentRecordSchema.parse(JSON.parse(line)));
    assert.equal(records.length, 1);
    assert.equal(records[0]?.markdown, undefined);
    assert.match(records[0]?.text ?? '', /^How tides work$/m);
    assert.ok(!records[0]?.text?.includes('SIDEBAR-TEXT'));
    const id = (JSON.parse(await readFile(join(textOut, 'summary.json'), 'utf8')) as { crawlId: string })
      .crawlId;
    const markdown = await crawler(
      'get',
      `${site.origin}/posts/tides`,
      '--crawl',
      id,
      '--state-dir',
      state,
      '--markdown',
    );
    assertTidesMarkdown(markdown.stdout);
  });
});

describe('--content none', () => {
  it('stores no content records and writes an empty pages.jsonl', async () => {
    const noneOut = join(workDir, 'out-none');
    await crawler(
      'crawl',
      `${site.origin}/posts/tides`,
      '--allow-private',
      '--delay',
      '0',
      '--quiet',
      '--max-depth',
      '0',
      '--content',
      'none',
      '--out',
      noneOut,
      '--state-dir',
      join(workDir, 'state-none'),
    );
    assert.equal(await readFile(join(noneOut, 'pages.jsonl'), 'utf8'), '');
    const result = (await readFile(join(noneOut, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { url: string; outcome?: string; content?: unknown })
      .find((line) => line.url === `${site.origin}/posts/tides`);
    assert.equal(result?.outcome, 'fetched');
    assert.equal(result?.content, undefined);
  });
});

describe('content options', () => {
  it('refuse a bad --content in one line naming what it accepts, before anything runs', async () => {
    await assert.rejects(
      crawler('crawl', `${site.origin}/`, '--content', 'html', '--state-dir', join(workDir, 'state-bad')),
      (error: { code?: number; stderr?: string }) =>
        error.code === 2 &&
        (error.stderr ?? '').trim() ===
          'crawler crawl: --content expects one of markdown, text, none, got "html"',
    );
  });
});
