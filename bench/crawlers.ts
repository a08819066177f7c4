/**
 * The two crawlers under test, each one run as a child process pinned to CPU 0 with its peak RSS
 * recorded: `crawler crawl` (the real CLI: embedded emulators, provisioned stack, real handlers) and
 * Crawlee's CheerioCrawler (bench/crawlee-run.ts). Shared by bench/run.ts (one host, delay 0) and
 * bench/realistic.ts (many hosts, default politeness).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LONG_COMMAND_NODE_FLAGS } from '../bin/node-flags.js';
import type { CrawleeRunArgs, CrawleeRunResult } from './crawlee-run.ts';
import { mb, NODE, ROOT, RSS_PRELOAD, run } from './processes.ts';

/** What bench reads of `crawler crawl`'s summary.json (docs/output.md). */
export interface CrawlSummary {
  seconds: number;
  byOutcome: Record<string, number>;
  aws?: {
    costPerMillionPages: { lambda: number; sqs: number; s3: number; dynamodb: number; total: number };
    requestsPerPage?: Record<string, number>;
    lambda?: Record<string, { invocations: number; seconds: number; memoryMb: number; gbSeconds: number }>;
  };
}

export interface CrawlerRun {
  /** HTML pages fetched, as the crawler counts them (ours: outcome `fetched`). */
  pages: number;
  /** The crawler's own run time (ours: summary.json `seconds`; Crawlee: `crawler.run()`). */
  seconds: number;
  wallSeconds: number;
  peakRssMb: number;
  /** CPU time the process used (user + system). */
  cpuSeconds: number;
}

/** bench/rss-report.ts's file: peak RSS (bytes) and CPU time (µs). */
async function usage(file: string): Promise<{ peakRssMb: number; cpuSeconds: number }> {
  const [rss, cpu] = (await readFile(file, 'utf8')).split(' ').map(Number);
  return { peakRssMb: mb(rss ?? Number.NaN), cpuSeconds: (cpu ?? Number.NaN) / 1e6 };
}

/**
 * `crawler crawl SEEDS... --allow-private --quiet --out D --state-dir D` plus `args` (the crawl's
 * options; none means every default).
 */
export async function runOurs(
  seeds: readonly string[],
  args: readonly string[],
  timeoutMs: number,
  /** Node's own flags for the crawl's process (bench/cpu-components.ts: `--cpu-prof`). */
  nodeFlags: readonly string[] = [],
): Promise<CrawlerRun & { summary: CrawlSummary }> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-ours-'));
  try {
    const rssFile = join(dir, 'rss');
    const out = join(dir, 'out');
    const done = await run(
      [
        NODE,
        // As the shim (bin/crawler.js) starts the crawl's process.
        ...LONG_COMMAND_NODE_FLAGS,
        ...nodeFlags,
        '--import',
        RSS_PRELOAD,
        join(ROOT, 'bin', 'crawler.ts'),
        'crawl',
        ...seeds,
        '--allow-private',
        ...args,
        '--quiet',
        '--out',
        out,
        '--state-dir',
        join(dir, 'state'),
      ],
      { cpu: 0, env: { BENCH_RSS_FILE: rssFile }, timeoutMs },
    );
    if (done.code !== 0) throw new Error(`crawler crawl failed (${done.code}): ${done.stderr.slice(-2000)}`);
    const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as CrawlSummary;
    return {
      pages: summary.byOutcome.fetched ?? 0,
      seconds: summary.seconds,
      wallSeconds: done.wallSeconds,
      ...(await usage(rssFile)),
      summary,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Crawlee's CheerioCrawler (bench/crawlee-run.ts) with in-memory storage. */
export async function runCrawlee(
  input: CrawleeRunArgs,
  timeoutMs: number,
): Promise<CrawlerRun & { failed: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-crawlee-'));
  try {
    const rssFile = join(dir, 'rss');
    const done = await run(
      [NODE, '--import', RSS_PRELOAD, join(ROOT, 'bench', 'crawlee-run.ts'), JSON.stringify(input)],
      {
        cpu: 0,
        env: { BENCH_RSS_FILE: rssFile, CRAWLEE_STORAGE_DIR: join(dir, 'storage') },
        timeoutMs,
      },
    );
    if (done.code !== 0) throw new Error(`crawlee failed (${done.code}): ${done.stderr.slice(-2000)}`);
    const result = JSON.parse(done.stdout.trim().split('\n').at(-1) ?? '{}') as CrawleeRunResult;
    return {
      pages: result.pages,
      failed: result.failed,
      seconds: result.seconds,
      wallSeconds: done.wallSeconds,
      ...(await usage(rssFile)),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
