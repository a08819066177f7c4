/**
 * `--max-cost-usd`: a crawl stops once the counted cost of its AWS calls reaches the budget; the URLs
 * still queued end `cancelled`, each with one result, and the crawl ends. summary.json's counted cost
 * (the same calls at the same prices, plus the other functions' and Lambda time) has reached it too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type GeneratedSite, startGeneratedSite } from '../fixtures/generated-site.ts';
import { runCrawl, tempDir } from '../fixtures/run-cli.ts';

describe('crawler crawl --max-cost-usd', () => {
  let site: GeneratedSite;
  const dirs: Array<{ remove(): Promise<void> }> = [];
  before(async () => {
    site = await startGeneratedSite({
      pages: 600,
      notFound: 0,
      errors: 0,
      trap: false,
      externalLinks: false,
    });
  });
  after(async () => {
    await site.close();
    for (const dir of dirs) await dir.remove();
  });

  it('stops the crawl when the budget is spent, and every URL still ends with one result', async () => {
    // About 25 pages at the few dollars per million pages docs/performance.md measures.
    const budgetUsd = 0.0001;
    const out = await tempDir();
    dirs.push(out);
    const run = await runCrawl(
      [`${site.origin}/`],
      [
        '--allow-private',
        '--delay',
        '50',
        '--concurrency',
        '2',
        '--quiet',
        '--max-cost-usd',
        String(budgetUsd),
      ],
      { outDir: out.path },
    );
    const fetched = run.results.filter((result) => result.outcome === 'fetched');
    const cancelled = run.results.filter((result) => result.outcome === 'cancelled');
    const counted = (run.summary.aws as { cost: { total: number } } | undefined)?.cost.total;
    assert.ok(counted !== undefined, 'summary.json has the counted cost');
    assert.ok(counted >= budgetUsd, `stopped at a counted $${counted}, under the budget of $${budgetUsd}`);
    // Pages already admitted and in flight when the budget is found spent still finish; the rest do not.
    assert.ok(fetched.length < 150, `fetched ${fetched.length} of 600: the crawl did not stop`);
    assert.ok(cancelled.length > 0, 'queued URLs end cancelled');
    assert.equal(
      new Set(run.results.map((result) => result.url)).size,
      run.results.length,
      'one result per URL',
    );
    const requested = [...site.hits.entries()]
      .filter(([path]) => path !== '/robots.txt')
      .reduce((sum, [, n]) => sum + n, 0);
    assert.ok(requested < 150, `the site saw ${requested} page requests`);
  });
});
