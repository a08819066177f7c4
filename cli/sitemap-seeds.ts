/** `--sitemap URL|auto`: read sitemaps from this machine before the crawl starts, with the crawl's own limits and address guard. */
import { HttpFetcher } from '../lambdas/adapters/http-fetcher.ts';
import type { CrawlConfig } from '../lambdas/core/crawl/index.ts';
import { loadSitemaps, SitemapError, sitemapsFromRobots } from '../lambdas/core/frontier/index.ts';

export async function discoverSitemapUrls(
  sitemap: string,
  config: CrawlConfig,
  progress: (line: string) => void,
): Promise<string[]> {
  const fetcher = new HttpFetcher();
  try {
    const deps = { fetcher, config };
    const starts =
      sitemap === 'auto'
        ? (
            await Promise.all(
              [...new Set(config.seeds.map(originOf).filter((o) => o !== undefined))].map((origin) =>
                robotsSitemaps(origin, deps, progress),
              ),
            )
          ).flat()
        : [sitemap];
    if (starts.length === 0) {
      progress("sitemap: no Sitemap: lines in the seeds' robots.txt");
      return [];
    }
    const loaded = await loadSitemaps(starts, deps);
    for (const error of loaded.errors) progress(`sitemap: ${error.sitemap}: ${error.reason}`);
    progress(`sitemap: ${loaded.urls.length} URLs from ${starts.length} sitemap(s)`);
    return loaded.urls;
  } finally {
    await fetcher.close();
  }
}

/** An origin whose robots.txt cannot be read (blocked address, down) gives no sitemaps and a warning, as a bad `--sitemap URL` does. */
async function robotsSitemaps(
  origin: string,
  deps: Parameters<typeof sitemapsFromRobots>[1],
  progress: (line: string) => void,
): Promise<string[]> {
  try {
    return await sitemapsFromRobots(origin, deps);
  } catch (error) {
    if (!(error instanceof SitemapError)) throw error;
    progress(`sitemap: ${error.message}`);
    return [];
  }
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
