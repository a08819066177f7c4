/**
 * Crawlee's CheerioCrawler on the benchmark site, in its own process (bench/run.ts spawns it pinned
 * to one core): seeded with `<origin>/`, same host only, robots.txt respected, every page parsed and
 * its links enqueued. Storage in memory (nothing persisted). Prints one JSON line:
 * `{pages, failed, seconds}`.
 *
 * argv[2]: JSON `{origin, concurrency}`.
 */
import { CheerioCrawler, Configuration, LogLevel, log } from '@crawlee/cheerio';

const { origin, concurrency } = JSON.parse(process.argv[2] ?? '{}') as {
  origin: string;
  concurrency: number;
};
log.setLevel(LogLevel.OFF);
const config = new Configuration({ persistStorage: false, purgeOnStart: true });
let pages = 0;
const crawler = new CheerioCrawler(
  {
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
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
const stats = await crawler.run([`${origin}/`]);
const seconds = (performance.now() - started) / 1000;
process.stdout.write(`${JSON.stringify({ pages, failed: stats.requestsFailed, seconds })}\n`);
// Crawlee's timers and keep-alive sockets would hold the process open for many seconds more.
process.exit(0);
