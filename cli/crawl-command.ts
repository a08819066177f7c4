/**
 * `crawler crawl URL...`: the main job. Starts the local AWS (embedded emulators, or --endpoint),
 * provisions the synthesized stack into it, submits the URLs as one crawl, runs the real handlers
 * until every task is finished, then writes results.jsonl, warc/ and summary.json.
 */
import { join, resolve } from 'node:path';
import { STACK_NAME, synthesizeTemplate } from '../cdk/synth.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import { parseCrawlConfig } from '../lambdas/core/crawl-config.ts';
import { awsCallCounter, diffSnapshots } from '../lambdas/shared/aws-call-counter.ts';
import { crawlCostReport, type LambdaUsage } from '../lambdas/shared/aws-prices.ts';
import { parseTemplate } from '../local/cfn-template.ts';
import { type RuntimeStats, startLocalAws } from '../local/local-aws.ts';
import { resolveStateDir } from '../local/state-dir.ts';
import { newCrawlId } from './crawl-id.ts';
import { CRAWL_USAGE, parseCrawlOptions } from './crawl-options.ts';
import { describeSummary, prepareOutDir, writeCrawlOutput } from './crawl-output.ts';
import { damageWarning } from './results-reader.ts';
import { discoverSitemapUrls } from './sitemap-seeds.ts';
import { requiredOutput, submitCrawl } from './submit-crawl.ts';

export async function crawlCommand(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(CRAWL_USAGE);
    return 0;
  }
  const options = parseCrawlOptions(args);
  const crawlId = newCrawlId();
  const config = parseCrawlConfig({
    ...options.config,
    crawlId,
    seeds: options.urls,
    createdAt: new Date().toISOString(),
  });
  const outDir = resolve(options.out ?? join('crawl-out', crawlId));
  await prepareOutDir(outDir, { force: options.force });
  const progress = options.quiet ? () => {} : (line: string) => process.stderr.write(`${line}\n`);

  const sitemapUrls = options.sitemap ? await discoverSitemapUrls(options.sitemap, config, progress) : [];
  progress(`crawl ${crawlId}: starting local AWS${options.endpoint ? ` at ${options.endpoint}` : ''}`);
  const startedAt = new Date();
  // Counted cost: handler durations by function (every AWS call is counted by the clients' middleware).
  const lambdaUsage: Record<string, LambdaUsage> = {};
  const local = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    ...(options.endpoint ? { endpoint: options.endpoint } : { stateDir: resolveStateDir(options.stateDir) }),
    ...(options.concurrency ? { concurrencyOverride: { FetchFunction: options.concurrency } } : {}),
    handlerEnvOverrides: { LOG_LEVEL: 'warn' },
    onInvocation: (report) => {
      const id = report.functionLogicalId;
      const memoryMb = local.stack.functions[id]?.memorySizeMb ?? 0;
      const usage = lambdaUsage[id] ?? { invocations: 0, durationMs: 0, memoryMb };
      usage.invocations++;
      usage.durationMs += report.durationMs;
      lambdaUsage[id] = usage;
    },
  });
  try {
    // The crawl's AWS calls: from the submission to the end of the run (not provisioning, not the copy-out).
    const countedFrom = awsCallCounter.snapshot();
    const submitted = await submitCrawl(local, config, sitemapUrls);
    progress(`crawl ${crawlId}: ${submitted.tasks} seed tasks sent`);
    await local.start();
    const ticker = setInterval(() => progress(`crawl ${crawlId}: ${describeProgress(local.stats())}`), 2000);
    try {
      await local.waitForIdle();
    } finally {
      clearInterval(ticker);
    }
    const endedAt = new Date();
    const counted = diffSnapshots(countedFrom, awsCallCounter.snapshot());

    const blobs = new S3Blobs(local.clients.s3, requiredOutput(local.outputs, 'PageBucketName'));
    const { summary, damages } = await writeCrawlOutput(blobs, crawlId, outDir, {
      seeds: config.seeds, // without any user:pass@ the command line had
      startedAt,
      endedAt,
      costReport: (fetched) => crawlCostReport(counted, lambdaUsage, fetched),
      onDamage: (damage) => process.stderr.write(`${damageWarning(damage)}\n`),
    });
    console.log(describeSummary(summary, outDir, { verbose: options.verbose }));
    // Everything else was written; a skipped index part or line still makes the run incomplete.
    return damages.length > 0 ? 1 : 0;
  } finally {
    await local.stop();
  }
}

function describeProgress(stats: RuntimeStats): string {
  return Object.entries(stats.byFunction)
    .map(
      ([fn, s]) =>
        `${fn} ${s.messagesDeleted} done, ${s.itemFailures} to retry, ${s.invocations} invocations`,
    )
    .join('; ');
}
