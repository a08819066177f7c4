/**
 * What `npm run bench` prints (bench/run.ts): its report, and the Markdown tables made from it, one
 * section per part that ran, each with its target met or MISSED. Apart from the run, which only
 * measures and fills the report.
 */
import { type ComponentTime, componentTable } from './cpu-components.ts';
import { type CountingResult, MEMORY_TARGET_MB, type MemoryResult } from './handler-memory.ts';
import { fixed, median } from './processes.ts';
import { READ_TARGET_SECONDS, type ReadCommandRun } from './read-commands.ts';
import { type RealisticReport, realisticTable } from './realistic.ts';
import { type RecrawlReport, recrawlTable } from './recrawl.ts';
import { type RenderReport, renderTable } from './render.ts';
import { type ScaleReport, scaleTable } from './scale-report.ts';
import { STARTUP_TARGET_SECONDS, type StartupRun } from './startup.ts';

/** The crawl's pages/s with main-content extraction on, against off (issue 15). */
const EXTRACTION_RATIO_TARGET = 0.85;
/** Peak RSS of `crawler crawl` on the bench site (issue 14). */
const CRAWL_RSS_TARGET_MB = 250;

export interface CrawlRun {
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

export interface BenchReport {
  machine: { cpus: number; pinned: boolean; node: string };
  site?: { origin: string; plannedTargets: number; htmlPages: number };
  crawls: CrawlRun[];
  micro?: { core: number[]; bare: number[] };
  memory?: MemoryResult[];
  /** The fetch handler's CPU a page under each CRAWLER_CALL_COUNTING (bench/handler-memory.ts). */
  counting?: CountingResult[];
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
}

/** The bench's settings the tables name. */
export interface BenchSettings {
  /** Pages of the bench site. */
  pages: number;
  /** `crawler crawl --concurrency`. */
  concurrency: number;
  /** Crawlee's maxConcurrency. */
  crawleeConcurrency: number;
}

/** Every section of the report that ran, then the bench's own run time. */
export function benchTable(report: BenchReport, settings: BenchSettings): string[] {
  const lines: string[] = [];
  if (report.startup?.length) lines.push(...startupLines(report.startup));
  if (report.reads?.length) lines.push(...readsLines(report.reads));
  lines.push(...crawlLines(report, settings));
  if (report.profile) lines.push(...profileLines(report.profile));
  if (report.micro) lines.push(...microLines(report.micro, settings.pages));
  if (report.memory) lines.push(...memoryLines(report.memory));
  if (report.counting) lines.push(...countingLines(report.counting));
  if (report.content) lines.push(...(lines.length ? [''] : []), report.content);
  if (report.realistic?.runs.length)
    lines.push(...(lines.length ? [''] : []), ...realisticTable(report.realistic));
  if (report.scale) lines.push(...(lines.length ? [''] : []), scaleTable(report.scale));
  if (report.recrawl) lines.push(...(lines.length ? [''] : []), recrawlTable(report.recrawl));
  if (report.render) lines.push(...(lines.length ? [''] : []), renderTable(report.render));
  lines.push(
    '',
    `bench finished in ${fixed(report.seconds ?? Number.NaN, 0)} s (${report.machine.cpus} CPUs, Node ${report.machine.node})`,
  );
  return lines;
}

function startupLines(startup: StartupRun[]): string[] {
  const warm = startup.filter((run) => run.cachedTemplate);
  const wall = median(warm.map((run) => run.wallSeconds));
  return [
    '### Start-up: `crawler crawl` of a one-page site, fresh state dir',
    '',
    '| run | wall s | crawl s (summary.json) | peak RSS MB |',
    '| --- | --- | --- | --- |',
    ...startup.map(
      (run, i) =>
        `| ${i + 1}${run.cachedTemplate ? '' : ' (template not cached)'} | ${fixed(run.wallSeconds)} | ${fixed(run.crawlSeconds)} | ${fixed(run.peakRssMb, 0)} |`,
    ),
    '',
    `one-page crawl, median wall with the template cached: **${fixed(wall)} s** (target ≤ ${STARTUP_TARGET_SECONDS} s: ${wall <= STARTUP_TARGET_SECONDS ? 'met' : 'MISSED'})`,
    '',
  ];
}

function readsLines(reads: ReadCommandRun[]): string[] {
  return [
    '### Read commands on a local crawl of the 500-page bench site (`node bin/crawler.js CMD --state-dir DIR`, wall s)',
    '',
    '| command | median | runs | target |',
    '| --- | --- | --- | --- |',
    ...reads.map((read) => {
      const wall = median(read.wallSeconds);
      return `| \`crawler ${read.command}\` | **${fixed(wall, 2)}** | ${read.wallSeconds.map((s) => fixed(s, 2)).join(', ')} | ≤ ${READ_TARGET_SECONDS} s: ${wall <= READ_TARGET_SECONDS ? 'met' : 'MISSED'} |`;
    }),
    '',
  ];
}

/** The one-host crawls' table and their targets (ours against Crawlee, extraction, memory, cost). */
function crawlLines(report: BenchReport, settings: BenchSettings): string[] {
  const ours = report.crawls.filter((c) => c.crawler === 'ours');
  const oursContentOff = report.crawls.filter((c) => c.crawler === 'ours-content-off');
  const crawlee = report.crawls.filter((c) => c.crawler === 'crawlee');
  if (ours.length + oursContentOff.length + crawlee.length === 0) return [];
  const lines = [
    `### Crawl: ${report.site?.htmlPages} HTML pages (${report.site?.plannedTargets} request targets), one core each`,
    '',
    '| crawler | runs | pages | pages/s median (min–max) | wall s | peak RSS MB | fetched twice | missed | robots-forbidden requests | $ / M pages |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  if (ours.length)
    lines.push(
      crawlRow(`serverless-crawler (\`crawler crawl\`, --concurrency ${settings.concurrency})`, ours),
    );
  if (oursContentOff.length)
    lines.push(crawlRow(`serverless-crawler, --content none (no Markdown extraction)`, oursContentOff));
  if (crawlee.length)
    lines.push(crawlRow(`Crawlee CheerioCrawler (maxConcurrency ${settings.crawleeConcurrency})`, crawlee));
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
  lines.push(...costLines(ours));
  return lines;
}

function crawlRow(name: string, list: CrawlRun[]): string {
  const pps = list.map((c) => c.pagesPerSecond);
  const cost = list.flatMap((c) => (c.costPerMillionPages === undefined ? [] : [c.costPerMillionPages]));
  return (
    `| ${name} | ${list.length} | ${median(list.map((c) => c.pages))} | **${fixed(median(pps))}** (${fixed(Math.min(...pps))}–${fixed(Math.max(...pps))}) ` +
    `| ${fixed(median(list.map((c) => c.wallSeconds)))} | ${fixed(Math.max(...list.map((c) => c.peakRssMb)), 0)} ` +
    `| ${Math.max(...list.map((c) => c.duplicates))} | ${Math.max(...list.map((c) => c.missed))} ` +
    `| ${Math.max(...list.map((c) => c.forbiddenRequests))} | ${cost.length ? `$${fixed(median(cost), 2)}` : '–'} |`
  );
}

/** The counted AWS cost of our last run, and its requests per page. */
function costLines(ours: CrawlRun[]): string[] {
  const aws = ours.at(-1)?.aws as
    | { requestsPerPage?: Record<string, number>; costPerMillionPages?: Record<string, number> }
    | undefined;
  if (!aws?.costPerMillionPages) return [];
  const c = aws.costPerMillionPages;
  return [
    '',
    `Counted cost (last run): $${fixed(c.total ?? Number.NaN, 2)} per million pages ` +
      `(lambda $${fixed(c.lambda ?? Number.NaN, 2)}, sqs $${fixed(c.sqs ?? Number.NaN, 2)}, s3 $${fixed(c.s3 ?? Number.NaN, 2)}, ` +
      `dynamodb $${fixed(c.dynamodb ?? Number.NaN, 2)}); target ≤ $1.00: ${(c.total ?? Infinity) <= 1 ? 'met' : 'MISSED'}`,
    `Requests per page: ${Object.entries(aws.requestsPerPage ?? {})
      .filter(([, n]) => n > 0)
      .map(([op, n]) => `${op} ${n}`)
      .join(', ')}`,
  ];
}

function profileLines(profile: NonNullable<BenchReport['profile']>): string[] {
  const { pages: profiled, pagesPerSecond, components } = profile;
  return [
    '',
    ...componentTable(
      components,
      profiled,
      `\`crawler crawl\` of the bench site, ${profiled} pages at ${fixed(pagesPerSecond)} pages/s under --cpu-prof, one core`,
    ),
  ];
}

function microLines(micro: NonNullable<BenchReport['micro']>, pages: number): string[] {
  const core = median(micro.core);
  const bare = median(micro.bare);
  return [
    '',
    `### Fetch-and-extract core, no AWS (${pages} pages, 8 concurrent, ${micro.core.length} rounds)`,
    '',
    '| loop | pages/s median (min–max) |',
    '| --- | --- |',
    `| HttpFetcher + decode + extractLinks | ${fixed(core, 0)} (${fixed(Math.min(...micro.core), 0)}–${fixed(Math.max(...micro.core), 0)}) |`,
    `| bare undici.request + htmlparser2 | ${fixed(bare, 0)} (${fixed(Math.min(...micro.bare), 0)}–${fixed(Math.max(...micro.bare), 0)}) |`,
    '',
    `core / bare: **${fixed(core / bare, 2)}×** (target ≥ 0.8×: ${core / bare >= 0.8 ? 'met' : 'MISSED'})`,
  ];
}

function countingLines(counting: CountingResult[]): string[] {
  const off = counting.find((c) => c.mode === 'off')?.cpuMsPerPage ?? 0;
  return [
    '',
    '### The call counter in the fetch handler (bundled as deployed, 64 new site pages an invocation, median of the runs)',
    '',
    '| CRAWLER_CALL_COUNTING | CPU ms / page | over `off` | runs (ms / page) |',
    '| --- | --- | --- | --- |',
    ...counting.map(
      (c) =>
        `| ${c.mode} | **${fixed(c.cpuMsPerPage, 2)}** | ${c.mode === 'off' ? '' : `${fixed(c.cpuMsPerPage - off, 2)}`} | ${c.runs.map((r) => fixed(r, 2)).join(', ')} |`,
    ),
  ];
}

function memoryLines(memory: MemoryResult[]): string[] {
  return [
    '',
    '### Fetch handler memory (bundled as deployed, one invocation, default 5 MiB body cap)',
    '',
    '| batch | RSS at start MB | after warm-up MB | peak RSS MB | peak heap MB | seconds | CPU ms / page | note |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...memory.map(
      (m) =>
        `| ${m.label} | ${fixed(m.startRssMb, 0)} | ${fixed(m.baselineRssMb, 0)} | **${fixed(m.peakRssMb, 0)}** | ${fixed(m.peakHeapMb, 0)} | ${fixed(m.seconds, 2)} | ${fixed(m.cpuMsPerPage, 1)} | ${m.error ? `invocation failed: ${m.error}` : m.failures ? `${m.failures} retries` : 'ok'} |`,
    ),
    '',
    `64 concurrent fetches at the default body cap ≤ ${MEMORY_TARGET_MB} MB: ${(memory.at(-1)?.peakRssMb ?? Infinity) <= MEMORY_TARGET_MB ? 'met' : 'MISSED'}`,
  ];
}
