/**
 * Starts a crawl on a running stack (embedded, endpoint or deployed): stores its config once, admits
 * the seeds through the frontier like any discovered link (scope, dedup, page budget), and sends the
 * seed tasks and any skipped results in batches. A seed that is not a valid URL is still sent, so it
 * ends as an `invalid` result with its reason.
 *
 * Seeds go in chunks (default 500): each chunk is admitted (conditional puts, 16 in flight) and its
 * tasks sent (SendMessageBatch of 10, failed entries resent) before the next, so a file of a million
 * URLs (`--seeds-file`, streamed) needs memory for one chunk and the scope's keys, and progress can
 * be reported. Seeds (and sitemap URLs) that normalize to the same URL are admitted once: the
 * frontier's conditional puts drop the repeats.
 */
import { CrawlConfigStore } from '../adapters/crawl-config-store.ts';
import { createFrontierStore } from '../adapters/frontier-store.ts';
import { SqsResultSender, SqsTaskSender } from '../adapters/queues.ts';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { SeedSourceError } from '../adapters/seed-source.ts';
import { describeError, SEED_LIMITS } from '../core/base/index.ts';
import { startedEvent } from '../core/batches/index.ts';
import { type CrawlConfig, type CredentialBundle, seedCount } from '../core/crawl/index.ts';
import { scanSeeds, seedLines } from '../core/urls/index.ts';
import { OUTPUTS } from '../shared/contracts.ts';
import { requiredOutput } from '../shared/required-output.ts';
import { storeCredentials } from './crawl-credentials.ts';
import { admitPriorUrls, wakePriorHosts } from './prior-admission.ts';
import { argumentSeeds, type Submission, sendSeeds } from './seed-admission.ts';
import { resolveSince } from './since-crawl.ts';
import { publishOnStack } from './stack-events.ts';
import type { StackHandles } from './stack-handles.ts';

/** The crawl config is one DynamoDB item (at most 400 KB): seeds given inline must fit in it. */
export const MAX_CONFIG_BYTES = SEED_LIMITS.inlineConfigBytes;

export class ConfigTooLargeError extends Error {
  override name = 'ConfigTooLargeError';
}

export interface SubmitProgress {
  /** Seed and sitemap URLs handled so far (admitted, skipped or invalid), of `total`. */
  done: number;
  total: number;
  tasks: number;
  skipped: number;
  invalid: number;
}

/** Seeds streamed from a file (`--seeds-file`): read twice, once for the scope, once to admit them. */
export interface SeedFile {
  /** As the user named it (a path or s3://bucket/key), for messages and the config. */
  name: string;
  /** The file's lines, from the first, each time it is called. */
  lines: () => AsyncIterable<string>;
}

export interface SubmitOptions {
  /** URLs admitted and sent per round (default SEED_LIMITS.chunkUrls). */
  chunkSize?: number;
  /** Called after each chunk is sent. */
  onProgress?: (progress: SubmitProgress) => void;
  /** More seeds, after `config.seeds`: streamed, the config holding only their count and scope's size. */
  seedFile?: SeedFile;
  /** A seed line of the file that is not a URL: one line naming it (it still ends as an `invalid` result). */
  onInvalidSeed?: (line: string) => void;
  /** `--since ID|latest`: a re-crawl of that finished crawl (resolved and checked before anything is stored). */
  since?: string;
  /**
   * Headers and cookies for the crawl's requests: stored in an SSM SecureString parameter, the config
   * naming only the parameter (crawl-credentials.ts).
   */
  credentials?: CredentialBundle;
  /** One line about something that went wrong and stopped nothing (an event not published). */
  onWarning?: (line: string) => void;
}

export interface SubmitSummary {
  /** Seeds submitted: every seed line and argument, invalid and repeated ones included. */
  seeds: number;
  /** Seeds to fetch (admitted, their hosts woken) plus invalid seeds (which end as `invalid` results). */
  tasks: number;
  /** Seeds admitted straight into a `skipped` result (out of scope, beyond --max-pages...). */
  skipped: number;
  invalid: number;
  /** Seeds or sitemap URLs dropped because an earlier one normalizes to the same URL. */
  duplicates: number;
  /** A re-crawl: the URLs of the crawl it follows that are due again (admitted with their captures). */
  due?: number;
  /** An adaptive re-crawl: the URLs not due yet, reported `same` from the earlier crawl unfetched. */
  notDue?: number;
}

/**
 * `sitemapUrls` are admitted like seeds but do not widen the scope (it comes from the seeds). With a
 * seed file the seeds are read once for the scope (stored before anything is admitted: the first
 * page fetched judges its links against the whole scope), then again to be admitted chunk by chunk.
 */
