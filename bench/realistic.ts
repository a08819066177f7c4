/**
 * The realistic shape (`npm run bench -- --only realistic`): many hosts at default politeness. Real
 * crawls are bound by politeness, about one request per second per host, not by one host at delay 0.
 *
 * For each H (1, 20, 200): bench/multi-host-site.ts serves H hosts (127.0.0.2 ... 127.0.0.(H+1), one
 * small site of P pages each, 150 ms server latency) from CPU 1; on CPU 0, one after the other:
 * - `crawler crawl` seeded with the H roots, every option at its default but `--allow-private`
 *   (delay 1000 ms, robots.txt on, scope host, the stack's 10 fetch slots);
 * - Crawlee's CheerioCrawler on the same seeds with `sameDomainDelaySecs: 1` (the same per-host
 *   delay), robots.txt on, min = max concurrency = max(H, 12) (enough to keep every host busy).
 * Each is measured against the politeness bound, H hosts ÷ 1 s = H pages/s, judged by the site (every
 * planned page of every host answered exactly once), and by the gaps between consecutive requests to
 * one host. For ours, summary.json's counted AWS cost per million pages and Lambda GB-seconds per page.
 */
import { join } from 'node:path';
import { parseCrawlConfig } from '../lambdas/core/crawl/index.ts';
import type { CrawlSummary } from './crawlers.ts';
import { runCrawlee, runOurs } from './crawlers.ts';
import type {
  GapStats,
  MultiHostArgs,
  MultiHostMessage,
  MultiHostReady,
  MultiHostStats,
} from './multi-host-site.ts';
import { fixed, ipcChild, NODE, ROOT } from './processes.ts';
import { judgeCrawl, type SitePlan } from './site.ts';

/** `crawler crawl`'s default delay between two requests to one host. */
export const DEFAULT_DELAY_MS = parseCrawlConfig({ crawlId: 'bench' }).delayMs;
export const DEFAULT_HOSTS = [1, 20, 200] as const;
export const DEFAULT_LATENCY_MS = 150;
/** Content pages per host (P): 40 up to 20 hosts, 15 beyond (docs/performance.md, "The realistic shape"). */
export const pagesPerHost = (hosts: number, quick: boolean) =>
  quick ? (hosts > 20 ? 8 : 15) : hosts > 20 ? 15 : 40;
/** Crawlee's concurrency: at least one request in flight per host, never below the one-host bench's 12. */
export const crawleeConcurrency = (hosts: number) => Math.max(hosts, 12);

export interface RealisticOptions {
  hosts: readonly number[];
  /** Content pages per host; default `pagesPerHost(H, quick)`. */
  pages?: number;
  quick: boolean;
  latencyMs: number;
  crawlers: ReadonlySet<'ours' | 'crawlee'>;
  log: (line: string) => void;
}

export interface RealisticRun {
  crawler: 'ours' | 'crawlee';
  hosts: number;
  /** P: content pages per host (the site's HTML pages per host are P + 3 nav pages). */
  contentPagesPerHost: number;
  /** HTML pages a correct crawl fetches, over all hosts. */
  plannedPages: number;
  /** HTML pages fetched, as the crawler counts them. */
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  /** H ÷ delay in seconds. */
  boundPagesPerSecond: number;
  /** pagesPerSecond ÷ boundPagesPerSecond. */
  ratioToBound: number;
  wallSeconds: number;
  /** First to last request the site saw. */
  spanSeconds: number;
  /** From the first request the site saw to the first that was not for robots.txt. */
  firstPageSeconds: number;
  peakRssMb: number;
  /** CPU time of the crawler's process, and that ÷ its wall time (1 = one core busy throughout). */
  cpuSeconds: number;
  cpuShare: number;
  duplicates: number;
  missed: number;
  unplanned: number;
  /** Requests the site answered, all hosts, and how many of them were for robots.txt. */
  requests: number;
  robotsRequests: number;
  /** Every planned target of every host answered exactly once, nothing else asked for. */
  exact: boolean;
  gaps: GapStats;
  costPerMillionPages?: NonNullable<CrawlSummary['aws']>['costPerMillionPages'];
  /** Billed Lambda GB-seconds (all functions) per fetched page. */
  lambdaGbSecondsPerPage?: number;
  lambda?: NonNullable<CrawlSummary['aws']>['lambda'];
  requestsPerPage?: Record<string, number>;
}

export interface RealisticReport {
  delayMs: number;
  latencyMs: number;
  runs: RealisticRun[];
}

