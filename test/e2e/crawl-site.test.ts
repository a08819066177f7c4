// `crawler crawl` end to end against generated sites on 127.0.0.1 (test/fixtures/generated-site.ts):
// the real CLI as a child process, the whole pipeline on embedded emulators, and every observation
// (results.jsonl, summary.json, warc/, the requests each site saw) compared exactly with the site's plan.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  diffAgainstPlan,
  type GeneratedSite,
  type SiteExpectation,
  startGeneratedSite,
} from '../fixtures/generated-site.ts';
import { type CrawlRun, type ResultLine, runCrawl, tempDir } from '../fixtures/run-cli.ts';

const FAST = ['--allow-private', '--delay', '0', '--concurrency', '4'];
const CRAWL_TIMEOUT_MS = 280_000;

function show(problems: readonly string[], max = 25): string {
  const head = problems.slice(0, max).join('\n  ');
  return problems.length > max ? `\n  ${head}\n  … and ${problems.length - max} more` : `\n  ${head}`;
}

function countBy<T>(items: Iterable<T>, keyOf: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[keyOf(item)] = (counts[keyOf(item)] ?? 0) + 1;
  return counts;
}

function pathOf(url: string): string {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
}

describe('crawler crawl: a generated site of 2,000+ pages', () => {
  const maxDepth = 8;
  let external: GeneratedSite;
  let site: GeneratedSite;
  let plan: SiteExpectation;
  let run: CrawlRun;
  let removeOut = async () => {};

  before(
    async () => {
      // The off-site host: a second counting server on another loopback address.
      external = await startGeneratedSite({ pages: 3, host: '127.0.0.2' });
      site = await startGeneratedSite({ pages: 2000, externalOrigin: external.origin });
      plan = site.plan({ maxDepth });
      const out = await tempDir();
      removeOut = out.remove;
      run = await runCrawl([`${site.origin}/`], [...FAST, '--max-depth', String(maxDepth), '--quiet'], {
        outDir: out.path,
        timeoutMs: CRAWL_TIMEOUT_MS,
      });
    },
    { timeout: CRAWL_TIMEOUT_MS + 30_000 },
  );
  after(async () => {
    await site?.close();
    await external?.close();
    await removeOut();
  });

  it('is big enough and has every trap the issue names', () => {
    assert.ok(plan.fetchedPaths.size >= 2000, `${plan.fetchedPaths.size} pages`);
    assert.ok(plan.disallowedPaths.size > 0 && plan.variantOnlyPaths.size > 0 && plan.externalLinks.size > 0);
    assert.ok(plan.notFoundPaths.size > 0 && plan.errorPaths.size > 0 && plan.depthSkipped.size > 0);
  });

  it('writes exactly one result per discovered URL, each with the planned outcome', () => {
    const diff = diffAgainstPlan(site, plan, run.results);
    assert.deepEqual(diff.results, [], `results differ from the plan:${show(diff.results)}`);
    assert.equal(run.results.length, plan.outcomes.size);
  });

  it('fetches every in-scope allowed page exactly once and requests nothing else', () => {
    const diff = diffAgainstPlan(site, plan, run.results);
    assert.deepEqual(diff.requests, [], `requests differ from the plan:${show(diff.requests)}`);
    for (const path of plan.fetchedPaths) assert.equal(site.hits.get(path), 1, path);
    assert.equal(site.hits.get('/robots.txt'), 1, 'robots.txt is fetched once per host per crawl');
  });

  it('never requests a disallowed URL, and never contacts an off-site host', () => {
    for (const path of plan.disallowedPaths) assert.equal(site.hits.get(path), undefined, path);
    assert.deepEqual([...external.hits], [], 'the off-site host on 127.0.0.2 got requests');
    for (const url of plan.externalLinks) {
      const result = run.results.find((r) => r.url === url);
      assert.equal(result?.outcome, 'skipped', url);
      assert.equal(result?.code, 'scope', url);
    }
    for (const result of run.results.filter((r) => r.outcome === 'disallowed')) {
      assert.ok(plan.disallowedPaths.has(pathOf(result.url)), result.url);
      assert.equal(result.status, undefined, `${result.url} has a status, so it was requested`);
    }
  });

  it('reaches pages linked only through duplicate variants, requesting each canonical URL once and no variant', () => {
    for (const path of plan.variantOnlyPaths) {
      assert.equal(site.hits.get(path), 1, path);
      const result = run.results.find((r) => r.url === `${site.origin}${path}`);
      assert.equal(result?.outcome, 'fetched', path);
    }
    const variantRequests = [...site.hits.keys()].filter((target) =>
      /utm_|fbclid|gclid|%[0-9a-f]{2}/i.test(target),
    );
    assert.deepEqual(variantRequests, []);
    const resultUrls = new Set(run.results.map((r) => r.url));
    for (const variant of plan.duplicateVariants.keys()) {
      assert.ok(!resultUrls.has(variant), `a result for the variant ${variant}`);
    }
  });

  it('cuts the trap exactly at --max-depth and records each page at its depth', () => {
    const trap = run.results.filter((r) => r.url.startsWith(`${site.origin}${plan.trapPrefix}`));
    const fetched = trap.filter((r) => r.outcome === 'fetched').map((r) => r.depth);
    assert.deepEqual(
      fetched.sort((a, b) => a - b),
      Array.from({ length: maxDepth }, (_, i) => i + 1),
    );
    const cut = trap.filter((r) => r.outcome !== 'fetched');
    assert.deepEqual(
      cut.map((r) => [r.outcome, r.code, r.depth]),
      [['skipped', 'depth', maxDepth + 1]],
    );
    assert.ok(run.results.every((r) => r.outcome !== 'fetched' || r.depth <= maxDepth));
  });

  it('ends 404s as failed at once and always-500s as failed after retries', () => {
    for (const path of plan.notFoundPaths) {
      const result = run.results.find((r) => r.url === `${site.origin}${path}`);
      assert.deepEqual([result?.outcome, result?.code, result?.status], ['failed', 'http-404', 404], path);
      assert.equal(site.hits.get(path), 1, path);
    }
    for (const path of plan.errorPaths) {
      const result = run.results.find((r) => r.url === `${site.origin}${path}`);
      assert.deepEqual([result?.outcome, result?.code, result?.status], ['failed', 'http-500', 500], path);
      assert.ok((site.hits.get(path) ?? 0) >= 2, `${path} was not retried`);
    }
  });

  it('follows redirects through the same scope, dedup and robots rules', () => {
    for (const [path, to] of plan.redirectPaths) {
      const source = run.results.find((r) => r.url === `${site.origin}${path}`);
      assert.equal(source?.outcome, 'redirected', path);
      const target = run.results.filter((r) => r.url === to);
      assert.equal(target.length, 1, `one result for the redirect target ${to}`);
    }
  });

  it('writes summary.json with the same counts', () => {
    const planned = countBy(plan.outcomes.values(), (o) => o.outcome);
    const reported = Object.fromEntries(Object.entries(run.summary.byOutcome).filter(([, n]) => n !== 0));
    assert.deepEqual(reported, planned);
    assert.equal(run.summary.urls, plan.outcomes.size);
  });

  it('stores a WARC record for every fetched page in DIR/warc, at the offset its result names', async () => {
    const files = new Map<string, Buffer>();
    const fetched = run.results.filter((r) => r.outcome === 'fetched');
    assert.equal(fetched.length, plan.fetchedPaths.size);
    for (const result of fetched) {
      const warc = (result as ResultLine).warc;
      assert.ok(warc, `${result.url} has no warc pointer`);
      const name = warc.key.split('/').at(-1) ?? '';
      assert.ok(run.warcFiles.includes(name), `${name} is not in warc/`);
      let bytes = files.get(name);
      if (!bytes) {
        bytes = await readFile(join(run.outDir, 'warc', name));
        files.set(name, bytes);
      }
      const record = gunzipSync(bytes.subarray(warc.offset, warc.offset + warc.length)).toString('latin1');
      assert.match(record, /^WARC\/1\.[01]\r\n/, result.url);
      assert.match(record, /\r\nWARC-Type: response\r\n/, result.url);
      const target = /\r\nWARC-Target-URI: <?([^\r\n>]+)>?\r\n/.exec(record)?.[1];
      assert.equal(target, result.finalUrl ?? result.url);
      assert.ok(record.includes(site.page(pathOf(result.url)).body), `${result.url}: body not in its record`);
    }
  });
});

