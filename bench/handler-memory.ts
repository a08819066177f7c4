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
import { ipcChild, mb, NODE, ROOT, run } from './processes.ts';

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

/** The fetch handler bundled as deployed, one invocation a case, against the bench site's origins. */
export async function measureHandlerMemory(origins: readonly string[]): Promise<MemoryResult[]> {
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