export async function runRealistic(options: RealisticOptions): Promise<RealisticReport> {
  const { log } = options;
  const report: RealisticReport = { delayMs: DEFAULT_DELAY_MS, latencyMs: options.latencyMs, runs: [] };
  for (const hosts of options.hosts) {
    const contentPages = options.pages ?? pagesPerHost(hosts, options.quick);
    const args: MultiHostArgs = { hosts, pages: contentPages, latencyMs: options.latencyMs };
    const site = ipcChild<MultiHostMessage>(
      [NODE, join(ROOT, 'bench', 'multi-host-site.ts'), JSON.stringify(args)],
      1,
    );
    try {
      const ready = (await site.next()) as MultiHostReady;
      const shape = siteShape(ready, hosts, contentPages);
      log(
        `realistic: ${hosts} host(s) × ${shape.plan.htmlPages} HTML pages (P = ${contentPages}), ` +
          `${options.latencyMs} ms latency, ${ready.origins[0]} ...`,
      );
      for (const crawler of ['ours', 'crawlee'] as const) {
        if (!options.crawlers.has(crawler)) continue;
        await site.request({ cmd: 'reset' });
        const ran = await crawl(crawler, shape);
        const stats = (await site.request({ cmd: 'stats', delayMs: DEFAULT_DELAY_MS })) as MultiHostStats;
        const result = realisticRun(crawler, shape, ran, stats);
        report.runs.push(result);
        log(runLine(result, stats));
      }
    } finally {
      site.stop();
    }
  }
  return report;
}

/** One H of the realistic shape: the site served, its seeds, what a correct crawl fetches, how long it may take. */
interface SiteShape {
  hosts: number;
  contentPages: number;
  plan: SitePlan;
  seeds: string[];
  plannedPages: number;
  /** The politeness bound, H pages/s. */
  bound: number;
  timeoutMs: number;
}

function siteShape(ready: MultiHostReady, hosts: number, contentPages: number): SiteShape {
  const plan: SitePlan = {
    expected: new Set(ready.expected),
    forbidden: new Set(),
    htmlPages: ready.htmlPages,
  };
  const seeds = ready.origins.map((origin) => `${origin}/`);
  const plannedPages = hosts * plan.htmlPages;
  const bound = hosts / (DEFAULT_DELAY_MS / 1000);
  // The fastest polite crawl takes (robots.txt + every page) delays per host: allow 10× that, plus
  // 200 ms a page for many hosts on one core (5 pages/s; ours has measured 12 at 200 hosts).
  const timeoutMs =
    120_000 + 10 * (plan.expected.size + 1) * DEFAULT_DELAY_MS + 200 * hosts * plan.expected.size;
  return { hosts, contentPages, plan, seeds, plannedPages, bound, timeoutMs };
}

type Ran = Awaited<ReturnType<typeof runOurs>> | Awaited<ReturnType<typeof runCrawlee>>;

function crawl(crawler: 'ours' | 'crawlee', shape: SiteShape): Promise<Ran> {
  const { seeds, hosts, timeoutMs } = shape;
  return crawler === 'ours'
    ? runOurs(seeds, [], timeoutMs)
    : runCrawlee(
        {
          seeds,
          concurrency: crawleeConcurrency(hosts),
          sameDomainDelaySecs: DEFAULT_DELAY_MS / 1000,
        },
        timeoutMs,
      );
}

