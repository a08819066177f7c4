/**
 * What `crawler crawl --out DIR` leaves lines up (issue 14, "Output that lines up"): few, large WARC
 * files for a small one-host crawl; every `filename` in results.jsonl resolves under DIR; a non-empty
 * DIR is refused unless --force; the cost line gives this crawl's dollars.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { iterateWarcFile } from '../../lambdas/core/archive/index.ts';
import { runCli, runCrawl, tempDir } from '../fixtures/run-cli.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

const PAGES = 50;
let site: TestSite;
let work: Awaited<ReturnType<typeof tempDir>>;

before(async () => {
  const routes: Record<string, ReturnType<typeof html>> = {
    '/robots.txt': (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end('User-agent: *\nAllow: /\n');
    },
  };
  const links = Array.from({ length: PAGES - 1 }, (_, i) => `<a href="/p/${i + 1}">${i + 1}</a>`).join('\n');
  routes['/'] = html(`<html><body>${links}</body></html>`);
  for (let i = 1; i < PAGES; i++)
    routes[`/p/${i}`] = html(`<html><body>page ${i} ${'x'.repeat(2000)}</body></html>`);
  site = await startSite(routes);
  work = await tempDir('output-lines-up-');
});
after(async () => {
  await site?.close();
  await work?.remove();
});

describe('crawl --out', () => {
  it('refuses a non-empty --out before starting anything; --force clears it', async (t) => {
    const outDir = join(work.path, 'reused');
    await mkdir(join(outDir, 'warc'), { recursive: true });
    await writeFile(join(outDir, 'warc', 'other-crawl.warc.gz'), 'an earlier crawl');
    const refused = await runCli(['crawl', `${site.origin}/`, '--allow-private', '--out', outDir], {
      timeoutMs: 60_000,
    });
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /--out .* is not empty.*--force/);
    assert.equal(site.hits.get('/') ?? 0, 0, 'the refused crawl fetched');
    assert.ok(existsSync(join(outDir, 'warc', 'other-crawl.warc.gz')), 'the refused crawl touched --out');

    const run = await runCrawl([`${site.origin}/`], ['--allow-private', '--max-pages', '1', '--force'], {
      outDir,
    });
    assert.equal(run.summary.byOutcome.fetched, 1);
    assert.ok(!run.warcFiles.includes('other-crawl.warc.gz'), "the earlier crawl's file is still in --out");
    assert.equal(run.warcFiles.length, 1);
    // A 1-page crawl's cost: its own dollars, no per-million figure scaled from one page.
    assert.match(run.stdout, /aws: +\$\d+\.\d+ for this crawl/);
    assert.doesNotMatch(run.stdout, /per million/);
    t.diagnostic(run.stdout);
  });

  it(`a ${PAGES}-page crawl: every filename in results.jsonl resolves under --out`, async () => {
    const outDir = join(work.path, 'fifty');
    const run = await runCrawl([`${site.origin}/`], ['--allow-private', '--delay', '100'], {
      outDir,
      timeoutMs: 600_000,
    });
    const fetched = run.results.filter((line) => line.outcome === 'fetched');
    assert.equal(fetched.length, PAGES);
    for (const line of fetched) {
      assert.equal(typeof line.filename, 'string', `${line.url} has no filename`);
      const path = join(outDir, String(line.filename));
      assert.ok(existsSync(path), `${line.url}: filename ${String(line.filename)} is not under ${outDir}`);
      const bytes = new Uint8Array(await readFile(path));
      const slice = bytes.subarray(Number(line.offset), Number(line.offset) + Number(line.length));
      const [entry] = [...iterateWarcFile(slice)];
      assert.equal(entry?.record.header('WARC-Type'), 'response');
      assert.equal(entry?.record.header('WARC-Target-URI'), line.url);
    }
  });
});