export async function submitCrawl(
  stack: StackHandles,
  config: CrawlConfig,
  sitemapUrls: readonly string[] = [],
  options: SubmitOptions = {},
): Promise<SubmitSummary> {
  checkConfigSize(config);
  const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName);
  if (options.since !== undefined) config = { ...config, since: await resolveSince(stack, options.since) };
  if (options.credentials !== undefined) {
    const parameter = await storeCredentials(stack, config.crawlId, options.credentials);
    config = { ...config, credentials: { parameter } };
  }
  const tasks = new SqsTaskSender(stack.clients.sqs, requiredOutput(stack.outputs, OUTPUTS.taskQueueUrl));
  const results = new SqsResultSender(
    stack.clients.sqs,
    requiredOutput(stack.outputs, OUTPUTS.resultsQueueUrl),
  );
  const stored = await storeConfig(
    new CrawlConfigStore(stack.clients.dynamodb, table),
    config,
    sitemapUrls.length,
    options,
  );
  config = stored.config;
  await publishStarted(stack, config, options.onWarning);
  const submission: Submission = {
    config,
    frontier: createFrontierStore(stack.clients.dynamodb, table),
    tasks,
    results,
    chunkSize: Math.max(1, Math.floor(options.chunkSize ?? SEED_LIMITS.chunkUrls)),
  };
  // A re-crawl's earlier URLs go first; their hosts are woken once the seeds are admitted too.
  const priors =
    config.since === undefined
      ? undefined
      : await admitPriorUrls(
          submission,
          config.since,
          new S3Blobs(stack.clients.s3, requiredOutput(stack.outputs, OUTPUTS.pageBucketName)),
          options.onWarning ?? (() => {}),
        );
  const counts = await sendSeeds(submission, options.seedFile, sitemapUrls, (sent, done) =>
    options.onProgress?.({
      done,
      total: stored.total,
      tasks: sent.tasks,
      skipped: sent.skipped,
      invalid: sent.invalid,
    }),
  );
  const summary: SubmitSummary = { seeds: seedCount(config), ...counts };
  if (priors !== undefined) {
    await wakePriorHosts(submission, priors);
    summary.due = priors.due;
    if (config.adaptive) summary.notDue = priors.notDue;
  }
  return summary;
}

function checkConfigSize(config: CrawlConfig): void {
  const configBytes = Buffer.byteLength(JSON.stringify(config));
  if (configBytes > MAX_CONFIG_BYTES) {
    throw new ConfigTooLargeError(
      `the crawl config is ${configBytes} bytes with its ${config.seeds.length} seeds; one DynamoDB item holds at most ` +
        `${MAX_CONFIG_BYTES}: give the seeds in a file with --seeds-file FILE (one URL a line, any number)`,
    );
  }
}

/**
 * Stores the config (conditionally: only the submitter that creates the crawl goes on). With a seed
 * file, its seeds are scanned first for the scope stored with it. Returns the config as stored and
 * the number of URLs to submit (seeds and sitemap URLs).
 */
async function storeConfig(
  configs: CrawlConfigStore,
  config: CrawlConfig,
  sitemapCount: number,
  { seedFile: file, onInvalidSeed }: SubmitOptions,
): Promise<{ config: CrawlConfig; total: number }> {
  if (file === undefined) {
    await configs.put(config);
    return { config, total: config.seeds.length + sitemapCount };
  }
  const scan = await scanSeeds(
    concat(argumentSeeds(config), seedLines(file.lines())),
    { scope: config.scope, maxUrlLength: config.limits.maxUrlLength },
    (seed) => {
      if (seed.line > 0) onInvalidSeed?.(`--seeds-file ${file.name}: line ${seed.line}: ${seed.reason}`);
    },
  );
  // A crawl of nothing would never start, so never end: refused before anything is stored.
  if (scan.seeds === 0) throw new SeedSourceError(`--seeds-file ${file.name}: no seed URL in it`);
  return {
    config: await configs.put(
      { ...config, seedFile: { source: file.name, count: scan.seeds, scopeParts: 0 } },
      scan.scopeKeys,
    ),
    total: scan.seeds + sitemapCount,
  };
}

/** Only the submitter whose config write created the crawl gets here (the write is conditional). */
async function publishStarted(
  stack: StackHandles,
  config: CrawlConfig,
  onWarning: ((line: string) => void) | undefined,
): Promise<void> {
  await publishOnStack(stack, [
    startedEvent(config.crawlId, new Date(), seedCount(config), config.since),
  ]).catch((error: unknown) =>
    // The crawl is stored: failing now would leave it with no seeds sent, never to end.
    onWarning?.(`warning: crawl ${config.crawlId}: Crawl Started not published: ${describeError(error)}`),
  );
}

/** A re-crawl's own count: the earlier URLs due again, and those not due (adaptive). */
export function sinceNote(submitted: { due?: number; notDue?: number }): string {
  return (
    `${submitted.due ?? 0} URLs of the earlier crawl due again` +
    (submitted.notDue ? `, ${submitted.notDue} not due (reported same)` : '')
  );
}

async function* concat<T>(...parts: AsyncIterable<T>[]): AsyncGenerator<T> {
  for (const part of parts) yield* part;
}
