/**
 * Imitates the crawl configs of the FrontierTable (lambdas/adapters/crawl-config-store.ts,
 * CrawlConfigStore) in memory, as the port CrawlConfigReader: a config is stored once and read back
 * as stored; the default crawl reads its defaults without being stored; any other crawl nobody
 * stored is `unknown-crawl` (a PermanentError). Checked against CrawlConfigStore on dynalite by
 * test/integration/port-contracts.test.ts (crawlConfigsContract in test/contracts/crawl-configs.ts).
 */

import { PermanentError } from '../../lambdas/core/base/index.ts';
import {
  type CrawlConfig,
  type CrawlConfigInput,
  type CrawlConfigReader,
  CrawlConfigSchema,
  DEFAULT_CRAWL_ID,
} from '../../lambdas/core/crawl/index.ts';
import { bindScope } from '../../lambdas/core/frontier/index.ts';
import { Faults } from './faults.ts';

export class MemoryCrawlConfigs implements CrawlConfigReader {
  readonly #configs = new Map<string, CrawlConfig>();
  readonly #defaults: Omit<CrawlConfigInput, 'crawlId'> | undefined;
  readonly faults = new Faults<'get' | 'put'>();

  /** `defaults`: the default crawl's settings (the function's DEFAULT_CRAWL_CONFIG). */
  constructor(defaults?: Omit<CrawlConfigInput, 'crawlId'>) {
    this.#defaults = defaults;
  }

  /** As the adapter: a config of seeds from a file comes with its scope keys, and is read back with its scope. */
  async put(config: CrawlConfig, scopeKeys?: Iterable<string>): Promise<CrawlConfig> {
    return this.faults.run('put', [config], async () => {
      if (this.#configs.has(config.crawlId)) throw new Error(`crawl ${config.crawlId} exists already`);
      // Stored as JSON, as the adapter stores it: what is read back is what JSON keeps.
      const stored = CrawlConfigSchema.parse(JSON.parse(JSON.stringify(config)));
      if (stored.seedFile !== undefined) {
        if (scopeKeys === undefined)
          throw new Error(`crawl ${config.crawlId}: seeds from a file need their scope keys`);
        const keys = [...scopeKeys];
        // The adapter's part count: the parts are its storage, not the fake's.
        stored.seedFile.scopeParts = keys.length === 0 ? 0 : 1;
        bindScope(stored, keys);
      }
      this.#configs.set(config.crawlId, stored);
      return stored;
    });
  }

  async get(crawlId: string): Promise<CrawlConfig> {
    return this.faults.run('get', [crawlId], async () => {
      const stored = this.#configs.get(crawlId);
      if (stored !== undefined) return stored;
      if (crawlId === DEFAULT_CRAWL_ID) return CrawlConfigSchema.parse({ ...this.#defaults, crawlId });
      throw new PermanentError(
        'invalid',
        'unknown-crawl',
        `crawl ${crawlId} has no stored config; submit it first`,
      );
    });
  }
}