describe('crawler crawl --max-depth', () => {
  let site: GeneratedSite;
  let removeOut = async () => {};
  after(async () => {
    await site?.close();
    await removeOut();
  });

  it('fetches exactly the pages within N hops and records the next hop as skipped (depth)', {
    timeout: 200_000,
  }, async () => {
    site = await startGeneratedSite({ pages: 400, seed: 7 });
    const plan = site.plan({ maxDepth: 2 });
    const out = await tempDir();
    removeOut = out.remove;
    const run = await runCrawl([`${site.origin}/`], [...FAST, '--max-depth', '2', '--quiet'], {
      outDir: out.path,
      timeoutMs: 180_000,
    });
    const diff = diffAgainstPlan(site, plan, run.results);
    assert.deepEqual(diff.results, [], `results differ from the plan:${show(diff.results)}`);
    assert.deepEqual(diff.requests, [], `requests differ from the plan:${show(diff.requests)}`);
    assert.ok(plan.depthSkipped.size > 100, 'the cut leaves many pages unfetched');
    for (const url of plan.depthSkipped) assert.equal(site.hits.get(pathOf(url)), undefined, url);
    assert.ok(run.results.every((r) => r.outcome !== 'fetched' || r.depth <= 2));
  });
});

describe('crawler crawl --max-pages', () => {
  let site: GeneratedSite;
  let removeOut = async () => {};
  after(async () => {
    await site?.close();
    await removeOut();
  });

  it('fetches exactly N pages under concurrency and records every other discovered URL as skipped', {
    timeout: 200_000,
  }, async () => {
    // Only plain pages: every admitted URL is one 200 fetch, so N pages = N requests.
    site = await startGeneratedSite({
      pages: 300,
      seed: 3,
      notFound: 0,
      errors: 0,
      redirects: false,
      trap: false,
      privatePages: 0,
      nofollow: false,
    });
    const maxPages = 60;
    const out = await tempDir();
    removeOut = out.remove;
    const run = await runCrawl([`${site.origin}/`], [...FAST, '--max-pages', String(maxPages), '--quiet'], {
      outDir: out.path,
      timeoutMs: 180_000,
    });

    const fetched = run.results.filter((r) => r.outcome === 'fetched');
    assert.equal(fetched.length, maxPages);
    const pageRequests = [...site.hits].filter(([target]) => target !== '/robots.txt');
    assert.equal(pageRequests.length, maxPages, 'distinct pages requested');
    assert.deepEqual(
      pageRequests.filter(([, count]) => count !== 1),
      [],
      'a page requested more than once',
    );
    assert.deepEqual(
      fetched.map((r) => pathOf(r.url)).sort(),
      pageRequests.map(([target]) => target).sort(),
      'the fetched results are the requested pages',
    );

    // Every URL linked from a fetched page (and the seed) has one result; the rest are skipped.
    const discovered = new Set([`${site.origin}/`]);
    for (const result of fetched)
      for (const link of site.page(pathOf(result.url)).links) discovered.add(link.url);
    const urls = run.results.map((r) => r.url);
    assert.equal(new Set(urls).size, urls.length, 'two results for one URL');
    assert.deepEqual([...urls].sort(), [...discovered].sort());
    const siteHost = new URL(site.origin).host;
    const wrong: string[] = [];
    let limited = 0;
    for (const result of run.results.filter((r) => r.outcome !== 'fetched')) {
      const want = new URL(result.url).host === siteHost ? 'limit' : 'scope';
      if (result.outcome !== 'skipped' || result.code !== want) {
        wrong.push(`${result.url}: ${result.outcome} ${result.code ?? ''}, expected skipped ${want}`);
      }
      if (want === 'limit') limited++;
    }
    assert.deepEqual(wrong, []);
    assert.ok(limited > 0, 'the limit left discovered pages unfetched');
    assert.equal(run.summary.byOutcome.fetched, maxPages);
  });
});
