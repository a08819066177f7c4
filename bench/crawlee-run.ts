/**
 * Crawlee's CheerioCrawler on a benchmark site, in its own process (bench/crawlers.ts spawns it
 * pinned to one core): seeded with `seeds` (or `<origin>/`), same host only, robots.txt respected,
 * every page parsed and its links enqueued. Storage in memory (nothing persisted). Prints one JSON
 * line: `{pages, failed, seconds}`.
 *
 * With `sameDomainDelaySecs` (the realistic benchmark: one request per second per host), Crawlee
 * waits that long between two requests to one domain. It keys the wait on `tldts.getDomain(url)`,
 * which is null for an IP host such as 127.0.0.2, and then applies no wait at all; the benchmark's
 * hosts are loopback addresses, so `HostDelayCrawler` keys an IP host on its hostname instead (what a
 * registrable domain is for a named host) and otherwise does what Crawlee 3.18's `delayRequest`
 * does: a request too early is put back in the queue when its host's delay has passed.
 *
 * argv[2]: JSON `CrawleeRunArgs`.
 */
import { CheerioCrawler, Configuration, LogLevel, log, type Request } from '@crawlee/cheerio';
import { getDomain } from 'tldts';

export interface CrawleeRunArgs {
  /** Seeds; `origin` alone means `[<origin>/]`. */
  seeds?: string[];
  origin?: string;
  /** min and max concurrency. */
  concurrency: number;
  /** Crawlee's per-domain delay (default 0: none). */
  sameDomainDelaySecs?: number;
}

export interface CrawleeRunResult {
  pages: number;
  failed: number;
  seconds: number;
}

class HostDelayCrawler extends CheerioCrawler {
  protected override delayRequest(
    request: Request,
    source: Parameters<CheerioCrawler['delayRequest']>[1],
  ): boolean {
    if (this.sameDomainDelayMillis <= 0 || getDomain(request.url) !== null) {
      return super.delayRequest(request, source);
    }
    const key = new URL(request.url).hostname;
    const now = Date.now();
    const last = this.domainAccessedTime.get(key);
    if (last === undefined || now - last >= this.sameDomainDelayMillis) {
      this.domainAccessedTime.set(key, now);
      return false;
    }
    setTimeout(
      () => void source.reclaimRequest(request, { forefront: request.userData?.__crawlee?.forefront }),
      last + this.sameDomainDelayMillis - now,
    );
    return true;
  }
}

const args = JSON.parse(process.argv[2] ?? '{}') as CrawleeRunArgs;
const seeds = args.seeds ?? [`${args.origin}/`];
log.setLevel(LogLevel.OFF);
const config = new Configuration({ persistStorage: false, purgeOnStart: true });
let pages = 0;
const crawler = new HostDelayCrawler(
  {
    minConcurrency: args.concurrency,
    maxConcurrency: args.concurrency,
    sameDomainDelaySecs: args.sameDomainDelaySecs ?? 0,
    respectRobotsTxtFile: true,
    maxRequestRetries: 3,
    requestHandlerTimeoutSecs: 60,
    async requestHandler({ enqueueLinks }) {
      pages++;
      await enqueueLinks({ strategy: 'same-hostname' });
    },
    failedRequestHandler() {},
  },
  config,
);
const started = performance.now();
const stats = await crawler.run(seeds);
const seconds = (performance.now() - started) / 1000;
const result: CrawleeRunResult = { pages, failed: stats.requestsFailed, seconds };
process.stdout.write(`${JSON.stringify(result)}\n`);
// Crawlee's timers and keep-alive sockets would hold the process open for many seconds more.
process.exit(0);
