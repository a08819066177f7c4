/**
 * `crawler crawl URL...`: the main job. Starts the local AWS (embedded emulators, or --endpoint),
 * provisions the synthesized stack into it, submits the URLs as one crawl, runs the real handlers
 * until THIS crawl is done (cli/crawl-wait.ts: other crawls' messages in the state dir are still
 * processed as they come, but neither hold nor time this one), then writes results.jsonl, warc/ and
 * summary.json.
 *
 * Ctrl-C once: no new messages are taken and no new request starts (the fetch invocations in flight
 * see their deadline arrive: every visit stops at its next page and hands its host back), the results
 * sent are finalized, what exists is written to --out as `interrupted`, and the command that resumes
 * is printed. Ctrl-C twice: exit at once (bin/crawler.js ends this process even while a handler
 * holds its event loop). `--resume ID` goes on with the crawl's stored config and frontier, so a
 * resumed crawl fetches nothing twice that was handed back, and loses nothing.
 */
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { createFrontierStore, type FrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import { damageWarning } from '../lambdas/core/archive/index.ts';
import { type CrawlConfig, parseCrawlConfig } from '../lambdas/core/crawl/index.ts';
import { type CounterSnapshot, diffSnapshots } from '../lambdas/shared/aws-call-counter.ts';
import { crawlCostReport } from '../lambdas/shared/aws-prices.ts';
import { IDS, OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import { processMeters } from '../local/process-meters.ts';
import { resolveStateDir } from '../local/state-dir.ts';
import { type CliIo, write } from './cli-io.ts';
import { type CrawlAws, startCrawlAws } from './crawl-aws.ts';
import { newCrawlId } from './crawl-id.ts';
import { CRAWL_USAGE, type CrawlCommandOptions, parseCrawlOptions } from './crawl-options.ts';
import { type CrawlOutputReport, describeSummary, prepareOutDir, writeCrawlOutput } from './crawl-output.ts';
import { createRenderer, followProgress, longCrawlNotice, type ProgressRenderer } from './crawl-progress.ts';
import { localProgressSource } from './crawl-progress-source.ts';
import { CrawlSignals } from './crawl-signals.ts';
import { type CrawlStart, resumeLocalCrawl, submitLocalCrawl } from './crawl-start.ts';
import { type CrawlEnd, waitForCrawl } from './crawl-wait.ts';
import { defineCommand } from './define-command.ts';
import { discoverSitemapUrls } from './sitemap-seeds.ts';
import { UsageError } from './usage-error.ts';

export const crawlCommand = defineCommand({
  usage: CRAWL_USAGE,
  parse: (args) => ({ options: parseCrawlOptions(args) }),
  run: ({ io, options }) => runCrawl(io, options),
});

/** One run of `crawler crawl`, once its local AWS is up. */
interface CrawlRun {
  io: CliIo;
  options: CrawlCommandOptions;
  crawlId: string;
  outDir: string;
  display: ProgressRenderer;
  progress: (line: string) => void;
  /** Aborted by Ctrl-C (crawl-signals.ts). */
  signal: AbortSignal;
  aws: CrawlAws;
  startedAt: Date;
}

async function runCrawl(io: CliIo, options: CrawlCommandOptions): Promise<number> {
  const crawlId = options.resume ?? newCrawlId();
  const fresh: CrawlConfig | undefined = options.resume
    ? undefined
    : parseCrawlConfig({
        ...options.config,
        crawlId,
        seeds: options.urls,
        createdAt: new Date().toISOString(),
      });
  const outDir = resolve(options.out ?? join('crawl-out', crawlId));
  await prepareOutputs(options, outDir);
  const display = createRenderer(options.progress, options.quiet, process.stderr, crawlId);
  const progress = (line: string) => display.message(line);
  const notice = fresh ? longCrawlNotice(fresh) : undefined;
  if (notice) progress(notice);

  // Ctrl-C once: stop taking work and write what exists; twice: exit at once.
  const signals = new CrawlSignals(crawlId, progress);
  try {
    const sitemapUrls =
      fresh && options.sitemap ? await discoverSitemapUrls(options.sitemap, fresh, progress) : [];
    progress(`crawl ${crawlId}: starting local AWS${options.endpoint ? ` at ${options.endpoint}` : ''}`);
    const startedAt = new Date();
    const aws = await startCrawlAws(options, io);
    signals.markUp();
    // Before the submit: its Crawl Started goes there too.
    if (options.events !== undefined) aws.local.eventBus?.addLogFile(resolve(options.events));
    try {
      const run: CrawlRun = {
        io,
        options,
        crawlId,
        outDir,
        display,
        progress,
        signal: signals.signal,
        aws,
        startedAt,
      };
      return await crawlOnAws(run, fresh, sitemapUrls);
    } finally {
      await aws.local.stop();
    }
  } finally {
    signals.dispose();
  }
}

/**
 * --out (and --markdown-dir) made ready: apart from the embedded AWS's state directory, empty unless
 * --force clears it or --resume goes on in it.
 */
async function prepareOutputs(options: CrawlCommandOptions, outDir: string): Promise<void> {
  if (options.endpoint === undefined) {
    const stateDir = resolve(resolveStateDir(options.stateDir));
    refuseOverlap('--out', outDir, stateDir);
    if (options.markdownDir !== undefined)
      refuseOverlap('--markdown-dir', resolve(options.markdownDir), stateDir);
  }
  await prepareOutDir(outDir, { force: options.force, resume: options.resume !== undefined });
  if (options.markdownDir !== undefined)
    await prepareOutDir(resolve(options.markdownDir), {
      force: options.force,
      resume: options.resume !== undefined,
      flag: '--markdown-dir',
    });
}

/** The crawl on the local AWS: submitted (`fresh`) or resumed, run to its end, written and reported. */
async function crawlOnAws(
  run: CrawlRun,
  fresh: CrawlConfig | undefined,
  sitemapUrls: readonly string[],
): Promise<number> {
  const { local } = run.aws;
  const table = requiredOutput(local.outputs, OUTPUTS.frontierTableName);
  const frontier = createFrontierStore(local.clients.dynamodb, table);
  // The crawl's AWS calls: from the submission to the end of the run (not provisioning, not the copy-out).
  const countedFrom = processMeters.counter.snapshot();
  const context = { io: run.io, options: run.options, crawlId: run.crawlId, local, progress: run.progress };
  const start = fresh
    ? await submitLocalCrawl(context, fresh, sitemapUrls)
    : await resumeLocalCrawl(context, frontier, table);
  if (start === undefined) return 1;
  const { end, written } = await runToEnd(run, frontier, start, countedFrom);
  return report(run, end, written);
}

/**
 * Runs the crawl until it ends or a Ctrl-C winds it down, then writes what exists to --out (the
 * progress shown until it is written).
 */
async function runToEnd(
  { io, options, crawlId, outDir, display, signal, aws, startedAt }: CrawlRun,
  frontier: FrontierStore,
  { config, seeds }: CrawlStart,
  countedFrom: CounterSnapshot,
): Promise<{ end: CrawlEnd; written: CrawlOutputReport }> {
  const { local } = aws;
  let end: CrawlEnd = 'interrupted';
  // Results the last run sent and did not finalize (it was killed) first: their pages are then
  // done, and no visit fetches them again.
  const started = !signal.aborted;
  if (started) await local.start({ first: [IDS.aggregateFunction] });
  // Wound down in the signal's own turn: the fetch invocations in flight see their deadline now,
  // so no request starts and every visit hands its host back at its next page; then the results
  // they sent are finalized, so the index written below holds every page whose content record
  // is written (one source for both).
  let windingDown: Promise<void> | undefined;
  const windDown = () => {
    windingDown ??= local.windDown({ drain: [IDS.aggregateFunction] });
  };
  if (started) signal.addEventListener('abort', windDown, { once: true });
  // Shown until the output is written: after a Ctrl-C, as winding down.
  const ticker = followProgress(localProgressSource(local, crawlId), display, { delayMs: config.delayMs });
  try {
    if (!signal.aborted) end = await waitForCrawl(frontier, crawlId, { signal, wake: aws.onAggregateReturn });
    if (end === 'interrupted' && started) {
      ticker.windingDown();
      windDown();
      await windingDown;
    }
    const endedAt = new Date();
    const counted = diffSnapshots(countedFrom, processMeters.counter.snapshot());
    const blobs = new S3Blobs(local.clients.s3, requiredOutput(local.outputs, OUTPUTS.pageBucketName));
    const written = await writeCrawlOutput(blobs, crawlId, outDir, {
      seeds: config.seeds, // without any user:pass@ the command line had
      seedCount: seeds,
      startedAt,
      endedAt,
      state: end,
      costReport: (fetched) => crawlCostReport(counted, aws.lambdaUsage, fetched),
      onDamage: (damage) => io.stderr.write(`${damageWarning(damage)}\n`),
      ...(options.markdownDir === undefined ? {} : { markdownDir: resolve(options.markdownDir) }),
    });
    return { end, written };
  } finally {
    await ticker.stop();
  }
}

/** The summary on stdout; on stderr, how to resume or why nothing was crawled; the exit code. */
async function report(
  { io, options, crawlId, outDir }: CrawlRun,
  end: CrawlEnd,
  { summary, damages }: CrawlOutputReport,
): Promise<number> {
  await write(io.stdout, `${describeSummary(summary, outDir, { verbose: options.verbose })}\n`);
  if (end === 'interrupted') {
    io.stderr.write(`crawl ${crawlId} interrupted; resume it with:\n  ${resumeCommand(crawlId, options)}\n`);
    return 130;
  }
  const refused = nothingCrawled(summary.byOutcome);
  if (refused !== undefined) {
    io.stderr.write(`crawler crawl: no seed could be crawled: ${refused}\n`);
    return 1;
  }
  // Everything else was written; a skipped index part or line still makes the run incomplete.
  return damages.length > 0 ? 1 : 0;
}

/**
 * Why nothing was crawled, when every URL ended refused before any request (blocked by the address
 * guard, or not a URL): only seeds can end so, since links come from fetched pages.
 */
function nothingCrawled(byOutcome: Record<string, number>): string | undefined {
  const blocked = byOutcome.blocked ?? 0;
  const invalid = byOutcome.invalid ?? 0;
  const total = Object.values(byOutcome).reduce((a, b) => a + b, 0);
  if (total === 0 || blocked + invalid < total) return undefined;
  return [
    ...(blocked > 0
      ? [
          `${blocked} blocked: a private, loopback, link-local or metadata address, which a crawl reaches only with --allow-private`,
        ]
      : []),
    ...(invalid > 0 ? [`${invalid} invalid (results.jsonl says why)`] : []),
  ].join('; ');
}

/**
 * An output directory and the state directory must be apart: --force clears the output directory,
 * and with it the state of every crawl kept there.
 */
function refuseOverlap(flag: '--out' | '--markdown-dir', dir: string, stateDir: string): void {
  const inside = (a: string, b: string) => {
    const path = relative(b, a);
    return path === '' || (path !== '..' && !path.startsWith(`..${sep}`) && !isAbsolute(path));
  };
  if (inside(dir, stateDir) || inside(stateDir, dir)) {
    throw new UsageError(
      `${flag} ${dir} ${dir === stateDir ? 'is' : inside(dir, stateDir) ? 'is inside' : 'holds'} the state directory ${stateDir} (--state-dir, $CRAWLER_STATE_DIR); give ${flag} a directory apart from it`,
    );
  }
}

/** The command line that goes on with the crawl: same AWS, same --out. */
function resumeCommand(crawlId: string, options: CrawlCommandOptions): string {
  return [
    `crawler crawl --resume ${crawlId}`,
    ...(options.out === undefined ? [] : [`--out ${shellWord(options.out)}`]),
    ...(options.stateDir === undefined ? [] : [`--state-dir ${shellWord(options.stateDir)}`]),
    ...(options.endpoint === undefined ? [] : [`--endpoint ${options.endpoint}`]),
    ...(options.concurrency === undefined ? [] : [`--concurrency ${options.concurrency}`]),
  ].join(' ');
}

function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
