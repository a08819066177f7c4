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
import { CrawlConfigStore } from '../lambdas/adapters/crawl-config-store.ts';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import { describeSeedSource, SeedSourceError, seedSourceLines } from '../lambdas/adapters/seed-source.ts';
import { damageWarning } from '../lambdas/core/archive/index.ts';
import { type CrawlConfig, parseCrawlConfig, seedCount } from '../lambdas/core/crawl/index.ts';
import { diffSnapshots } from '../lambdas/shared/aws-call-counter.ts';
import { crawlCostReport, type LambdaUsage } from '../lambdas/shared/aws-prices.ts';
import { IDS, OUTPUTS, STACK_NAME } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import { SinceError } from '../lambdas/submission/since-crawl.ts';
import { sinceNote, submitCrawl } from '../lambdas/submission/submit-crawl.ts';
import { parseTemplate } from '../local/cfn-template.ts';
import { StateDirError, startLocalAws } from '../local/local-aws.ts';
import { processMeters } from '../local/process-meters.ts';
import { stackTemplate } from '../local/stack-template.ts';
import { resolveStateDir } from '../local/state-dir.ts';
import { write } from './cli-io.ts';
import { newCrawlId } from './crawl-id.ts';
import { CRAWL_USAGE, type CrawlCommandOptions, parseCrawlOptions } from './crawl-options.ts';
import { describeSummary, prepareOutDir, writeCrawlOutput } from './crawl-output.ts';
import { createRenderer, followProgress, longCrawlNotice } from './crawl-progress.ts';
import { localProgressSource } from './crawl-progress-source.ts';
import { type CrawlEnd, waitForCrawl } from './crawl-wait.ts';
import { defineCommand } from './define-command.ts';
import { discoverSitemapUrls } from './sitemap-seeds.ts';
import { UsageError } from './usage-error.ts';

