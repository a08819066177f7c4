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
import { describeError, LruSet, SEED_LIMITS } from '../core/base/index.ts';
import { startedEvent } from '../core/batches/index.ts';
import { type CrawlConfig, type CredentialBundle, isDue, seedCount } from '../core/crawl/index.ts';
import { admitLinks, confirmSent, type HostToWake, wakeHosts } from '../core/frontier/index.ts';
import type { CrawlResult } from '../core/results/index.ts';
import { normalizeUrl, type SeedLine, scanSeeds, seedLines } from '../core/urls/index.ts';
import { OUTPUTS } from '../shared/contracts.ts';
import { requiredOutput } from '../shared/required-output.ts';
import { storeCredentials } from './crawl-credentials.ts';
import { type PriorUrl, priorUrls } from './prior-urls.ts';
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

/** A URL to submit: a seed (line 0 for one given as an argument) or a sitemap URL. */
interface Entry {
  line: number;
  text: string;
  isSeed: boolean;
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
  const configBytes = Buffer.byteLength(JSON.stringify(config));
  if (configBytes > MAX_CONFIG_BYTES) {
    throw new ConfigTooLargeError(
      `the crawl config is ${configBytes} bytes with its ${config.seeds.length} seeds; one DynamoDB item holds at most ` +
        `${MAX_CONFIG_BYTES}: give the seeds in a file with --seeds-file FILE (one URL a line, any number)`,
    );
  }
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
  const configs = new CrawlConfigStore(stack.clients.dynamodb, table);
  const argumentSeeds = async function* (): AsyncGenerator<SeedLine> {
    for (const text of config.seeds) yield { line: 0, text };
  };
  const file = options.seedFile;
  let total = config.seeds.length + sitemapUrls.length;
  if (file === undefined) await configs.put(config);
  else {
    const scan = await scanSeeds(
      concat(argumentSeeds(), seedLines(file.lines())),
      { scope: config.scope, maxUrlLength: config.limits.maxUrlLength },
      (seed) => {
        if (seed.line > 0)
          options.onInvalidSeed?.(`--seeds-file ${file.name}: line ${seed.line}: ${seed.reason}`);
      },
    );
    // A crawl of nothing would never start, so never end: refused before anything is stored.
    if (scan.seeds === 0) throw new SeedSourceError(`--seeds-file ${file.name}: no seed URL in it`);
    total = scan.seeds + sitemapUrls.length;
    config = await configs.put(
      { ...config, seedFile: { source: file.name, count: scan.seeds, scopeParts: 0 } },
      scan.scopeKeys,
    );
  }
  // Only the submitter whose config write created the crawl gets here (the write is conditional).
  await publishOnStack(stack, [
    startedEvent(config.crawlId, new Date(), seedCount(config), config.since),
  ]).catch((error: unknown) =>
    // The crawl is stored: failing now would leave it with no seeds sent, never to end.
    options.onWarning?.(
      `warning: crawl ${config.crawlId}: Crawl Started not published: ${describeError(error)}`,
    ),
  );
  const frontier = createFrontierStore(stack.clients.dynamodb, table);
  const chunkSize = Math.max(1, Math.floor(options.chunkSize ?? SEED_LIMITS.chunkUrls));

  // A re-crawl puts every URL of the crawl it follows, each with its capture, before any host is
  // woken: a page fetched early would otherwise admit a link to one of them without its capture.
  const asleep = new Map<string, HostToWake>();
  let due = 0;
  let skippedNotDue = 0;
  if (config.since !== undefined) {
    const blobs = new S3Blobs(stack.clients.s3, requiredOutput(stack.outputs, OUTPUTS.pageBucketName));
    let chunk: PriorUrl[] = [];
    const admitPriors = async (urls: PriorUrl[], round: number) => {
      const now = new Date();
      // Adaptive revisits: a URL not due yet is not fetched; its result says `same`, from the earlier crawl.
      const notDue = new Map(
        urls.flatMap((url) => (config.adaptive && !isDue(url.capture, now) ? [[url.url, url]] : [])),
      );
      const admitted = await admitLinks(
        [
          {
            config,
            parentKey: `prior#${round}`,
            depth: -1,
            // Put before anything else of the crawl: a read of which exist would find none.
            unprobed: true,
            links: urls.map((url) => ({
              url: url.url,
              nofollow: false,
              prior: url,
              ...(notDue.has(url.url)
                ? { skip: { code: 'not-due', reason: `not due before ${url.capture.dueAt} (--adaptive)` } }
                : {}),
            })),
          },
        ],
        { frontier, hosts: frontier, seen: new LruSet(1), now, deferWakes: true },
      );
      for (const host of admitted.asleep) asleep.set(`${host.crawlId}\n${host.host}`, host);
      await results.sendResults(
        admitted.results.map((result) => notDueResult(result, notDue.get(result.url))),
      );
      due += admitted.admitted - admitted.results.length;
      skippedNotDue += admitted.results.filter((result) => result.code === 'not-due').length;
    };
    let rounds = 0;
    for await (const url of priorUrls(blobs, config.since, options.onWarning ?? (() => {}))) {
      chunk.push(url);
      if (chunk.length < chunkSize) continue;
      await admitPriors(chunk, rounds++);
      chunk = [];
    }
    if (chunk.length > 0) await admitPriors(chunk, rounds);
  }

