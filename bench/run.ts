/**
 * `npm run bench`: the crawler against Crawlee's CheerioCrawler on a generated site over loopback,
 * the fetch-and-extract core against a bare undici + htmlparser2 loop, and the fetch handler's peak
 * memory. Method and results: docs/performance.md.
 *
 * - The site (bench/site.ts: 5,000+ pages, log-normal ~30 KB, ~24 links a page, robots.txt, 404s,
 *   500s, redirects) runs in its own process pinned to CPU 1; every crawler runs as a child process
 *   pinned to CPU 0 (taskset), so "pages/s" is one core's worth of crawler.
 * - `crawler crawl` (the real CLI: embedded emulators, provisioned stack, real handlers) with
 *   `--delay 0 --allow-private --concurrency C`, and Crawlee with `maxConcurrency` = the most requests
 *   our crawler can have in flight to one host (C slots × the fetcher's connections per origin), same
 *   seed, same host scope, robots.txt on both. Runs alternate, `--runs` of each.
 * - pages/s = HTML pages fetched / the crawler's own run time (ours: summary.json `seconds`, from
 *   starting the embedded AWS to the crawl's completion; Crawlee: `crawler.run()`); the process's
 *   wall time and the site's first-to-last request span are reported too. Duplicates and misses are
 *   judged by the site from the requests it answered.
 *
 * - Then the realistic shape (bench/realistic.ts): H hosts on 127.0.0.2 ... at default politeness
 *   (delay 1000 ms), ours with every default against Crawlee with `sameDomainDelaySecs: 1`, measured
 *   against the politeness bound of H pages/s.
 *
 * - Content extraction (issue 15): `ours` again with `--content none`, for the pages/s that main-content
 *   extraction costs; and bench/content-quality.ts, shingle F1 of our extractor and Readability.js on
 *   the labelled pages of test/data/article-extraction, with pages/s of each on one core, and the
 *   recall of listing pages' items (bench/listing-recall.ts, test/data/listing-pages).
 *
 * - The call counter (`counting`, issue 28): the fetch handler's CPU a page under each
 *   CRAWLER_CALL_COUNTING (reported, estimated, off), the modes alternating, `--runs` of each.
 *
 * - Where the CPU goes (`profile`, bench/cpu-components.ts): one more `crawler crawl` of the bench
 *   site under `--cpu-prof`, its CPU milliseconds a page by component.
 *
 * Options: --runs N (3), --pages N (5000), --concurrency C (2), --rounds N
 * (micro-benchmark rounds, 5; content-quality rounds are 4 × N), --only
 * startup,reads,ours,ours-content-off,crawlee,profile,micro,memory,counting,content,realistic,recrawl,render (realistic-ours or
 * realistic-crawlee: one crawler of it), --json FILE; for the realistic shape: --hosts 1,20,200,
 * --host-pages P (content pages per host; default 40 up to 20 hosts, 15 beyond), --quick (15 and 8),
 * --latency MS (150).
 *
 * - Re-crawl (bench/recrawl.ts, issue 26, `recrawl`): a first crawl and a `--since` re-crawl of a
 *   site that changed between them, with and without validators, against the issue's targets.
 *
 * - Rendering (bench/render.ts, issue 27, `render`): the detector's precision and recall, rendered
 *   pages per second, the browser's memory, content recall rendered and not.
 *
 * - The scale simulation (bench/scale.ts, issue 23): `--only scale`, not in the default set (10,000
 *   hosts and 1,000,000 pages take well over 15 minutes of wall time); --scale-hosts N (10000),
 *   --urls N (1000000), --seed N (1). The same runs alone as `node bench/scale.ts --hosts N --urls N`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FETCH_EVENT_SOURCE } from '../cdk/limits.ts';
import { type BenchReport, benchTable, type CrawlRun } from './bench-table.ts';
import { componentTimes, readProfile } from './cpu-components.ts';
import { runCrawlee, runOurs } from './crawlers.ts';
import { MEMORY_BATCH, MEMORY_PORTS, measureCallCounting, measureHandlerMemory } from './handler-memory.ts';
import { canPin, fixed, ipcChild, NODE, ROOT, run } from './processes.ts';
import { runReadCommands } from './read-commands.ts';
import { DEFAULT_HOSTS, DEFAULT_LATENCY_MS, runRealistic } from './realistic.ts';
import { runRecrawl } from './recrawl.ts';
import { runRender } from './render.ts';
import { runScale } from './scale.ts';
import { judgeCrawl, type SitePlan } from './site.ts';
import type { SiteMessage, SiteReady, SiteStats } from './site-server.ts';
import { runStartup } from './startup.ts';

/** lambdas/fetch/handler.ts: `new HttpFetcher({ connectionsPerOrigin: 6 })`. */
const CONNECTIONS_PER_ORIGIN = 6;
/** Fetch slots for `crawler crawl`: Lambda's smallest MaximumConcurrency, the fastest on one core (measured). */
const BENCH_CONCURRENCY = 2;
/** One-page crawls with the template cached whose median is the start-up figure (issue 25). */
const STARTUP_CACHED_RUNS = 5;

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    pages: { type: 'string', default: '5000' },
    // One core: more fetch slots only add contention and per-container cache misses (docs/performance.md).
    concurrency: { type: 'string', default: String(BENCH_CONCURRENCY) },
    rounds: { type: 'string', default: '5' },
    only: {
      type: 'string',
      default:
        'startup,reads,ours,ours-content-off,crawlee,profile,micro,memory,counting,content,realistic,recrawl,render',
    },
    // The realistic shape (bench/realistic.ts).
    hosts: { type: 'string', default: DEFAULT_HOSTS.join(',') },
    'host-pages': { type: 'string' },
    latency: { type: 'string', default: String(DEFAULT_LATENCY_MS) },
    quick: { type: 'boolean', default: false },
    // The scale simulation (bench/scale.ts).
    'scale-hosts': { type: 'string', default: '10000' },
    urls: { type: 'string', default: '1000000' },
    seed: { type: 'string', default: '1' },
    json: { type: 'string' },
  },
});
const runs = Number(values.runs);
const pages = Number(values.pages);
const concurrency = Number(values.concurrency);
const crawleeConcurrency = concurrency * Math.min(CONNECTIONS_PER_ORIGIN, FETCH_EVENT_SOURCE.batchSize);
const only = new Set(values.only.split(','));
const benchStarted = performance.now();