export const crawlCommand = defineCommand({
  usage: CRAWL_USAGE,
  parse: (args) => ({ options: parseCrawlOptions(args) }),
  run: async ({ io, options }) => {
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
    const display = createRenderer(options.progress, options.quiet, process.stderr, crawlId);
    const progress = (line: string) => display.message(line);
    const notice = fresh ? longCrawlNotice(fresh) : undefined;
    if (notice) progress(notice);

    // Ctrl-C once: stop taking work and write what exists; twice: exit at once.
    const interrupt = new AbortController();
    /** Set once the local AWS is up: before, there is nothing to wind down or write. */
    let up = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (!up) {
        progress(`crawl ${crawlId}: ${signal}: stopped before the crawl started`);
        process.exit(130);
      }
      if (interrupt.signal.aborted) {
        progress(`crawl ${crawlId}: ${signal} again: exiting at once`);
        process.exit(130);
      }
      progress(
        `crawl ${crawlId}: ${signal}: stopping; no new request starts, the requests in flight finish and what exists is written (${signal === 'SIGINT' ? 'Ctrl-C' : signal} again to exit at once)`,
      );
      interrupt.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      const sitemapUrls =
        fresh && options.sitemap ? await discoverSitemapUrls(options.sitemap, fresh, progress) : [];
      progress(`crawl ${crawlId}: starting local AWS${options.endpoint ? ` at ${options.endpoint}` : ''}`);
      const startedAt = new Date();
      // Counted cost: handler durations by function (every AWS call is counted by the clients' middleware).
      const lambdaUsage: Record<string, LambdaUsage> = {};
      const aggregateReturned = new Set<() => void>();
      const local = await startLocalAws({
        template: parseTemplate(await stackTemplate()),
        stackName: STACK_NAME,
        ...(options.endpoint
          ? { endpoint: options.endpoint }
          : { stateDir: resolveStateDir(options.stateDir) }),
        ...(options.concurrency ? { concurrencyOverride: { FetchFunction: options.concurrency } } : {}),
        handlerEnvOverrides: { LOG_LEVEL: options.quiet ? 'error' : 'warn' },
        // A local crawl's user sees its latency and its memory: a batch goes as soon as the queue
        // has no more, the handlers share this process, and so do its AWS calls (local/README.md).
        eagerBatches: true,
        inProcessHandlers: true,
        ...(options.endpoint ? {} : { inProcessAws: true }),
        ...(options.quiet ? {} : { onStaleLock: (line: string) => io.stderr.write(`${line}\n`) }),
        onInvocation: (report) => {
          const id = report.functionLogicalId;
          // Completion is confirmed by an aggregate invocation: the wait reads again when one returns.
          if (id === IDS.aggregateFunction) for (const listener of aggregateReturned) listener();
          const fn = local.stack.functions[id];
          const usage = lambdaUsage[id] ?? {
            invocations: 0,
            durationMs: 0,
            memoryMb: fn?.memorySizeMb ?? 0,
            architecture: fn?.architecture ?? 'arm64',
          };
          usage.invocations++;
          usage.durationMs += report.durationMs;
          lambdaUsage[id] = usage;
        },
      }).catch((error: unknown) => {
        throw error instanceof StateDirError ? new UsageError(`--state-dir ${error.message}`) : error;
      });
      up = true;
      // Before the submit: its Crawl Started goes there too.
      if (options.events !== undefined) local.eventBus?.addLogFile(resolve(options.events));
      try {
        const table = requiredOutput(local.outputs, OUTPUTS.frontierTableName);
        const frontier = createFrontierStore(local.clients.dynamodb, table);
        // The crawl's AWS calls: from the submission to the end of the run (not provisioning, not the copy-out).
        const countedFrom = processMeters.counter.snapshot();
        let config: CrawlConfig;
        /** Seeds the crawl was submitted with (a seeds file's included). */
        let seeds: number;
        if (fresh) {
          config = fresh;
          const source = options.seedsFile;
          const submitted = await submitCrawl(local, config, sitemapUrls, {
            ...(options.since === undefined ? {} : { since: options.since }),
            ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
            onWarning: (line: string) => io.stderr.write(`${line}\n`),
            ...(source === undefined
              ? {}
              : {
                  seedFile: {
                    name: describeSeedSource(source),
                    lines: () => seedSourceLines(source, local.clients.s3),
                  },
                  onInvalidSeed: progress,
                  onProgress: (p) => {
                    if (p.total > 500) progress(`crawl ${crawlId}: ${p.done}/${p.total} seeds sent`);
                  },
                }),
          }).catch((error: unknown) => {
            // Before the crawl started (its scope is read first): a mistake to fix, as a missing --file is.
            throw error instanceof SeedSourceError || error instanceof SinceError
              ? new UsageError(error.message)
              : error;
          });
          seeds = submitted.seeds;
          progress(
            `crawl ${crawlId}: ${submitted.tasks} seed tasks sent` +
              (submitted.due === undefined ? '' : `; ${sinceNote(submitted)}`),
          );
        } else {
          if (!(await frontier.readCounters(crawlId))) {
            io.stderr.write(
              `crawler crawl: no crawl ${crawlId} to resume in ${local.stateDir ?? options.endpoint}; \`crawler list\` shows the crawls there\n`,
            );
            return 1;
          }
          config = await new CrawlConfigStore(local.clients.dynamodb, table).get(crawlId);
          seeds = seedCount(config);
          progress(`crawl ${crawlId}: resuming`);
        }
        let end: CrawlEnd = 'interrupted';
        // Results the last run sent and did not finalize (it was killed) first: their pages are then
        // done, and no visit fetches them again.
        const started = !interrupt.signal.aborted;
        if (started) await local.start({ first: [IDS.aggregateFunction] });
        // Wound down in the signal's own turn: the fetch invocations in flight see their deadline now,
        // so no request starts and every visit hands its host back at its next page; then the results
        // they sent are finalized, so the index written below holds every page whose content record
        // is written (one source for both).
        let windingDown: Promise<void> | undefined;
        const windDown = () => {
          windingDown ??= local.windDown({ drain: [IDS.aggregateFunction] });
        };
        if (started) interrupt.signal.addEventListener('abort', windDown, { once: true });
        // Shown until the output is written: after a Ctrl-C, as winding down.
        const ticker = followProgress(localProgressSource(local, crawlId), display, {
          delayMs: config.delayMs,
        });
        let written: Awaited<ReturnType<typeof writeCrawlOutput>>;
        let endedAt: Date;
        let counted: ReturnType<typeof diffSnapshots>;
        try {
          if (!interrupt.signal.aborted)
            end = await waitForCrawl(frontier, crawlId, {
              signal: interrupt.signal,
              wake: (listener) => {
                aggregateReturned.add(listener);
                return () => aggregateReturned.delete(listener);
              },
            });
          if (end === 'interrupted' && started) {
            ticker.windingDown();
            windDown();
            await windingDown;
          }
          endedAt = new Date();
          counted = diffSnapshots(countedFrom, processMeters.counter.snapshot());
          const blobs = new S3Blobs(local.clients.s3, requiredOutput(local.outputs, OUTPUTS.pageBucketName));
          written = await writeCrawlOutput(blobs, crawlId, outDir, {
            seeds: config.seeds, // without any user:pass@ the command line had
            seedCount: seeds,
            startedAt,
            endedAt,
            state: end,
            costReport: (fetched) => crawlCostReport(counted, lambdaUsage, fetched),
            onDamage: (damage) => io.stderr.write(`${damageWarning(damage)}\n`),
            ...(options.markdownDir === undefined ? {} : { markdownDir: resolve(options.markdownDir) }),
          });
        } finally {
          await ticker.stop();
        }
        const { summary, damages } = written;
        await write(io.stdout, `${describeSummary(summary, outDir, { verbose: options.verbose })}\n`);
        if (end === 'interrupted') {
          io.stderr.write(
            `crawl ${crawlId} interrupted; resume it with:\n  ${resumeCommand(crawlId, options)}\n`,
          );
          return 130;
        }
        const refused = nothingCrawled(summary.byOutcome);
        if (refused !== undefined) {
          io.stderr.write(`crawler crawl: no seed could be crawled: ${refused}\n`);
          return 1;
        }
        // Everything else was written; a skipped index part or line still makes the run incomplete.
        return damages.length > 0 ? 1 : 0;
      } finally {
        await local.stop();
      }
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  },
});

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
