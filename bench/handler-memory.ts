/**
 * The fetch handler's peak memory (`npm run bench -- --only memory`, issue 14): the handler bundled
 * by esbuild as deployed, run once a case in its own process (bench/fetch-memory.ts) against the
 * embedded AWS (bench/local-aws-process.ts) and the bench site's origins. Apart from bench/run.ts,
 * which only calls it and prints its table.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { ESM_REQUIRE_BANNER } from '../cdk/crawler-function.ts';
import { FETCH_EVENT_SOURCE } from '../cdk/limits.ts';
import { ipcChild, mb, median, NODE, ROOT, run } from './processes.ts';

export const MEMORY_BATCH = 64;
export const MEMORY_TARGET_MB = 256;
/** One origin (host) per task of the largest memory case: each is its own visit, all fetching at once. */
export const MEMORY_PORTS = Math.max(MEMORY_BATCH, FETCH_EVENT_SOURCE.batchSize);

export interface MemoryResult {
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

interface MemoryCase {
  label: string;
  tasks: number;
  path: (i: number) => string;
}

/** The fetch handler bundled as deployed, one invocation a case, against the bench site's origins. */
export async function measureHandlerMemory(origins: readonly string[]): Promise<MemoryResult[]> {
  const cases: MemoryCase[] = [
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
  return withBundledHandler(async (measure) => {
    const results: MemoryResult[] = [];
    for (const [n, c] of cases.entries()) {
      const warmup = [0, 1, 2, 3].map((i) => `/p/${4000 + n * 4 + i}`);
      results.push(await measure(c, warmup, origins, {}));
    }
    return results;
  });
}

/** The modes of CRAWLER_CALL_COUNTING, the local runtime's (what Lambda did before issue 28) first. */
const COUNTING_MODES = ['reported', 'estimated', 'off'] as const;

export interface CountingResult {
  mode: (typeof COUNTING_MODES)[number];
  /** The median over the runs of the handler's CPU a page (64 new site pages an invocation). */
  cpuMsPerPage: number;
  runs: number[];
}

/**
 * The fetch handler's CPU a page under each CRAWLER_CALL_COUNTING (issue 28: the counter's cost in
 * Lambda): 64 site pages each on its own origin, and no link they find (maxDepth 0), `runs` times a
 * mode, the modes alternating so that a drift of the machine falls on all of them.
 */
export async function measureCallCounting(
  origins: readonly string[],
  runs: number,
): Promise<CountingResult[]> {
  return withBundledHandler(async (measure) => {
    const cpu = new Map<string, number[]>(COUNTING_MODES.map((mode) => [mode, []]));
    // The same 64 pages every invocation, each on another origin than before (the site serves every
    // page on every origin): the same work for every mode, and new URLs for the crawl.
    const pages: MemoryCase = { label: 'counting', tasks: MEMORY_BATCH, path: (i) => `/p/${200 + i}` };
    const warmup = [0, 1, 2, 3].map((i) => `/p/${4100 + i}`);
    // Past one shift per origin a (page, origin) pair comes again, and the crawl would skip it as seen.
    if (runs * COUNTING_MODES.length >= origins.length)
      throw new Error(`counting: at most ${Math.floor((origins.length - 1) / COUNTING_MODES.length)} runs`);
    let invocation = 0;
    for (let round = 0; round < runs; round++) {
      for (const mode of COUNTING_MODES) {
        invocation++;
        const shifted = [...origins.slice(invocation), ...origins.slice(0, invocation)];
        // maxDepth 0: the visits fetch the 64 tasks and no link they find, so a page is one page.
        const result = await measure(
          pages,
          warmup,
          shifted,
          { CRAWLER_CALL_COUNTING: mode },
          { maxDepth: 0 },
        );
        if (result.failures > 0) throw new Error(`counting run (${mode}): ${result.failures} pages failed`);
        cpu.get(mode)?.push(result.cpuMsPerPage);
      }
    }
    return COUNTING_MODES.map((mode) => {
      const values = cpu.get(mode) ?? [];
      return { mode, cpuMsPerPage: median(values), runs: values };
    });
  });
}

type Measure = (
  c: MemoryCase,
  warmup: string[],
  origins: readonly string[],
  envOverrides: Record<string, string>,
  crawl?: Record<string, unknown>,
) => Promise<MemoryResult>;

/** Builds the bundle and starts the embedded AWS for `body`'s invocations; both end with it. */
async function withBundledHandler<T>(body: (measure: Measure) => Promise<T>): Promise<T> {
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
    return await body(async (c, warmup, origins, envOverrides, crawl) => {
      const paths = Array.from({ length: c.tasks }, (_, i) => c.path(i));
      const caseEnv = { ...env, ...envOverrides };
      const done = await run(
        [
          NODE,
          '--expose-gc',
          bundle,
          JSON.stringify({ env: caseEnv, origins, paths, warmup, ...(crawl ? { crawl } : {}) }),
        ],
        { cpu: 0, timeoutMs: 120_000 },
      );
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
      return {
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
      };
    });
  } finally {
    aws.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
