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
 * - Where the CPU goes (`profile`, bench/cpu-components.ts): one more `crawler crawl` of the bench
 *   site under `--cpu-prof`, its CPU milliseconds a page by component.
 *
 * Options: --runs N (3), --pages N (5000), --concurrency C (2), --rounds N
 * (micro-benchmark rounds, 5; content-quality rounds are 4 × N), --only
 * startup,reads,ours,ours-content-off,crawlee,profile,micro,memory,content,realistic,recrawl,render (realistic-ours or
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
import { build } from 'esbuild';
import { ESM_REQUIRE_BANNER } from '../cdk/crawler-function.ts';
import { FETCH_EVENT_SOURCE } from '../cdk/limits.ts';
import { type ComponentTime, componentTable, componentTimes, readProfile } from './cpu-components.ts';
import { runCrawlee, runOurs } from './crawlers.ts';
import { canPin, fixed, ipcChild, mb, median, NODE, ROOT, run } from './processes.ts';
import { READ_TARGET_SECONDS, type ReadCommandRun, runReadCommands } from './read-commands.ts';
import {
  DEFAULT_HOSTS,
  DEFAULT_LATENCY_MS,
  type RealisticReport,
  realisticTable,
  runRealistic,
} from './realistic.ts';
import { type RecrawlReport, recrawlTable, runRecrawl } from './recrawl.ts';
import { type RenderReport, renderTable, runRender } from './render.ts';
import { runScale, type ScaleReport, scaleTable } from './scale.ts';
import { judgeCrawl, type SitePlan } from './site.ts';
import type { SiteMessage, SiteReady, SiteStats } from './site-server.ts';
import { runStartup, STARTUP_TARGET_SECONDS, type StartupRun } from './startup.ts';

/** lambdas/fetch/handler.ts: `new HttpFetcher({ connectionsPerOrigin: 6 })`. */
const CONNECTIONS_PER_ORIGIN = 6;
const MEMORY_BATCH = 64;
/** Fetch slots for `crawler crawl`: Lambda's smallest MaximumConcurrency, the fastest on one core (measured). */
const BENCH_CONCURRENCY = 2;
const MEMORY_TARGET_MB = 256;
/** One-page crawls with the template cached whose median is the start-up figure (issue 25). */
const STARTUP_CACHED_RUNS = 5;
/** One origin (host) per task of the largest memory case: each is its own visit, all fetching at once. */
const MEMORY_PORTS = Math.max(MEMORY_BATCH, FETCH_EVENT_SOURCE.batchSize);

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
        'startup,reads,ours,ours-content-off,crawlee,profile,micro,memory,content,realistic,recrawl,render',
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
/** Peak RSS of `crawler crawl` on the bench site (issue 14). */
const CRAWL_RSS_TARGET_MB = 250;
const pages = Number(values.pages);
const concurrency = Number(values.concurrency);
const crawleeConcurrency = concurrency * Math.min(CONNECTIONS_PER_ORIGIN, FETCH_EVENT_SOURCE.batchSize);
const only = new Set(values.only.split(','));
const benchStarted = performance.now();

// --- the crawls -------------------------------------------------------------------------------

/** The crawl's pages/s with main-content extraction on, against off (issue 15). */
const EXTRACTION_RATIO_TARGET = 0.85;

interface CrawlRun {
  crawler: 'ours' | 'ours-content-off' | 'crawlee';
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  wallSeconds: number;
  spanSeconds: number;
  peakRssMb: number;
  duplicates: number;
  missed: number;
  forbiddenRequests: number;
  unplanned: number;
  costPerMillionPages?: number;
  aws?: unknown;
}

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

// --- micro-benchmark and memory ---------------------------------------------------------------

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

interface MemoryResult {
  label: string;
  tasks: number;
  startRssMb: number;
  baselineRssMb: number;
  peakRssMb: number;
  peakHeapMb: number;
  seconds: number;
  /** The handler's CPU (user + system) over the invocation, per page fetched. */
  cpuMsPerPage: number;
  failures: number;
  error?: string;
}

async function memory(origins: readonly string[]): Promise<MemoryResult[]> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-memory-'));
  // As deployed: the handler bundled by esbuild into one ESM file (cdk/crawler-function.ts's options),
  // so the measured process holds what a Lambda container holds (no TypeScript loader).
  const bundle = join(dir, 'fetch-memory.mjs');
  await build({
    entryPoints: [join(ROOT, 'bench', 'fetch-memory.ts')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    minify: true,
    mainFields: ['module', 'main'],
    banner: { js: ESM_REQUIRE_BANNER },
    logLevel: 'error',
  });
  const aws = ipcChild<{ kind: string; env: Record<string, string> }>(
    [NODE, join(ROOT, 'bench', 'local-aws-process.ts')],
    1,
  );
  try {
    const { env } = await aws.next();
    const cases = [
      {
        label: `${MEMORY_BATCH} site pages (log-normal, ~30 KB)`,
        tasks: MEMORY_BATCH,
        path: (i: number) => `/p/${i + 1}`,
      },
      {
        label: `${FETCH_EVENT_SOURCE.batchSize} pages at the 5 MiB body cap`,
        tasks: FETCH_EVENT_SOURCE.batchSize,
        path: (i: number) => `/big/${i + 1}`,
      },
      {
        label: `${MEMORY_BATCH} pages at the 5 MiB body cap`,
        tasks: MEMORY_BATCH,
        path: (i: number) => `/big/${i + 101}`,
      },
    ];
    const results: MemoryResult[] = [];
    for (const [n, c] of cases.entries()) {
      const paths = Array.from({ length: c.tasks }, (_, i) => c.path(i));
      const warmup = [0, 1, 2, 3].map((i) => `/p/${4000 + n * 4 + i}`);
      const done = await run([NODE, '--expose-gc', bundle, JSON.stringify({ env, origins, paths, warmup })], {
        cpu: 0,
        timeoutMs: 120_000,
      });
      const line = done.stdout.trim().split('\n').at(-1) ?? '';
      if (done.code !== 0 || !line.startsWith('{'))
        throw new Error(`memory run failed (exit ${done.code}): ${done.stderr.slice(-2000)}`);
      const r = JSON.parse(line) as {
        startRss: number;
        baselineRss: number;
        peakRss: number;
        peakHeapUsed: number;
        seconds: number;
        cpuSeconds: number;
        failures: number;
        error?: string;
      };
      results.push({
        label: c.label,
        tasks: c.tasks,
        startRssMb: mb(r.startRss),
        baselineRssMb: mb(r.baselineRss),
        peakRssMb: mb(r.peakRss),
        peakHeapMb: mb(r.peakHeapUsed),
        seconds: r.seconds,
        cpuMsPerPage: (r.cpuSeconds * 1000) / c.tasks,
        failures: r.failures,
        ...(r.error ? { error: r.error } : {}),
      });
    }
    return results;
  } finally {
    aws.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

// --- main -------------------------------------------------------------------------------------

const log = (line: string) => process.stderr.write(`${line}\n`);
const oneHost = ['ours', 'ours-content-off', 'crawlee', 'profile', 'micro', 'memory'].some((part) =>
  only.has(part),
);
log(
  `bench: ${oneHost ? `${pages} pages, ${runs} runs each, ours --concurrency ${concurrency}, Crawlee maxConcurrency ${crawleeConcurrency}` : 'realistic shape only'}` +
    `${canPin ? ', crawlers on CPU 0, site on CPU 1' : ', not pinned (needs 2 CPUs and taskset)'}`,
);
const report: {
  machine: { cpus: number; pinned: boolean; node: string };
  site?: { origin: string; plannedTargets: number; htmlPages: number };
  crawls: CrawlRun[];
  micro?: { core: number[]; bare: number[] };
  memory?: MemoryResult[];
  realistic?: RealisticReport;
  scale?: ScaleReport;
  recrawl?: RecrawlReport;
  render?: RenderReport;
  startup?: StartupRun[];
  reads?: ReadCommandRun[];
  /** One crawl of the bench site under the CPU profiler, by component (bench/cpu-components.ts). */
  profile?: { pages: number; pagesPerSecond: number; components: ComponentTime[] };
  /** bench/content-quality.ts's Markdown table. */
  content?: string;
  seconds?: number;
} = { machine: { cpus: availableParallelism(), pinned: canPin, node: process.version }, crawls: [] };
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
      report.memory = await memory(ready.origins);
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

const lines: string[] = [];
if (report.startup?.length) {
  const warm = report.startup.filter((run) => run.cachedTemplate);
  const wall = median(warm.map((run) => run.wallSeconds));
  lines.push(
    '### Start-up: `crawler crawl` of a one-page site, fresh state dir',
    '',
    '| run | wall s | crawl s (summary.json) | peak RSS MB |',
    '| --- | --- | --- | --- |',
    ...report.startup.map(
      (run, i) =>
        `| ${i + 1}${run.cachedTemplate ? '' : ' (template not cached)'} | ${fixed(run.wallSeconds)} | ${fixed(run.crawlSeconds)} | ${fixed(run.peakRssMb, 0)} |`,
    ),
    '',
    `one-page crawl, median wall with the template cached: **${fixed(wall)} s** (target ≤ ${STARTUP_TARGET_SECONDS} s: ${wall <= STARTUP_TARGET_SECONDS ? 'met' : 'MISSED'})`,
    '',
  );
}
if (report.reads?.length) {
  lines.push(
    '### Read commands on a local crawl of the 500-page bench site (`node bin/crawler.js CMD --state-dir DIR`, wall s)',
    '',
    '| command | median | runs | target |',
    '| --- | --- | --- | --- |',
    ...report.reads.map((read) => {
      const wall = median(read.wallSeconds);
      return `| \`crawler ${read.command}\` | **${fixed(wall, 2)}** | ${read.wallSeconds.map((s) => fixed(s, 2)).join(', ')} | ≤ ${READ_TARGET_SECONDS} s: ${wall <= READ_TARGET_SECONDS ? 'met' : 'MISSED'} |`;
    }),
    '',
  );
}
const ours = report.crawls.filter((c) => c.crawler === 'ours');
const oursContentOff = report.crawls.filter((c) => c.crawler === 'ours-content-off');
const crawlee = report.crawls.filter((c) => c.crawler === 'crawlee');
const row = (name: string, list: CrawlRun[]) => {
  const pps = list.map((c) => c.pagesPerSecond);
  const cost = list.flatMap((c) => (c.costPerMillionPages === undefined ? [] : [c.costPerMillionPages]));
  return (
    `| ${name} | ${list.length} | ${median(list.map((c) => c.pages))} | **${fixed(median(pps))}** (${fixed(Math.min(...pps))}–${fixed(Math.max(...pps))}) ` +
    `| ${fixed(median(list.map((c) => c.wallSeconds)))} | ${fixed(Math.max(...list.map((c) => c.peakRssMb)), 0)} ` +
    `| ${Math.max(...list.map((c) => c.duplicates))} | ${Math.max(...list.map((c) => c.missed))} ` +
    `| ${Math.max(...list.map((c) => c.forbiddenRequests))} | ${cost.length ? `$${fixed(median(cost), 2)}` : '–'} |`
  );
};
if (ours.length + oursContentOff.length + crawlee.length > 0) {
  lines.push(
    `### Crawl: ${report.site?.htmlPages} HTML pages (${report.site?.plannedTargets} request targets), one core each`,
    '',
    '| crawler | runs | pages | pages/s median (min–max) | wall s | peak RSS MB | fetched twice | missed | robots-forbidden requests | $ / M pages |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  );
  if (ours.length)
    lines.push(row(`serverless-crawler (\`crawler crawl\`, --concurrency ${concurrency})`, ours));
  if (oursContentOff.length)
    lines.push(row(`serverless-crawler, --content none (no Markdown extraction)`, oursContentOff));
  if (crawlee.length)
    lines.push(row(`Crawlee CheerioCrawler (maxConcurrency ${crawleeConcurrency})`, crawlee));
  if (ours.length && crawlee.length) {
    const ratio = median(ours.map((c) => c.pagesPerSecond)) / median(crawlee.map((c) => c.pagesPerSecond));
    const clean = ours.every((c) => c.duplicates === 0 && c.missed === 0);
    lines.push(
      '',
      `ours / Crawlee pages/s: **${fixed(ratio, 2)}×** (target ≥ 2×, with zero duplicates and misses: ` +
        `${ratio >= 2 && clean ? 'met' : 'MISSED'})`,
    );
  }
  if (ours.length && oursContentOff.length) {
    const ratio =
      median(ours.map((c) => c.pagesPerSecond)) / median(oursContentOff.map((c) => c.pagesPerSecond));
    lines.push(
      '',
      `pages/s with Markdown extraction on / off: **${fixed(ratio, 2)}×** (target ≥ ${EXTRACTION_RATIO_TARGET}×: ${ratio >= EXTRACTION_RATIO_TARGET ? 'met' : 'MISSED'})`,
    );
  }
  if (ours.length) {
    const peak = Math.max(...ours.map((c) => c.peakRssMb));
    lines.push(
      '',
      `ours, peak RSS of the crawl: **${fixed(peak, 0)} MB** (target ≤ ${CRAWL_RSS_TARGET_MB} MB: ${peak <= CRAWL_RSS_TARGET_MB ? 'met' : 'MISSED'})`,
    );
  }
  const aws = ours.at(-1)?.aws as
    | { requestsPerPage?: Record<string, number>; costPerMillionPages?: Record<string, number> }
    | undefined;
  if (aws?.costPerMillionPages) {
    const c = aws.costPerMillionPages;
    lines.push(
      '',
      `Counted cost (last run): $${fixed(c.total ?? Number.NaN, 2)} per million pages ` +
        `(lambda $${fixed(c.lambda ?? Number.NaN, 2)}, sqs $${fixed(c.sqs ?? Number.NaN, 2)}, s3 $${fixed(c.s3 ?? Number.NaN, 2)}, ` +
        `dynamodb $${fixed(c.dynamodb ?? Number.NaN, 2)}); target ≤ $1.00: ${(c.total ?? Infinity) <= 1 ? 'met' : 'MISSED'}`,
      `Requests per page: ${Object.entries(aws.requestsPerPage ?? {})
        .filter(([, n]) => n > 0)
        .map(([op, n]) => `${op} ${n}`)
        .join(', ')}`,
    );
  }
}
if (report.profile) {
  const { pages: profiled, pagesPerSecond, components } = report.profile;
  lines.push(
    '',
    ...componentTable(
      components,
      profiled,
      `\`crawler crawl\` of the bench site, ${profiled} pages at ${fixed(pagesPerSecond)} pages/s under --cpu-prof, one core`,
    ),
  );
}
if (report.micro) {
  const core = median(report.micro.core);
  const bare = median(report.micro.bare);
  lines.push(
    '',
    `### Fetch-and-extract core, no AWS (${pages} pages, 8 concurrent, ${report.micro.core.length} rounds)`,
    '',
    '| loop | pages/s median (min–max) |',
    '| --- | --- |',
    `| HttpFetcher + decode + extractLinks | ${fixed(core, 0)} (${fixed(Math.min(...report.micro.core), 0)}–${fixed(Math.max(...report.micro.core), 0)}) |`,
    `| bare undici.request + htmlparser2 | ${fixed(bare, 0)} (${fixed(Math.min(...report.micro.bare), 0)}–${fixed(Math.max(...report.micro.bare), 0)}) |`,
    '',
    `core / bare: **${fixed(core / bare, 2)}×** (target ≥ 0.8×: ${core / bare >= 0.8 ? 'met' : 'MISSED'})`,
  );
}
if (report.memory) {
  lines.push(
    '',
    '### Fetch handler memory (bundled as deployed, one invocation, default 5 MiB body cap)',
    '',
    '| batch | RSS at start MB | after warm-up MB | peak RSS MB | peak heap MB | seconds | CPU ms / page | note |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...report.memory.map(
      (m) =>
        `| ${m.label} | ${fixed(m.startRssMb, 0)} | ${fixed(m.baselineRssMb, 0)} | **${fixed(m.peakRssMb, 0)}** | ${fixed(m.peakHeapMb, 0)} | ${fixed(m.seconds, 2)} | ${fixed(m.cpuMsPerPage, 1)} | ${m.error ? `invocation failed: ${m.error}` : m.failures ? `${m.failures} retries` : 'ok'} |`,
    ),
    '',
    `64 concurrent fetches at the default body cap ≤ ${MEMORY_TARGET_MB} MB: ${(report.memory.at(-1)?.peakRssMb ?? Infinity) <= MEMORY_TARGET_MB ? 'met' : 'MISSED'}`,
  );
}
if (report.content) lines.push(...(lines.length ? [''] : []), report.content);
if (report.realistic?.runs.length)
  lines.push(...(lines.length ? [''] : []), ...realisticTable(report.realistic));
if (report.scale) lines.push(...(lines.length ? [''] : []), scaleTable(report.scale));
if (report.recrawl) lines.push(...(lines.length ? [''] : []), recrawlTable(report.recrawl));
if (report.render) lines.push(...(lines.length ? [''] : []), renderTable(report.render));
lines.push(
  '',
  `bench finished in ${fixed(report.seconds, 0)} s (${report.machine.cpus} CPUs, Node ${report.machine.node})`,
);
process.stdout.write(`${lines.join('\n')}\n`);
if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
process.exit(0);
