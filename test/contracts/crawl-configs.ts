/**
 * What task admission and the fetch batch rely on from crawl configs (CrawlConfigReader and the
 * store's `put`), run against the in-memory fake (test/fakes/crawl-configs.ts) and CrawlConfigStore
 * on dynalite (test/integration/port-contracts.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { isCrawlError, PermanentError } from '../../lambdas/core/base/index.ts';
import {
  type CrawlConfig,
  type CrawlConfigReader,
  DEFAULT_CRAWL_ID,
  parseCrawlConfig,
  seedCount,
} from '../../lambdas/core/crawl/index.ts';
import { crawlScope } from '../../lambdas/core/frontier/index.ts';

export type CrawlConfigsUnderTest = CrawlConfigReader & {
  put(config: CrawlConfig, scopeKeys?: Iterable<string>): Promise<CrawlConfig>;
};

/** `make(defaults)`: a store whose default crawl has these settings. */
export function crawlConfigsContract(
  name: string,
  make: (defaults: { delayMs: number }) => CrawlConfigsUnderTest,
): void {
  const crawl = () => `cfg-${randomUUID().slice(0, 8)}`;

  describe(`CrawlConfigReader contract: ${name}`, () => {
    it('a stored config reads back as stored; it is stored once', async () => {
      const configs = make({ delayMs: 1 });
      const config = parseCrawlConfig({
        crawlId: crawl(),
        seeds: ['https://site.test/'],
        maxPages: 7,
        include: ['^https://site\\.test/a'],
        createdAt: '2025-01-01T00:00:00.000Z',
      });
      await configs.put(config);
      assert.deepEqual(await configs.get(config.crawlId), config);
      await assert.rejects(configs.put({ ...config, maxPages: 8 }));
      assert.equal((await configs.get(config.crawlId)).maxPages, 7);
    });

    it('a config of seeds from a file reads back with the scope its keys make, whatever their number', async () => {
      const configs = make({ delayMs: 1 });
      const crawlId = crawl();
      // 20,000 hosts: more than one stored part (96 KiB of keys each) on the adapter.
      const hosts = Array.from({ length: 20_000 }, (_, i) => `h${i}.site.test`);
      const config = parseCrawlConfig({
        crawlId,
        seeds: [],
        seedFile: { source: 'seeds.txt', count: 1_000_000, scopeParts: 0 },
      });
      const stored = await configs.put(config, hosts);
      const read = await configs.get(crawlId);
      assert.deepEqual(read, stored);
      assert.equal(seedCount(read), 1_000_000);
      assert.ok(read.seedFile!.scopeParts >= 1);
      assert.ok(
        Buffer.byteLength(JSON.stringify(read)) < 2_000,
        'the config item does not grow with the seeds',
      );
      for (const host of [hosts[0], hosts[12_345], hosts[19_999]])
        assert.deepEqual(crawlScope(read).inScope(`https://${host}/a/b`), { ok: true });
      assert.equal(crawlScope(read).inScope('https://h20000.site.test/').ok, false);
      await assert.rejects(configs.put({ ...config, crawlId: crawl() }), /need their scope keys/);
    });

    it('a crawl nobody stored is unknown-crawl, a PermanentError', async () => {
      const error = await make({ delayMs: 1 })
        .get(crawl())
        .then(
          () => assert.fail('read a config nobody stored'),
          (e: unknown) => e,
        );
      assert.ok(error instanceof PermanentError && isCrawlError(error), String(error));
      assert.equal(error.code, 'unknown-crawl');
    });

    it('the default crawl reads its defaults without being stored', async () => {
      const config = await make({ delayMs: 1234 }).get(DEFAULT_CRAWL_ID);
      assert.deepEqual(config, parseCrawlConfig({ crawlId: DEFAULT_CRAWL_ID, delayMs: 1234 }));
    });
  });
}