  async function* entries(): AsyncGenerator<Entry> {
    for await (const seed of argumentSeeds()) yield { ...seed, isSeed: true };
    if (file !== undefined) for await (const seed of seedLines(file.lines())) yield { ...seed, isSeed: true };
    for (const text of sitemapUrls) yield { line: 0, text, isSeed: false };
  }

  const summary: SubmitSummary = {
    seeds: seedCount(config),
    tasks: 0,
    skipped: 0,
    invalid: 0,
    duplicates: 0,
  };
  let done = 0;
  let chunks = 0;
  const send = async (chunk: Entry[]) => {
    const valid: string[] = [];
    const invalid: string[] = [];
    for (const entry of chunk) {
      if (normalizeUrl(entry.text, { maxUrlLength: config.limits.maxUrlLength }).ok) valid.push(entry.text);
      // An invalid sitemap entry is not the user's input: it is left out (the sitemap loader reports it).
      else if (entry.isSeed) invalid.push(entry.text);
    }
    // Each chunk admits as a parent of its own: a URL an earlier chunk admitted is then known to the
    // frontier, not this chunk's own admission, so a repeated seed is dropped there, exactly, with no
    // set of every seed in memory.
    const admitted =
      valid.length === 0
        ? { visits: [], results: [], admitted: 0 }
        : await admitLinks(
            [
              {
                config,
                parentKey: `seed#${chunks}`,
                depth: -1,
                links: valid.map((url) => ({ url, nofollow: false })),
              },
            ],
            { frontier, hosts: frontier, seen: new LruSet(1), now: new Date() },
          );
    chunks++;
    // An invalid seed goes to the queue as a task, to end there as an `invalid` result with its reason.
    await tasks.sendVisits(admitted.visits);
    // A seed's visit may wait long in a large crawl's queue: no wake sends it again meanwhile.
    await confirmSent(admitted.visits, frontier);
    await tasks.sendTasks(invalid.map((url) => ({ v: 1 as const, crawlId: config.crawlId, url, depth: 0 })));
    await results.sendResults(admitted.results);
    summary.tasks += admitted.admitted - admitted.results.length + invalid.length;
    summary.skipped += admitted.results.length;
    summary.invalid += invalid.length;
    summary.duplicates += valid.length - admitted.admitted;
    done += chunk.length;
    options.onProgress?.({
      done,
      total,
      tasks: summary.tasks,
      skipped: summary.skipped,
      invalid: summary.invalid,
    });
  };
  let chunk: Entry[] = [];
  for await (const entry of entries()) {
    chunk.push(entry);
    if (chunk.length < chunkSize) continue;
    await send(chunk);
    chunk = [];
  }
  if (chunk.length > 0) await send(chunk);
  if (config.since !== undefined) {
    const visits = await wakeHosts(asleep.values(), { hosts: frontier, now: new Date() });
    await tasks.sendVisits(visits);
    await confirmSent(visits, frontier);
    summary.due = due;
    if (config.adaptive) summary.notDue = skippedNotDue;
  }
  return summary;
}

/**
 * A not-due URL's `skipped` result, as the earlier crawl left it: `same`, pointing at the earlier
 * capture and content record, with its interval and due time unchanged (no request was made).
 */
function notDueResult(result: CrawlResult, url: PriorUrl | undefined): CrawlResult {
  if (url === undefined || result.code !== 'not-due') return result;
  const { capture } = url;
  return {
    ...result,
    change: 'same',
    sha1: capture.sha1,
    warc: capture.warc,
    ...(capture.content === undefined ? {} : { content: capture.content }),
    ...(capture.etag === undefined ? {} : { etag: capture.etag }),
    ...(capture.lastModified === undefined ? {} : { lastModified: capture.lastModified }),
    ...(capture.interval === undefined ? {} : { interval: capture.interval }),
    ...(capture.dueAt === undefined ? {} : { dueAt: capture.dueAt }),
  };
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