// --- the crawls -------------------------------------------------------------------------------

async function siteStats(site: ReturnType<typeof ipcChild<SiteMessage>>, plan: SitePlan) {
  const stats = (await site.request({ cmd: 'stats' })) as SiteStats;
  const judged = judgeCrawl(plan, new Map(stats.answered), new Map(stats.hits));
  return { ...judged, spanSeconds: stats.spanSeconds };
}

type Crawled = Omit<CrawlRun, 'duplicates' | 'missed' | 'forbiddenRequests' | 'unplanned' | 'spanSeconds'>;

async function crawlOurs(origin: string, contentOff = false, nodeFlags: string[] = []): Promise<Crawled> {
  const ran = await runOurs(
    [`${origin}/`],
    ['--delay', '0', '--concurrency', String(concurrency), ...(contentOff ? ['--content', 'none'] : [])],
    300_000,
    nodeFlags,
  );
  const aws = ran.summary.aws;
  return {
    crawler: contentOff ? 'ours-content-off' : 'ours',
    pages: ran.pages,
    seconds: ran.seconds,
    pagesPerSecond: ran.pages / ran.seconds,
    wallSeconds: ran.wallSeconds,
    peakRssMb: ran.peakRssMb,
    ...(aws ? { costPerMillionPages: aws.costPerMillionPages.total, aws } : {}),
  };
}

