/**
 * `crawler crawl --seeds-file FILE` as a user runs it: the seeds of a file (gzip here, with comments,
 * blank lines, a repeat and a bad line) crawled on two loopback sites, the scope made of the file's
 * hosts, the bad line named on stderr and ending `invalid`, summary.json counting the seeds.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../..', import.meta.url));

let one: TestSite;
let two: TestSite;
let outside: TestSite;
let workDir: string;

before(async () => {
  outside = await startSite({ '/x': html('not in scope') });
  one = await startSite({
    '/a': html(`<a href="/c">c</a> <a href="${outside.origin}/x">elsewhere</a>`),
    '/b': html('b'),
    '/c': html('c'),
  });
  two = await startSite({ '/': html('two') });
  workDir = await mkdtemp(join(tmpdir(), 'seeds-file-'));
});
after(async () => {
  await Promise.all([one.close(), two.close(), outside.close()]);
  await rm(workDir, { recursive: true, force: true });
});

test('crawl --seeds-file crawls the seeds of a gzip file within their hosts; a bad line is named and ends invalid', async () => {
  const seeds = join(workDir, 'seeds.txt.gz');
  const lines = [
    '# two sites',
    `${one.origin}/a`,
    '',
    `${one.origin}/b`,
    'htp:/broken',
    `${one.origin}/a#again`,
    `${two.origin}/`,
  ];
  await writeFile(seeds, gzipSync(lines.join('\n')));
  const out = join(workDir, 'out');
  const { stdout, stderr } = await run(
    process.execPath,
    [
      join(repo, 'bin/crawler.ts'),
      'crawl',
      '--seeds-file',
      seeds,
      '--allow-private',
      '--delay',
      '0',
      '--progress',
      'line',
      '--out',
      out,
    ],
    { cwd: workDir, timeout: 180_000 },
  );
  assert.match(stderr, new RegExp(`--seeds-file ${seeds}: line 5: .*htp:/broken`));
  const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { url: string; outcome: string; code?: string });
  assert.deepEqual(
    results.map((r) => `${r.outcome} ${r.url}`).sort(),
    [
      `fetched ${one.origin}/a`,
      `fetched ${one.origin}/b`,
      `fetched ${one.origin}/c`,
      `fetched ${two.origin}/`,
      'invalid htp:/broken',
      `skipped ${outside.origin}/x`,
    ].sort(),
  ); // the servers' ports decide the order
  assert.equal(results.find((r) => r.url === `${outside.origin}/x`)?.code, 'scope');
  assert.equal(outside.hits.get('/x') ?? 0, 0, 'out of scope: never requested');
  assert.equal(one.hits.get('/a'), 1, 'a repeated seed is fetched once');
  const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as {
    seeds: string[];
    seedCount: number;
  };
  assert.equal(summary.seedCount, 5, 'every seed line: the bad one and the repeat included');
  assert.deepEqual(summary.seeds, [], 'a seeds file is counted, not listed');
  assert.match(stdout, /fetched 4/);
});

test('crawl --seeds-file of a missing file is one line and exit 2, before anything starts', async () => {
  const missing = join(workDir, 'no-such-seeds.txt');
  const failed = await run(
    process.execPath,
    [join(repo, 'bin/crawler.ts'), 'crawl', '--seeds-file', missing],
    {
      cwd: workDir,
      timeout: 60_000,
    },
  ).then(
    () => assert.fail('exited 0'),
    (error: { code?: number; stderr: string }) => error,
  );
  assert.equal(failed.code, 2);
  assert.equal(failed.stderr, `crawler crawl: --seeds-file ${missing}: no such file\n`);
});