/** The site's judgement of one crawl, over all hosts, and the crawler's own figures. */
function realisticRun(
  crawler: 'ours' | 'crawlee',
  shape: SiteShape,
  ran: Ran,
  stats: MultiHostStats,
): RealisticRun {
  const { plan, plannedPages, bound } = shape;
  let duplicates = 0;
  let missed = 0;
  let unplanned = 0;
  let requests = 0;
  let robotsRequests = 0;
  for (const host of stats.hosts) {
    for (const [target, count] of host.hits) {
      requests += count;
      if (target === '/robots.txt') robotsRequests += count;
    }
    const judged = judgeCrawl(plan, new Map(host.answered), new Map(host.hits));
    duplicates += judged.duplicates;
    missed += judged.missed;
    unplanned += judged.unplanned + judged.forbiddenRequests;
  }
  const pagesPerSecond = ran.pages / ran.seconds;
  const result: RealisticRun = {
    crawler,
    hosts: shape.hosts,
    contentPagesPerHost: shape.contentPages,
    plannedPages,
    pages: ran.pages,
    seconds: ran.seconds,
    pagesPerSecond,
    boundPagesPerSecond: bound,
    ratioToBound: pagesPerSecond / bound,
    wallSeconds: ran.wallSeconds,
    spanSeconds: stats.spanSeconds,
    firstPageSeconds: stats.firstPageSeconds,
    peakRssMb: ran.peakRssMb,
    cpuSeconds: ran.cpuSeconds,
    cpuShare: ran.cpuSeconds / ran.wallSeconds,
    duplicates,
    missed,
    unplanned,
    requests,
    robotsRequests,
    exact: duplicates === 0 && missed === 0 && unplanned === 0 && ran.pages === plannedPages,
    gaps: stats.gaps,
  };
  if ('summary' in ran && ran.summary.aws) {
    const aws = ran.summary.aws;
    const gbSeconds = Object.values(aws.lambda ?? {}).reduce((sum, fn) => sum + fn.gbSeconds, 0);
    result.costPerMillionPages = aws.costPerMillionPages;
    result.lambdaGbSecondsPerPage = ran.pages > 0 ? gbSeconds / ran.pages : Number.NaN;
    if (aws.lambda) result.lambda = aws.lambda;
    if (aws.requestsPerPage) result.requestsPerPage = aws.requestsPerPage;
  }
  return result;
}

/** The progress line of one crawl. */
function runLine(result: RealisticRun, stats: MultiHostStats): string {
  return (
    `  ${result.crawler}: ${result.pages}/${result.plannedPages} pages in ${fixed(result.seconds)} s = ` +
    `${fixed(result.pagesPerSecond, 2)} pages/s (bound ${result.boundPagesPerSecond}, ${fixed(result.ratioToBound, 2)}×), ` +
    `${result.duplicates} fetched twice, ${result.missed} missed, min gap ${fixed(stats.gaps.minGapMs, 0)} ms ` +
    `(${stats.gaps.belowDelay} of ${stats.gaps.gaps} gaps < ${DEFAULT_DELAY_MS} ms), ` +
    `CPU ${fixed(result.cpuSeconds)} s (${fixed(100 * result.cpuShare, 0)} % of a core)` +
    (result.costPerMillionPages ? `, $${fixed(result.costPerMillionPages.total, 2)}/M pages` : '')
  );
}

const usd = (value: number | undefined) => (value === undefined ? '–' : `$${fixed(value, 2)}`);

/** The markdown table of a realistic report. */
export function realisticTable(report: RealisticReport): string[] {
  if (report.runs.length === 0) return [];
  const lines = [
    `### Realistic shape: H hosts, default politeness (delay ${report.delayMs} ms), ${report.latencyMs} ms server latency, one core each`,
    '',
    '| crawler | H | pages/host | pages fetched | seconds | pages/s | bound (H/s) | ratio | exact (twice / missed / unplanned) | min gap ms (gaps < delay) | CPU s (share of a core) | $ / M pages: total (lambda, sqs, s3, dynamodb) | Lambda GB-s / page |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of report.runs) {
    const c = r.costPerMillionPages;
    lines.push(
      `| ${r.crawler === 'ours' ? '`crawler crawl` (defaults)' : `Crawlee (maxConcurrency ${crawleeConcurrency(r.hosts)})`} ` +
        `| ${r.hosts} | ${r.plannedPages / r.hosts} | ${r.pages} / ${r.plannedPages} | ${fixed(r.seconds)} ` +
        `| ${fixed(r.pagesPerSecond, 2)} | ${r.boundPagesPerSecond} | **${fixed(r.ratioToBound, 2)}×** ` +
        `| ${r.exact ? 'yes' : 'NO'} (${r.duplicates} / ${r.missed} / ${r.unplanned}) ` +
        `| ${fixed(r.gaps.minGapMs, 0)} (${r.gaps.belowDelay} of ${r.gaps.gaps}` +
        `${r.gaps.belowDelayRobots ? `, ${r.gaps.belowDelayRobots} at robots.txt` : ''}) ` +
        `| ${fixed(r.cpuSeconds)} (${fixed(100 * r.cpuShare, 0)} %) ` +
        `| ${c ? `${usd(c.total)} (${usd(c.lambda)}, ${usd(c.sqs)}, ${usd(c.s3)}, ${usd(c.dynamodb)})` : '–'} ` +
        `| ${r.lambdaGbSecondsPerPage === undefined ? '–' : fixed(r.lambdaGbSecondsPerPage, 3)} |`,
    );
  }
  return lines;
}
