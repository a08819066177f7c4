/**
 * `--max-cost-usd`: a crawl stops once its estimated AWS cost reaches the budget; the URLs still queued
 * end `cancelled`, each with one result, and the crawl ends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ESTIMATED_COST_PER_PAGE_USD } from '../../lambdas/core/budget.ts';
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
    const budgetPages = 10;
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
        String(budgetPages * ESTIMATED_COST_PER_PAGE_USD),
      ],
      { outDir: out.path },
    );
    const fetched = run.results.filter((result) => result.outcome === 'fetched');
    const cancelled = run.results.filter((result) => result.outcome === 'cancelled');
    assert.ok(fetched.length >= budgetPages, `fetched ${fetched.length}: the budget allows ${budgetPages}`);
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