async function crawlCrawlee(origin: string): Promise<Crawled> {
  const ran = await runCrawlee({ origin, concurrency: crawleeConcurrency }, 300_000);
  return {
    crawler: 'crawlee',
    pages: ran.pages,
    seconds: ran.seconds,
    pagesPerSecond: ran.pages / ran.seconds,
    wallSeconds: ran.wallSeconds,
    peakRssMb: ran.peakRssMb,
  };
}

// --- micro-benchmark --------------------------------------------------------------------------

async function micro(origin: string): Promise<{ core: number[]; bare: number[] }> {
  const done = await run(
    [
      NODE,
      join(ROOT, 'bench', 'micro.ts'),
      JSON.stringify({ origin, pages, concurrency: 8, rounds: Number(values.rounds) }),
    ],
    { cpu: 0, timeoutMs: 180_000 },
  );
  if (done.code !== 0) throw new Error(`micro-benchmark failed (${done.code}): ${done.stderr.slice(-2000)}`);
  return JSON.parse(done.stdout.trim().split('\n').at(-1) ?? '{}') as { core: number[]; bare: number[] };
}

// --- main -------------------------------------------------------------------------------------

const log = (line: string) => process.stderr.write(`${line}\n`);
const oneHost = ['ours', 'ours-content-off', 'crawlee', 'profile', 'micro', 'memory', 'counting'].some(
  (part) => only.has(part),
);
log(
  `bench: ${oneHost ? `${pages} pages, ${runs} runs each, ours --concurrency ${concurrency}, Crawlee maxConcurrency ${crawleeConcurrency}` : 'realistic shape only'}` +
    `${canPin ? ', crawlers on CPU 0, site on CPU 1' : ', not pinned (needs 2 CPUs and taskset)'}`,
);
const report: BenchReport = {
  machine: { cpus: availableParallelism(), pinned: canPin, node: process.version },
  crawls: [],
};
if (oneHost) {
  const site = ipcChild<SiteMessage>(
    [NODE, join(ROOT, 'bench', 'site-server.ts'), JSON.stringify({ site: { pages }, ports: MEMORY_PORTS })],
    1,
  );
  try {
    const ready = (await site.next()) as SiteReady;
    const origin = ready.origins[0] as string;
    const plan: SitePlan = {
      expected: new Set(ready.expected),
      forbidden: new Set(ready.forbidden),
      htmlPages: ready.htmlPages,
    };
    report.site = { origin, plannedTargets: plan.expected.size, htmlPages: plan.htmlPages };
    log(`site: ${origin}, ${plan.expected.size} request targets planned, ${plan.htmlPages} HTML pages`);

    for (let i = 1; i <= runs; i++) {
      for (const which of ['ours', 'ours-content-off', 'crawlee'] as const) {
        if (!only.has(which)) continue;
        await site.request({ cmd: 'reset' });
        const crawl =
          which === 'crawlee'
            ? await crawlCrawlee(origin)
            : await crawlOurs(origin, which === 'ours-content-off');
        const judged = await siteStats(site, plan);
        const result: CrawlRun = {
          ...crawl,
          duplicates: judged.duplicates,
          missed: judged.missed,
          forbiddenRequests: judged.forbiddenRequests,
          unplanned: judged.unplanned,
          spanSeconds: judged.spanSeconds,
        };
        report.crawls.push(result);
        log(
          `  run ${i} ${which}: ${result.pages} pages in ${fixed(result.seconds)} s = ${fixed(result.pagesPerSecond)} pages/s ` +
            `(wall ${fixed(result.wallSeconds)} s), peak RSS ${fixed(result.peakRssMb, 0)} MB, ` +
            `${result.duplicates} fetched twice, ${result.missed} missed` +
            (result.costPerMillionPages === undefined
              ? ''
              : `, $${fixed(result.costPerMillionPages, 2)}/M pages`),
        );
      }
    }
    if (only.has('profile')) {
      log('profile: crawler crawl of the bench site under --cpu-prof ...');
      await site.request({ cmd: 'reset' });
      const profileDir = await mkdtemp(join(tmpdir(), 'bench-profile-'));
      try {
        const crawl = await crawlOurs(origin, false, ['--cpu-prof', '--cpu-prof-dir', profileDir]);
        report.profile = {
          pages: crawl.pages,
          pagesPerSecond: crawl.pagesPerSecond,
          components: componentTimes(await readProfile(profileDir)),
        };
        log(`  profiled: ${crawl.pages} pages, ${fixed(crawl.pagesPerSecond)} pages/s under the profiler`);
      } finally {
        await rm(profileDir, { recursive: true, force: true });
      }
    }
    if (only.has('micro')) {
      log('micro-benchmark: fetch-and-extract core vs bare undici + htmlparser2 ...');
      report.micro = await micro(origin);
    }
    if (only.has('memory')) {
      log(`memory: the fetch handler with ${MEMORY_BATCH} concurrent fetches ...`);
      report.memory = await measureHandlerMemory(ready.origins);
    }
    if (only.has('counting')) {
      log(`counting: the fetch handler's CPU a page under each CRAWLER_CALL_COUNTING, ${runs} runs each ...`);
      report.counting = await measureCallCounting(ready.origins, runs);
    }
  } finally {
    site.stop();
  }
}
if (only.has('content')) {
  log('content: main-content extraction vs Readability.js on the labelled pages ...');
  const done = await run(
    [NODE, join(ROOT, 'bench', 'content-quality.ts'), '--rounds', String(Number(values.rounds) * 4)],
    {
      cpu: 0,
      timeoutMs: 600_000,
    },
  );
  report.content =
    done.code === 0
      ? done.stdout.trim()
      : `content-quality failed (exit ${done.code}): ${done.stderr.trim()}`;
}
if (only.has('startup')) {
  log('start-up: crawler crawl of a one-page site ...');
  // Issue 25's target is the median of 5 runs with the template cached: the first run synthesizes it.
  report.startup = await runStartup(Math.max(runs, STARTUP_CACHED_RUNS) + 1, log);
}
if (only.has('reads')) {
  log('read commands on a local crawl of the 500-page bench site ...');
  report.reads = await runReadCommands(runs, log);
}
const realisticCrawlers = new Set(
  (['ours', 'crawlee'] as const).filter((which) => only.has('realistic') || only.has(`realistic-${which}`)),
);
if (realisticCrawlers.size > 0) {
  report.realistic = await runRealistic({
    hosts: values.hosts.split(',').map(Number),
    ...(values['host-pages'] === undefined ? {} : { pages: Number(values['host-pages']) }),
    quick: values.quick,
    latencyMs: Number(values.latency),
    crawlers: realisticCrawlers,
    log,
  });
}
if (only.has('scale')) {
  log(`scale simulation: ${values['scale-hosts']} hosts, ${values.urls} pages, seed ${values.seed} ...`);
  report.scale = await runScale({
    seed: Number(values.seed),
    hosts: Number(values['scale-hosts']),
    urls: Number(values.urls),
    progress: log,
  });
}
if (only.has('recrawl')) {
  log('re-crawl: a first crawl and a --since re-crawl of a changing site, with and without validators ...');
  report.recrawl = await runRecrawl();
}
if (only.has('render')) {
  log('render: the detector on its corpus, then a single-page app rendered in Chromium ...');
  report.render = await runRender();
}
report.seconds = (performance.now() - benchStarted) / 1000;

// --- the table --------------------------------------------------------------------------------

const table = benchTable(report, { pages, concurrency, crawleeConcurrency });
process.stdout.write(`${table.join('\n')}\n`);
if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
process.exit(0);
