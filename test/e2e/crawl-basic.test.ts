/**
 * The main job, as a user runs it: `crawler crawl` as a child process against a site on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { iterateWarcFile, parseHttpMessage } from '../../lambdas/core/archive/index.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../..', import.meta.url));
const PAGE = '<html><head><title>hello</title></head><body>Hello, crawler.</body></html>';

let site: TestSite;
let workDir: string;

before(async () => {
  site = await startSite({ '/': html(PAGE) });
  workDir = await mkdtemp(join(tmpdir(), 'crawl-basic-'));
});
after(async () => {
  await site.close();
  await rm(workDir, { recursive: true, force: true });
});

/** `crawler crawl ARGS --out …`, which must exit with `exitCode` (0: the crawl ran and crawled). */
async function crawl(...args: string[]) {
  return crawlExiting(0, ...args);
}

async function crawlExiting(exitCode: number, ...args: string[]) {
  const out = join(workDir, `out-${Math.random().toString(36).slice(2)}`);
  const { stdout, stderr } = await run(
    process.execPath,
    [join(repo, 'bin/crawler.ts'), 'crawl', ...args, '--out', out],
    {
      cwd: workDir,
      timeout: 120_000,
    },
  ).then(
    (done) => {
      assert.equal(0, exitCode, `exited 0, not ${exitCode}: ${done.stderr}`);
      return done;
    },
    (error: { code?: unknown; stdout: string; stderr: string }) => {
      assert.equal(error.code, exitCode, error.stderr);
      return error;
    },
  );
  const lines = (await readFile(join(out, 'results.jsonl'), 'utf8')).trim().split('\n').filter(Boolean);
  return { out, stdout, stderr, results: lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

test('crawl with --allow-private stores the page and writes one result with status 200', async () => {
  const { out, stdout, results } = await crawl(`${site.origin}/`, '--allow-private', '--quiet');
  assert.equal(results.length, 1);
  const [result] = results;
  assert.equal(result?.url, `${site.origin}/`);
  assert.equal(result?.status, 200);
  assert.equal(result?.outcome, 'fetched');
  assert.match(stdout, /fetched 1/);

  const warcs = await readdir(join(out, 'warc'));
  assert.ok(warcs.length >= 1);
  const bodies: string[] = [];
  for (const name of warcs) {
    for (const { record } of iterateWarcFile(new Uint8Array(await readFile(join(out, 'warc', name))))) {
      if (record.header('WARC-Type') === 'response')
        bodies.push(Buffer.from(parseHttpMessage(record.block).body).toString());
    }
  }
  assert.deepEqual(bodies, [PAGE]);
  const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as {
    byOutcome: Record<string, number>;
  };
  assert.equal(summary.byOutcome.fetched, 1);
});

test('without --allow-private the loopback address is refused: a result says why and no connection is made', async () => {
  const before = site.connections;
  // No seed could be crawled: exit 1, with the output written all the same.
  const { results, stderr } = await crawlExiting(1, `${site.origin}/`, '--quiet');
  assert.match(stderr, /no seed could be crawled: 1 blocked: .*--allow-private/);
  assert.equal(results.length, 1);
  const [result] = results;
  assert.equal(result?.outcome, 'blocked');
  assert.equal(result?.code, 'address-blocked');
  assert.match(String(result?.reason), /not allowed/);
  assert.equal(site.connections, before, 'the site saw a connection');
});

test('with --keep-going, an invalid URL gets a result with its reason and does not stop the others', async () => {
  const { results } = await crawl(
    'not a url',
    `${site.origin}/`,
    '--allow-private',
    '--quiet',
    '--keep-going',
  );
  const byOutcome = Object.fromEntries(results.map((result) => [result.outcome, result]));
  assert.equal(results.length, 2);
  assert.equal(byOutcome.fetched?.status, 200);
  assert.equal(byOutcome.invalid?.url, 'not a url');
  assert.match(String(byOutcome.invalid?.reason), /not a valid|invalid/i);
});

test('unknown options fail fast naming the option, and nothing runs', async () => {
  await assert.rejects(
    run(process.execPath, [join(repo, 'bin/crawler.ts'), 'crawl', `${site.origin}/`, '--max-pagez', '3'], {
      cwd: workDir,
    }),
    (error: { code: number; stderr: string }) => error.code === 2 && /--max-pagez/.test(error.stderr),
  );
  await assert.rejects(
    run(process.execPath, [join(repo, 'bin/crawler.ts'), 'crawl', `${site.origin}/`, '--scope', 'planet'], {
      cwd: workDir,
    }),
    (error: { code: number; stderr: string }) =>
      error.code === 2 && /--scope expects one of host, domain, prefix/.test(error.stderr),
  );
});

test('crawler robots prints the matcher decision per URL', async () => {
  const file = join(workDir, 'robots.txt');
  await import('node:fs/promises').then((fs) =>
    fs.writeFile(
      file,
      'User-agent: *\nDisallow: /private/\nAllow: /private/ok\n\nUser-agent: strictbot\nDisallow: /\n',
    ),
  );
  const { stdout } = await run(process.execPath, [
    join(repo, 'bin/crawler.ts'),
    'robots',
    file,
    'MyBot/1.0',
    'https://x.test/private/a',
    'https://x.test/private/ok',
    'https://x.test/public',
  ]);
  assert.equal(
    stdout,
    'disallowed https://x.test/private/a\nallowed https://x.test/private/ok\nallowed https://x.test/public\n',
  );
  const strict = await run(process.execPath, [
    join(repo, 'bin/crawler.ts'),
    'robots',
    file,
    'StrictBot',
    'https://x.test/public',
  ]);
  assert.equal(strict.stdout, 'disallowed https://x.test/public\n');
});
